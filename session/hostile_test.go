package session_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// Hostile and broken input: ids that are not UUIDs, fork points out of
// range, empty roles, a 10 MB turn, a 100,000-turn session, and data
// corrupted in the store by hand. Injection payloads are in
// TestInjection.

// hostileIDs are session ids that are not canonical UUIDs.
var hostileIDs = []string{
	"",
	" ",
	"not-a-uuid",
	"0190A000-0000-7000-8000-00000000000A", // upper case
	"{0190a000-0000-7000-8000-00000000000a}",
	"urn:uuid:0190a000-0000-7000-8000-00000000000a",
	"0190a0000000700080000000000000 0a",
	"0190a000000070008000000000000000a", // no dashes
	"0190a000-0000-7000-8000-00000000000a ",
	"0190a000-0000-7000-8000-00000000000a\n",
	"0190a000-0000-7000-8000-00000000000a\x00",
	"0190a000-0000-7000-8000-00000000000\xff",
	"../../etc/passwd",
	`"} ; DROP ALL ; INSERT DATA {"`,
	"> ; DROP ALL ; #",
	"?x",
	"$self",
	strings.Repeat("a", 1<<20),
}

// TestHostileIDs: every method that takes an id refuses one that is not a
// canonical UUID with ErrInvalid, before any request.
func TestHostileIDs(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	ops := []struct {
		name string
		call func(id string) error
	}{
		{"load", func(id string) error { _, err := st.Load(ctx, id); return err }},
		{"replay", func(id string) error { _, err := st.Replay(ctx, id); return err }},
		{"info", func(id string) error { _, err := st.Info(ctx, id); return err }},
		{"branches", func(id string) error { _, err := st.Branches(ctx, id); return err }},
		{"tree", func(id string) error { _, err := st.Tree(ctx, id); return err }},
		{"delete", func(id string) error { return st.Delete(ctx, id, session.DeleteOptions{}) }},
		{"detach", func(id string) error { return st.Detach(ctx, id, session.DetachOptions{}) }},
		{"persist", func(id string) error {
			s := session.New("p")
			s.ID = id
			s.Append("user", "x")
			return st.Persist(ctx, s)
		}},
		{"persist with parent", func(id string) error {
			if id == "" {
				id = "-" // "" is no parent: a root, which may keep a fork label
			}
			s := session.New("p")
			s.ParentID, s.Branch = id, "fork-0badc0de"
			s.Append("user", "x")
			return st.Persist(ctx, s)
		}},
		{"fork", func(id string) error {
			s := session.New("p")
			s.ID = id
			_, err := s.Fork(0)
			return err
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			for _, id := range hostileIDs {
				before := ct.requests.Load()
				err := op.call(id)
				if !errors.Is(err, session.ErrInvalid) {
					t.Errorf("%s %q: got %v, want ErrInvalid", op.name, clip(id), err)
				}
				if n := ct.requests.Load() - before; n != 0 {
					t.Errorf("%s %q: %d requests sent, want none", op.name, clip(id), n)
				}
			}
		})
	}
}

// TestHostileForkPoints: fork points and replay bounds out of range.
func TestHostileForkPoints(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	root := persisted(t, st, "forker", 3)

	t.Run("fork in memory", func(t *testing.T) {
		for _, at := range []int{-1, 4, math.MaxInt, math.MinInt, math.MaxInt32 + 1} {
			if f, err := root.Fork(at); !errors.Is(err, session.ErrInvalid) {
				t.Errorf("fork at %d: got %v, %v; want ErrInvalid", at, f, err)
			}
		}
	})
	t.Run("persist a hand-made fork", func(t *testing.T) {
		for _, at := range []int{-1, 4, math.MaxInt, math.MinInt} {
			f := &session.Session{ID: newID(), Principal: "forker", ParentID: root.ID, ForkedAt: at,
				Branch: "fork-0badc0de", Turns: append([]session.Turn(nil), root.Turns...)}
			before := ct.requests.Load()
			if err := st.Persist(ctx, f); !errors.Is(err, session.ErrInvalid) {
				t.Errorf("fork point %d: got %v, want ErrInvalid", at, err)
			}
			if n := ct.requests.Load() - before; n != 0 {
				t.Errorf("fork point %d: %d requests sent, want none", at, n)
			}
		}
	})
	t.Run("a root with a fork point", func(t *testing.T) {
		s := session.New("forker")
		s.Append("user", "x")
		s.ForkedAt = 1
		if err := st.Persist(ctx, s); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("got %v, want ErrInvalid", err)
		}
	})
	t.Run("fork beyond what the parent stored", func(t *testing.T) {
		p := persisted(t, st, "forker", 2)
		appendN(p, 3, "unsaved") // 5 in memory, 2 stored
		f := mustFork(t, p, 4)
		if err := st.Persist(ctx, f); !errors.Is(err, session.ErrConflict) {
			t.Errorf("got %v, want ErrConflict", err)
		}
		if _, err := st.Load(ctx, f.ID); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("the refused fork: got %v, want ErrNotFound", err)
		}
	})
	t.Run("replay bounds", func(t *testing.T) {
		for _, tc := range []struct {
			n    int
			want int
			err  error
		}{
			{-1, 0, session.ErrInvalid},
			{math.MinInt, 0, session.ErrInvalid},
			{0, 0, nil},
			{2, 2, nil},
			{3, 3, nil},
			{4, 3, nil},
			{math.MaxInt, 3, nil},
		} {
			turns, err := st.Replay(ctx, root.ID, session.UpTo(tc.n))
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Errorf("UpTo(%d): got %v, want %v", tc.n, err, tc.err)
				continue
			}
			if len(turns) != tc.want {
				t.Errorf("UpTo(%d): got %d turns, want %d", tc.n, len(turns), tc.want)
			}
		}
	})
}

// TestHostileTurns: turns and sessions Persist must refuse before any
// request.
func TestHostileTurns(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, _ := newStore(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		make func() *session.Session
	}{
		{"empty role", func() *session.Session {
			s := session.New("p")
			s.Append("", "content")
			return s
		}},
		{"empty role after a good turn", func() *session.Session {
			s := session.New("p")
			s.Append("user", "content")
			s.Append("", "content")
			return s
		}},
		{"empty principal", func() *session.Session {
			s := session.New("")
			s.Append("user", "content")
			return s
		}},
		{"turn index out of place", func() *session.Session {
			s := session.New("p")
			s.Append("user", "a")
			s.Append("user", "b")
			s.Turns[1].Index = 7
			return s
		}},
		{"negative turn index", func() *session.Session {
			s := session.New("p")
			s.Append("user", "a")
			s.Turns[0].Index = -1
			return s
		}},
		{"turn of another branch", func() *session.Session {
			s := session.New("p")
			s.Append("user", "a")
			s.Turns[0].Branch = "fork-0badc0de"
			return s
		}},
		{"branch payload", func() *session.Session {
			s := session.New("p")
			s.Branch = `main" ; DROP ALL ; #`
			s.Append("user", "a")
			return s
		}},
		{"turn branch payload", func() *session.Session {
			s := session.New("p")
			s.Append("user", "a")
			s.Turns[0].Branch = "main\n} ; DROP ALL ; #"
			return s
		}},
		{"fork labelled main", func() *session.Session {
			p := session.New("p")
			p.Append("user", "a")
			f := mustFork(t, p, 1)
			f.Branch = session.MainBranch
			return f
		}},
		{"own parent", func() *session.Session {
			s := session.New("p")
			s.ParentID, s.Branch = s.ID, "fork-0badc0de"
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.make()
			before := ct.requests.Load()
			if err := st.Persist(ctx, s); !errors.Is(err, session.ErrInvalid) {
				t.Errorf("got %v, want ErrInvalid", err)
			}
			if n := ct.requests.Load() - before; n != 0 {
				t.Errorf("%d requests sent, want none", n)
			}
		})
	}
	if err := st.Persist(ctx, nil); !errors.Is(err, session.ErrInvalid) {
		t.Errorf("persist nil: got %v, want ErrInvalid", err)
	}
}

// TestHugeTurn stores turns of 1 MB and 10 MB (quotes, backslashes, line
// breaks, NUL, non-ASCII) and loads them back byte for byte, on a Fuseki of
// its own: a request the store is still working on when the client gives
// up goes on blocking the store's one writer.
//
// A turn of 1 MB must work with the client's default settings. For 10 MB,
// Persist must either store it or refuse it as over a documented limit
// (ErrInvalid, before any request), within a minute.
func TestHugeTurn(t *testing.T) {
	fusekitest.Parallel(t)
	srv, err := fusekitest.StartServer(fusekitest.Options{})
	if err != nil {
		t.Fatalf("start a Fuseki: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	ct := &counter{next: &http.Transport{}}
	c := fusekitest.Client(t, kg.Config{Endpoint: srv.Endpoint, HTTPClient: &http.Client{Transport: ct}})
	st := session.NewStore(c)
	piece := "A \"quoted\" \"\"\"long\"\"\" line\\ with } and # and $x\n\r\t\x00 café 🎉 — "
	for _, size := range []int{1 << 20, 10 << 20} {
		t.Run(fmt.Sprintf("%d MiB", size>>20), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			content := strings.Repeat(piece, size/len(piece)+1)[:size]
			for !strings.HasSuffix(content, " ") { // do not cut a character in two
				content = content[:len(content)-1]
			}
			s := session.New("huge")
			s.Append("user", "short question")
			s.Append("assistant", content)
			s.Append("user", "and after it")

			t0 := time.Now()
			n := ct.requests.Load()
			err := st.Persist(ctx, s)
			persisted := time.Since(t0)
			switch {
			case err == nil:
			case errors.Is(err, session.ErrInvalid) && size > 1<<20 && ct.requests.Load() == n:
				t.Logf("a %.1f MB turn is refused before any request: %v", float64(len(content))/1e6, err)
				return
			default:
				t.Fatalf("persist a %.1f MB turn: after %v, %d requests: %v; want it stored, or (over 1 MiB) ErrInvalid before any request",
					float64(len(content))/1e6, persisted.Round(time.Millisecond), ct.requests.Load()-n, err)
			}
			before := ct.bytes.Load()
			t0 = time.Now()
			got, err := st.Load(ctx, s.ID)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			loaded := time.Since(t0)
			sameSession(t, got, s)
			t0 = time.Now()
			turns, err := st.Replay(ctx, s.ID, session.UpTo(2))
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			sameHistory(t, turns, s.Turns[:2])
			t.Logf("a %.1f MB turn: persist %v, load %v (%.1f MB received), replay %v",
				float64(len(content))/1e6, persisted.Round(time.Millisecond), loaded.Round(time.Millisecond),
				float64(ct.bytes.Load()-before)/1e6, time.Since(t0).Round(time.Millisecond))

			// A fork of it shares the huge turn without copying it.
			f := mustFork(t, s, 2)
			f.Append("assistant", "shorter")
			if err := st.Persist(ctx, f); err != nil {
				t.Fatalf("persist a fork: %v", err)
			}
			sameSession(t, mustLoad(t, st, f.ID), f)
		})
	}
}

// TestHundredThousandTurns persists a session of 100,000 turns in batches
// of 5,000, loads it and compares, and logs the timings.
func TestHundredThousandTurns(t *testing.T) {
	fusekitest.Parallel(t)
	const total, batch = 100_000, 5_000
	st, ct, _ := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	s := session.New("long-runner")
	t0 := time.Now()
	var batches []string
	for len(s.Turns) < total {
		for range batch {
			i := len(s.Turns)
			s.Append([]string{"user", "assistant"}[i%2], fmt.Sprintf("turn %d: \"%d\" squared is %d\n", i, i, i*i))
		}
		t1 := time.Now()
		if err := st.Persist(ctx, s); err != nil {
			t.Fatalf("persist turns up to %d: %v", len(s.Turns), err)
		}
		batches = append(batches, time.Since(t1).Round(time.Millisecond).String())
	}
	persist := time.Since(t0)
	before := ct.bytes.Load()
	t0 = time.Now()
	got, err := st.Load(ctx, s.ID)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	load := time.Since(t0)
	sameSession(t, got, s)
	t0 = time.Now()
	head, err := st.Replay(ctx, s.ID, session.UpTo(10))
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	sameHistory(t, head, s.Turns[:10])
	t.Logf("%d turns in batches of %d: persist %v (batch by batch: %s), load %v (%.1f MB received), replay of the first 10 %v",
		total, batch, persist.Round(time.Millisecond), strings.Join(batches, " "), load.Round(time.Millisecond),
		float64(ct.bytes.Load()-before)/1e6, time.Since(t0).Round(time.Millisecond))
}

// corruptFixture is a small tree stored through the library, and copies of
// its sessions loaded before the store was corrupted:
//
//	r  4 turns (0..3)
//	└── f  fork of r at 2, 2 turns of its own (2..3)
//	    └── g  fork of f at 3, 1 turn of its own (3)
type corruptFixture struct {
	c         *kg.Client
	r, f, g   *session.Session // as loaded before the corruption
	principal string
	leaf      string // the end of a raw chain below g, when a case adds one
}

func newCorruptFixture(t *testing.T, st *session.Store, c *kg.Client) *corruptFixture {
	t.Helper()
	fx := &corruptFixture{c: c, principal: "corrupt-" + newID()}
	r := persisted(t, st, fx.principal, 4)
	f := mustFork(t, r, 2)
	appendN(f, 2, "f")
	mustPersist(t, st, f)
	g := mustFork(t, f, 3)
	appendN(g, 1, "g")
	mustPersist(t, st, g)
	fx.r, fx.f, fx.g = mustLoad(t, st, r.ID), mustLoad(t, st, f.ID), mustLoad(t, st, g.ID)
	t.Cleanup(func() { fx.drop(t, r.ID, f.ID, g.ID) })
	return fx
}

// drop removes the graphs of the sessions given, so that corrupt data does
// not reach the other tests of the binary.
func (fx *corruptFixture) drop(tb testing.TB, ids ...string) {
	tb.Helper()
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "DROP SILENT GRAPH %s ;\n", storetest.TermText(tb, storetest.SessionRef(id)))
	}
	if err := fx.c.Update(context.Background(), b.String()); err != nil {
		tb.Errorf("drop the corrupt graphs: %v", err)
	}
}

// replace swaps, in the graph of session id, the object of (s, p) for o;
// a nil o removes the triple.
func (fx *corruptFixture) replace(tb testing.TB, id string, s rdf.IRI, p string, o rdf.Term) {
	tb.Helper()
	g := storetest.TermText(tb, storetest.SessionRef(id))
	u := fmt.Sprintf("DELETE WHERE { GRAPH %s { %s %s ?o } }", g, storetest.TermText(tb, s), storetest.TermText(tb, kg.MustIRI(p)))
	if o != nil {
		var d kg.Data
		d.Add(storetest.SessionRef(id), s, kg.MustIRI(p), o)
		ins, err := d.InsertData()
		if err != nil {
			tb.Fatal(err)
		}
		u += " ;\n" + ins
	}
	if err := fx.c.Update(context.Background(), u); err != nil {
		tb.Fatalf("corrupt %s: %v\n%s", id, err, u)
	}
}

// add adds one triple to the graph of session id.
func (fx *corruptFixture) add(tb testing.TB, id string, s rdf.IRI, p string, o rdf.Term) {
	tb.Helper()
	storetest.RawChange(tb, fx.c, nil, storetest.RawTriple(storetest.SessionRef(id), s, p, o))
}

// typedString is a literal of xsd:string holding v, where another datatype
// belongs.
func typedString(v string) rdf.Term { return kg.String(v) }

// badLiteral is a literal of datatype dt whose lexical form is v.
func badLiteral(v, dt string) rdf.Term { return rdf.NewTypedLiteral(v, kg.MustIRI(dt)) }

const (
	xsdInteger  = "http://www.w3.org/2001/XMLSchema#integer"
	xsdDateTime = "http://www.w3.org/2001/XMLSchema#dateTime"
)

// storeErrors are the errors a read of corrupt data may return: the
// session package's own. A kg error (a query the store refused), a context
// error (a hang) or a panic is a failure.
var storeErrors = []error{
	session.ErrCorrupt, session.ErrForkCycle, session.ErrForkDepth, session.ErrParentMissing,
	session.ErrNotFound, session.ErrConflict,
}

// outcome runs call, turning a panic into a failure, and returns its error.
func outcome(t *testing.T, what string, call func(ctx context.Context) error) (err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s: panic: %v", what, p)
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	t0 := time.Now()
	err = call(ctx)
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%s: no answer within 30 s (%v)", what, err)
	}
	t.Logf("%-28s %-8v %v", what, time.Since(t0).Round(time.Millisecond), err)
	return err
}

// typed reports whether err is nil or one of storeErrors.
func typed(err error) bool {
	if err == nil {
		return true
	}
	for _, e := range storeErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// treeSize counts the nodes under n, failing t (instead of recursing
// forever) when the children links loop.
func treeSize(t *testing.T, n *session.Node) int {
	t.Helper()
	seen := map[*session.Node]bool{}
	var walk func(n *session.Node, depth int) int
	walk = func(n *session.Node, depth int) int {
		if seen[n] || depth > 1000 {
			t.Errorf("Tree: node %s comes twice below the top: its children loop", n.ID)
			return 0
		}
		seen[n] = true
		size := 1
		for _, c := range n.Children {
			size += walk(c, depth+1)
		}
		return size
	}
	return walk(n, 0)
}

// TestCorruptData corrupts a stored tree by hand in one way per case and
// runs every read and a persist over it: each answers within its deadline,
// never panics, and either succeeds or returns one of the session
// package's errors; the reads the case names must return the error it
// names.
func TestCorruptData(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, c := newStore(t)
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, fx *corruptFixture) (extra []string) // returns raw sessions to drop afterwards
		want    map[string]error                                        // "load r", "load f", "load g", "replay …", "persist …": the error wanted
	}{
		{
			name: "cycle",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				// r, the root, gets g as its parent: r ← f ← g ← r.
				r := storetest.SessionRef(fx.r.ID)
				fx.add(t, fx.r.ID, r, ontology.ParentSession, storetest.SessionRef(fx.g.ID))
				fx.add(t, fx.r.ID, r, ontology.ForkedAtIndex, kg.Int(0))
				return nil
			},
			want: map[string]error{"load r": session.ErrForkCycle, "load f": session.ErrForkCycle, "load g": session.ErrForkCycle,
				"replay g": session.ErrForkCycle},
		},
		{
			name: "depth-40 chain",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				var d kg.Data
				parent, ids := fx.g.ID, []string{}
				for range 40 {
					id := newID()
					storetest.AddRawFork(&d, id, parent, 4)
					parent, ids = id, append(ids, id)
				}
				storetest.RawChange(t, fx.c, nil, &d)
				fx.leaf = parent
				return ids
			},
			want: map[string]error{"load leaf": session.ErrForkDepth, "replay leaf": session.ErrForkDepth,
				"persist fork of leaf": session.ErrForkDepth},
		},
		{
			name: "forkedAtIndex beyond the parent",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				// f claims to fork r at 9; r has 4 turns.
				fx.replace(t, fx.f.ID, storetest.SessionRef(fx.f.ID), ontology.ForkedAtIndex, kg.Int(9))
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt, "replay f": session.ErrCorrupt,
				// g forks f at 3 and so inherits [0,3) from r by f's claim, but
				// f's claim is beyond r's 4 turns: the chain is corrupt.
				"load g": session.ErrCorrupt},
		},
		{
			name: "duplicate index",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				g := storetest.SessionRef(fx.r.ID)
				dup := kg.MustIRI(storetest.TurnRef(fx.r.ID, 1).String() + "-again")
				for _, po := range []struct {
					p string
					o rdf.Term
				}{
					{ontology.RDFType, kg.MustIRI(ontology.Turn)}, {ontology.TurnSession, g}, {ontology.Index, kg.Int(1)},
					{ontology.Role, kg.String("user")}, {ontology.Content, kg.String("again")},
					{ontology.Branch, kg.String("main")}, {ontology.Created, kg.DateTime(time.Now())},
				} {
					fx.add(t, fx.r.ID, dup, po.p, po.o)
				}
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt, "load f": session.ErrCorrupt, "load g": session.ErrCorrupt,
				"replay r": session.ErrCorrupt},
		},
		{
			name: "missing branch of a fork",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.SessionRef(fx.f.ID), ontology.Branch, nil)
				return nil
			},
			// A session without trails:branch is a legacy root; a fork
			// without one is corrupt, not a fork on "main".
			want: map[string]error{"load f": session.ErrCorrupt, "persist f": session.ErrConflict},
		},
		{
			name: "missing branch of a turn",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.TurnRef(fx.f.ID, 2), ontology.Branch, nil)
				return nil
			},
			want: map[string]error{"load f": nil, "load g": nil}, // the owner's branch, as for legacy turns
		},
		{
			name: "index that is not a number",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.r.ID, storetest.TurnRef(fx.r.ID, 1), ontology.Index, typedString("abc"))
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt, "load f": session.ErrCorrupt, "load g": session.ErrCorrupt},
		},
		{
			name: "index as a string",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.r.ID, storetest.TurnRef(fx.r.ID, 1), ontology.Index, typedString("1"))
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt, "load f": session.ErrCorrupt, "load g": session.ErrCorrupt},
		},
		{
			name: "index an ill-formed integer",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.r.ID, storetest.TurnRef(fx.r.ID, 1), ontology.Index, badLiteral("one", xsdInteger))
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt, "load f": session.ErrCorrupt},
		},
		{
			name: "index huge",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.r.ID, storetest.TurnRef(fx.r.ID, 1), ontology.Index, badLiteral("99999999999999999999999", xsdInteger))
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt, "load f": session.ErrCorrupt},
		},
		{
			name: "forkedAtIndex as a string",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.SessionRef(fx.f.ID), ontology.ForkedAtIndex, typedString("2"))
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt, "load g": session.ErrCorrupt},
		},
		{
			name: "forkedAtIndex not a number",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.SessionRef(fx.f.ID), ontology.ForkedAtIndex, typedString("two"))
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt, "load g": session.ErrCorrupt, "persist f": session.ErrCorrupt},
		},
		{
			name: "forkedAtIndex negative",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.SessionRef(fx.f.ID), ontology.ForkedAtIndex, kg.Int(-2))
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt, "load g": session.ErrCorrupt},
		},
		{
			name: "forkedAtIndex huge",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.SessionRef(fx.f.ID), ontology.ForkedAtIndex, kg.Int(math.MaxInt))
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt, "load g": session.ErrCorrupt},
		},
		{
			name: "ownTurns as a string",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.r.ID, storetest.SessionRef(fx.r.ID), ontology.OwnTurns, typedString("4"))
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt},
		},
		{
			name: "ownTurns huge",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.r.ID, storetest.SessionRef(fx.r.ID), ontology.OwnTurns, kg.Int(math.MaxInt))
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt, "persist r": session.ErrConflict},
		},
		{
			name: "created not a date-time",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.SessionRef(fx.f.ID), ontology.Created, badLiteral("yesterday", xsdDateTime))
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt},
		},
		{
			name: "turn created as a string",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.TurnRef(fx.f.ID, 2), ontology.Created, typedString("2026-03-01T10:00:00Z"))
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt},
		},
		{
			name: "role an IRI",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.r.ID, storetest.TurnRef(fx.r.ID, 0), ontology.Role, kg.MustIRI("urn:role:user"))
				return nil
			},
			want: map[string]error{"load r": session.ErrCorrupt},
		},
		{
			name: "two parents, one a cycle",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				// g gets a second parent, r; r gets g as its parent.
				fx.add(t, fx.g.ID, storetest.SessionRef(fx.g.ID), ontology.ParentSession, storetest.SessionRef(fx.r.ID))
				fx.add(t, fx.r.ID, storetest.SessionRef(fx.r.ID), ontology.ParentSession, storetest.SessionRef(fx.g.ID))
				return nil
			},
			want: map[string]error{"load g": session.ErrCorrupt, "load r": session.ErrCorrupt},
		},
		{
			name: "turn without content",
			corrupt: func(t *testing.T, fx *corruptFixture) []string {
				fx.replace(t, fx.f.ID, storetest.TurnRef(fx.f.ID, 3), ontology.Content, nil)
				return nil
			},
			want: map[string]error{"load f": session.ErrCorrupt, "load g": nil}, // g does not inherit f's turn 3
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newCorruptFixture(t, st, c)
			extra := tc.corrupt(t, fx)
			t.Cleanup(func() {
				if len(extra) > 0 {
					fx.drop(t, extra...)
				}
			})
			ids := map[string]string{"r": fx.r.ID, "f": fx.f.ID, "g": fx.g.ID}
			if fx.leaf != "" {
				ids["leaf"] = fx.leaf
			}
			got := map[string]error{}
			check := func(what string, err error) {
				t.Helper()
				got[what] = err
				if !typed(err) {
					t.Errorf("%s: got %v, want nil or an error of the session package", what, err)
				}
			}
			for _, name := range []string{"r", "f", "g", "leaf"} {
				id, ok := ids[name]
				if !ok {
					continue
				}
				check("load "+name, outcome(t, "load "+name, func(ctx context.Context) error {
					s, err := st.Load(ctx, id)
					if err == nil {
						for i, turn := range s.Turns {
							if turn.Index != i {
								t.Errorf("load %s: turn %d has index %d", name, i, turn.Index)
							}
						}
					}
					return err
				}))
				check("replay "+name, outcome(t, "replay "+name, func(ctx context.Context) error {
					_, err := st.Replay(ctx, id, session.UpTo(3))
					return err
				}))
				check("info "+name, outcome(t, "info "+name, func(ctx context.Context) error {
					_, err := st.Info(ctx, id)
					return err
				}))
				check("branches "+name, outcome(t, "branches "+name, func(ctx context.Context) error {
					_, err := st.Branches(ctx, id)
					return err
				}))
				check("tree "+name, outcome(t, "tree "+name, func(ctx context.Context) error {
					n, err := st.Tree(ctx, id)
					if err == nil {
						treeSize(t, n)
					}
					return err
				}))
			}
			check("list", outcome(t, "list", func(ctx context.Context) error {
				_, err := st.List(ctx, session.ByPrincipal(fx.principal))
				return err
			}))
			check("forest", outcome(t, "forest", func(ctx context.Context) error {
				trees, err := admin.New(c).Forest(ctx)
				for _, n := range trees {
					treeSize(t, n)
				}
				return err
			}))
			// Persist copies loaded before the corruption, each with a
			// turn more.
			for name, s := range map[string]*session.Session{"r": fx.r, "f": fx.f, "g": fx.g} {
				cp := *s
				cp.Turns = append([]session.Turn(nil), s.Turns...)
				cp.Append("user", "after the corruption")
				check("persist "+name, outcome(t, "persist "+name, func(ctx context.Context) error { return st.Persist(ctx, &cp) }))
			}
			if fx.leaf != "" {
				check("persist fork of leaf", outcome(t, "persist fork of leaf", func(ctx context.Context) error {
					f := &session.Session{ID: newID(), Principal: "raw", ParentID: fx.leaf, ForkedAt: 0, Branch: "fork-0badc0de"}
					f.Append("user", "too deep")
					return st.Persist(ctx, f)
				}))
			}
			for what, want := range tc.want {
				err, ran := got[what]
				if !ran {
					t.Fatalf("the case names %q, which did not run", what)
				}
				if !errors.Is(err, want) || (want == nil && err != nil) {
					t.Errorf("%s: got %v, want %v", what, err, want)
				}
			}
		})
	}
}

// injectionPayloads are strings that would change a query's meaning if a
// value were pasted into SPARQL text: closing a string (each quote form,
// or "\u0022", which SPARQL decodes before parsing) or an IRI, a line break
// that ends a string or starts a comment, variables and parameters.
var injectionPayloads = []string{
	`"} ; DROP ALL ; INSERT DATA {"`,
	`'} ; DROP ALL ; INSERT DATA {'`,
	`"""} ; DROP ALL ; INSERT DATA {"""`,
	`'''} ; DROP ALL ; INSERT DATA {'''`,
	`\u0022} ; DROP ALL ; INSERT DATA {\u0022`,
	`\U00000022 } ; DROP ALL ; #`,
	`\\u0022 \\\u0022`,
	"x\" .\n# a comment\n} ; DROP ALL ; INSERT DATA { <urn:a> <urn:b> \"",
	"x\n} ; DROP ALL ; #",
	"x\r\n} ; DROP ALL ; #",
	"\n#",
	"# } ; DROP ALL",
	`>`,
	`<`,
	`<urn:evil>`,
	`> } ; DROP ALL ; INSERT DATA { <urn:a> <urn:b> <urn:c`,
	`"`, `'`, `\`, `\"`, `""`, `"""`,
	`$`, `$principal`, `$s`, `$self`, `?x`, `?s`, `{`, `}`, `;`,
	`") } UNION { ?s ?p ?o } #`,
	`"^^<http://www.w3.org/2001/XMLSchema#integer>`,
	`"@en`,
	"nul \x00 inside",
	"\u2028\u2029\u0085 line separators",
}

// TestInjection stores every payload as principal, role and content of
// roots and forks, and uses it as a list and scope filter, as an id and as a
// branch label. Each is stored as data and read back byte for byte, or
// refused with ErrInvalid before any request; the triples outside the
// test's own sessions are the same before and after.
func TestInjection(t *testing.T) {
	fusekitest.Parallel(t)
	st, ct, c := newStore(t)
	ctx := context.Background()

	// Everything the test writes, made in memory first, so that the triples
	// outside it can be counted before anything is stored.
	type stored struct {
		s       *session.Session
		payload string
	}
	var all []stored
	for _, p := range injectionPayloads {
		s := session.New(p)
		s.Append(p, p)
		s.Append("user", "the payload as content: "+p)
		all = append(all, stored{s, p})
		f := mustFork(t, s, 1)
		f.Principal = "forker " + p
		f.Append(p, p)
		all = append(all, stored{f, p})
	}
	var mine []*session.Session
	for _, x := range all {
		mine = append(mine, x.s)
	}
	// Bystanders: a session and a fork (with its PROV record) that are not
	// the test's, and a graph that is no session's.
	bystander := persisted(t, st, "bystander", 3)
	by := mustFork(t, bystander, 2)
	appendN(by, 1, "bystander fork")
	mustPersist(t, st, by)
	canary := canaryGraph(t, c)
	outside := outsideCounter(t, c, mine)
	before := outside()

	refused, kept := 0, 0
	for _, x := range all {
		err := st.Persist(ctx, x.s)
		if strings.ContainsRune(x.s.Principal, 0) {
			// A principal with NUL is refused (Session.validate).
			if !errors.Is(err, session.ErrInvalid) {
				t.Errorf("principal %q: got %v, want ErrInvalid", x.s.Principal, err)
			}
			refused++
			continue
		}
		if x.s.ParentID != "" && strings.ContainsRune(x.payload, 0) {
			// Its parent was refused.
			if !errors.Is(err, session.ErrParentMissing) {
				t.Errorf("fork of a refused parent: got %v, want ErrParentMissing", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("payload %q: persist: %v", x.payload, err)
			continue
		}
		kept++
		got, err := st.Load(ctx, x.s.ID)
		if err != nil {
			t.Errorf("payload %q: load: %v", x.payload, err)
			continue
		}
		if got.Principal != x.s.Principal {
			t.Errorf("principal: got %q, want %q", got.Principal, x.s.Principal)
		}
		sameHistory(t, got.Turns, x.s.Turns)

		list, err := st.List(ctx, session.ByPrincipal(x.s.Principal))
		if err != nil {
			t.Errorf("payload %q: list by principal: %v", x.payload, err)
			continue
		}
		found := 0
		for _, in := range list {
			if in.Principal != x.s.Principal {
				t.Errorf("list by principal %q: listed %s of %q", x.s.Principal, in.ID, in.Principal)
			}
			if in.ID == x.s.ID {
				found++
			}
		}
		if found != 1 {
			t.Errorf("list by principal %q: %s listed %d times, want once", x.s.Principal, x.s.ID, found)
		}
		scoped := session.NewStore(c, session.ForPrincipal(x.s.Principal))
		if _, err := scoped.Load(ctx, x.s.ID); err != nil {
			t.Errorf("load in a store scoped to %q: %v", x.s.Principal, err)
		}
		if list, err := scoped.List(ctx); err != nil || len(list) == 0 {
			t.Errorf("list in a store scoped to %q: got %d sessions, %v", x.s.Principal, len(list), err)
		}
	}

	// As ids and branch labels the payloads are refused before any request.
	for _, p := range injectionPayloads {
		n := ct.requests.Load()
		if _, err := st.Load(ctx, p); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("load %q: got %v, want ErrInvalid", p, err)
		}
		if _, err := st.Branches(ctx, p); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("branches %q: got %v, want ErrInvalid", p, err)
		}
		if err := st.Delete(ctx, p, session.DeleteOptions{}); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("delete %q: got %v, want ErrInvalid", p, err)
		}
		s := session.New("p")
		s.Branch = p
		s.Append("user", "x")
		if err := st.Persist(ctx, s); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("branch %q: got %v, want ErrInvalid", p, err)
		}
		s = session.New("p")
		s.Append("user", "x")
		s.Turns[0].Branch = p
		if err := st.Persist(ctx, s); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("turn branch %q: got %v, want ErrInvalid", p, err)
		}
		if got := ct.requests.Load() - n; got != 0 {
			t.Errorf("payload %q as an id or branch: %d requests sent, want none", p, got)
		}
	}

	after := outside()
	if after != before {
		t.Errorf("triples outside the test's sessions: got %d after, want %d as before", after, before)
	}
	if ok, err := c.Ask(ctx, "ASK { GRAPH "+storetest.TermText(t, canary)+" { ?s ?p ?o } }"); err != nil || !ok {
		t.Errorf("the canary graph is gone (%v, %v)", ok, err)
	}
	sameSession(t, mustLoad(t, st, by.ID), by)
	t.Logf("%d payloads as principal, role and content of %d sessions: %d stored and read back, %d refused (NUL in a principal); "+
		"as id and branch: all refused; %d triples outside the test's sessions before and after",
		len(injectionPayloads), len(all), kept, refused, after)
}

// outsideCounter returns a function that counts the triples of the dataset
// that do not belong to the sessions given: not in their graphs, and not
// their PROV records (subjects the session, its fork activity or the agent
// of its principal, in the PROV graph). It counts by graph and by PROV
// subject, so that it stays cheap on a large dataset.
func outsideCounter(tb testing.TB, c *kg.Client, mine []*session.Session) func() int {
	tb.Helper()
	graphs, subjects := map[string]bool{}, map[string]bool{}
	for _, s := range mine {
		graphs[ontology.SessionIRI(s.ID)] = true
		subjects[ontology.SessionIRI(s.ID)] = true
		subjects[ontology.ActivityIRI("fork", s.ID)] = true
		subjects[ontology.AgentIRI(s.Principal)] = true
	}
	count := func(q, key string, skip map[string]bool) int {
		tb.Helper()
		res, err := c.Select(context.Background(), q)
		if err != nil {
			tb.Fatalf("count: %v", err)
		}
		total := 0
		for _, row := range res.Solutions {
			if skip[row.String(key)] {
				continue
			}
			n, err := row.Int("n")
			if err != nil {
				tb.Fatal(err)
			}
			total += n
		}
		return total
	}
	prov := storetest.TermText(tb, kg.MustIRI(ontology.ProvGraph))
	return func() int {
		tb.Helper()
		all := count("SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g", "g", graphs)
		provAll := count("SELECT (COUNT(*) AS ?n) WHERE { GRAPH "+prov+" { ?s ?p ?o } }", "", nil)
		provOthers := count("SELECT ?s (COUNT(*) AS ?n) WHERE { GRAPH "+prov+" { ?s ?p ?o } } GROUP BY ?s", "s", subjects)
		return all - provAll + provOthers
	}
}

// canaryGraph stores a graph of one triple that no test touches; a DROP ALL
// or CLEAR ALL that got through would remove it.
func canaryGraph(tb testing.TB, c *kg.Client) rdf.IRI {
	tb.Helper()
	g := kg.MustIRI("urn:trails-test:canary:" + newID())
	var d kg.Data
	d.Add(g, g, kg.MustIRI("urn:trails-test:says"), kg.String("still here"))
	u, err := d.InsertData()
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Update(context.Background(), u); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Update(context.Background(), "DROP SILENT GRAPH "+storetest.TermText(tb, g)) })
	return g
}
