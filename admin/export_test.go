package admin_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/storetest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// The golden files of testdata/export are rewritten with -update. The flag
// is defined here unless another test file of the package defines it.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files under testdata")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// hostile is turn content that breaks naive serializers.
var hostile = []string{
	`He said "hi" and left.`,
	"line one\nline two\r\nline three\r",
	"tab\there, NUL \x00 here, bell \x07, ESC \x1b, DEL \x7f, C1 \u0085, LS \u2028 PS \u2029",
	"emoji 🎉🧪, café, 日本語, RTL \u202e",
	`triple quotes """ inside, ''' too, and a trailing quote"`,
	`backslash \ and a fake escape \n and \u0041 and \"`,
	"<tag> & 'apos' {braces} |pipe| ^^caret `tick` ; , .",
	"",
	"# not a comment . <http://not/an/iri> _:notblank GRAPH {",
	strings.Repeat("long ", 2000) + "end",
}

// varied is a dataset built through the library: roots, forks, a fork of a
// fork, a fork at 0, a detached fork, an empty root, a deleted fork and a
// deleted root (whose PROV records stay).
type varied struct {
	live    []string // ids of the stored sessions
	deleted []string // ids of the deleted sessions
	a, b, c string   // root, its fork, the fork's fork
}

func buildVaried(tb testing.TB, st *store) varied {
	tb.Helper()
	ctx := context.Background()
	var v varied
	roles := []string{"user", "assistant", "tool \"x\"\t", "system"}
	a := session.New("agent \"7\" é/ü ?#%")
	for i, h := range hostile {
		a.Append(roles[i%len(roles)], h)
	}
	storetest.MustPersist(tb, st, a)

	b := storetest.MustFork(tb, a, 3)
	b.Append("assistant", "b's own \"answer\"\x00")
	b.Append("user", hostile[4])
	storetest.MustPersist(tb, st, b)

	c := storetest.MustFork(tb, b, 4) // fork of a fork: a [0,3) b [3,4) c [4,…)
	c.Principal = "someone else"
	c.Append("assistant", "c\tc\nc")
	storetest.MustPersist(tb, st, c)

	f0 := storetest.MustFork(tb, a, 0)
	f0.Append("user", "from scratch 🎉")
	storetest.MustPersist(tb, st, f0)

	d := storetest.MustFork(tb, a, 5)
	d.Append("assistant", "to be detached")
	storetest.MustPersist(tb, st, d)
	if err := st.Detach(ctx, d.ID, session.DetachOptions{By: "the detacher"}); err != nil {
		tb.Fatalf("detach: %v", err)
	}

	e := storetest.Persisted(tb, st, "eve", 3)
	g := storetest.MustFork(tb, e, 1)
	storetest.AppendN(g, 2, "doomed")
	storetest.MustPersist(tb, st, g)
	if err := st.Delete(ctx, g.ID, session.DeleteOptions{By: "the deleter"}); err != nil {
		tb.Fatalf("delete fork: %v", err)
	}
	h := storetest.Persisted(tb, st, "henry", 2)
	if err := st.Delete(ctx, h.ID, session.DeleteOptions{}); err != nil {
		tb.Fatalf("delete root: %v", err)
	}

	empty := session.New("nobody")
	storetest.MustPersist(tb, st, empty)

	v.live = []string{a.ID, b.ID, c.ID, f0.ID, d.ID, e.ID, empty.ID}
	v.deleted = []string{g.ID, h.ID}
	v.a, v.b, v.c = a.ID, b.ID, c.ID
	return v
}

// loadAll loads every session of ids.
func loadAll(tb testing.TB, st *store, ids []string) map[string]*session.Session {
	tb.Helper()
	out := make(map[string]*session.Session, len(ids))
	for _, id := range ids {
		out[id] = storetest.MustLoad(tb, st, id)
	}
	return out
}

func mustExport(tb testing.TB, st *store, f admin.Format, ids ...string) ([]byte, admin.ExportStats) {
	tb.Helper()
	var buf bytes.Buffer
	stats, err := st.Export(context.Background(), &buf, f, ids...)
	if err != nil {
		tb.Fatalf("export %s %v: %v", f, ids, err)
	}
	return buf.Bytes(), stats
}

func mustImport(tb testing.TB, st *store, data []byte, f admin.Format) admin.ImportStats {
	tb.Helper()
	stats, err := st.Import(context.Background(), bytes.NewReader(data), f, nil)
	if err != nil {
		tb.Fatalf("import %s: %v", f, err)
	}
	return stats
}

// snapshot returns the store's session and PROV quads as sorted N-Quads
// lines.
func snapshot(tb testing.TB, st *store) []string {
	tb.Helper()
	nq, _ := mustExport(tb, st, admin.NQuads)
	lines := strings.Split(strings.TrimSuffix(string(nq), "\n"), "\n")
	if len(nq) == 0 {
		lines = nil
	}
	slices.Sort(lines)
	return lines
}

// sameInfos fails tb unless the stored descriptions of ids are as want.
func sameInfos(tb testing.TB, st *store, want map[string]session.Info) {
	tb.Helper()
	for id, w := range want {
		got, err := st.Info(context.Background(), id)
		if err != nil {
			tb.Fatalf("info %s: %v", id, err)
		}
		if got.ID != w.ID || got.Principal != w.Principal || got.ParentID != w.ParentID || got.Branch != w.Branch ||
			got.ForkedAt != w.ForkedAt || got.OwnTurns != w.OwnTurns || got.Turns != w.Turns || !got.Created.Equal(w.Created) {
			tb.Fatalf("info %s: got %+v, want %+v", id, got, w)
		}
	}
}

// TestExportImportRoundTrip is the property the backup exists for: export
// a varied dataset, import it into an empty one, and every session loads
// as before, the PROV records and every other quad included.
func TestExportImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := clustertest.Empty(t)
	st := openStore(t, c)
	v := buildVaried(t, st)
	want := loadAll(t, st, v.live)
	infos := make(map[string]session.Info)
	for _, id := range v.live {
		in, err := st.Info(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		infos[id] = in
	}
	wantProv := storetest.CountQuads(t, c, ontology.ProvGraph)
	wantAll := snapshot(t, st)
	exports := make(map[admin.Format][]byte)
	for _, f := range []admin.Format{admin.NQuads, admin.TriG} {
		data, stats := mustExport(t, st, f)
		if stats.Sessions != len(v.live) || stats.Quads != len(wantAll) {
			t.Fatalf("%s: got %+v, want %d sessions and %d quads", f, stats, len(v.live), len(wantAll))
		}
		exports[f] = data
	}

	for _, f := range []admin.Format{admin.NQuads, admin.TriG} {
		t.Run(string(f), func(t *testing.T) {
			c := clustertest.Empty(t)
			st := openStore(t, c)
			var calls [][2]int
			stats, err := st.Import(ctx, bytes.NewReader(exports[f]), f, func(done, total int) {
				calls = append(calls, [2]int{done, total})
			})
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			if stats.Sessions != len(v.live) || stats.Quads != len(wantAll) {
				t.Fatalf("got %+v, want %d sessions and %d quads", stats, len(v.live), len(wantAll))
			}
			if len(calls) == 0 || calls[len(calls)-1] != [2]int{len(wantAll), len(wantAll)} {
				t.Fatalf("progress: got %v, want it to end at %d of %d", calls, len(wantAll), len(wantAll))
			}
			for _, id := range v.live {
				storetest.SameSession(t, storetest.MustLoad(t, st, id), want[id])
			}
			sameInfos(t, st, infos)
			for _, id := range v.deleted {
				if _, err := st.Load(ctx, id); !errors.Is(err, session.ErrNotFound) {
					t.Fatalf("load deleted %s: got %v, want ErrNotFound", id, err)
				}
			}
			if got := storetest.CountQuads(t, c, ontology.ProvGraph); got != wantProv {
				t.Fatalf("PROV triples: got %d, want %d", got, wantProv)
			}
			if got := snapshot(t, st); !slices.Equal(got, wantAll) {
				t.Fatalf("the imported store differs: got %d quads, want %d\n%s", len(got), len(wantAll), firstDiff(got, wantAll))
			}
		})
	}
}

func lines(b []byte) []string { return strings.Split(string(b), "\n") }

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want []string) string {
	for i := 0; i < len(got) || i < len(want); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("line %d:\n got %q\nwant %q", i+1, g, w)
		}
	}
	return "no difference"
}

// TestExportTree checks that an export of one session holds its ancestors,
// itself and its descendants, and of the rest only PROV records about them.
func TestExportTree(t *testing.T) {
	ctx := context.Background()
	c := clustertest.Empty(t)
	st := openStore(t, c)
	a := storetest.Persisted(t, st, "alice", 4)
	b := storetest.MustFork(t, a, 2)
	storetest.AppendN(b, 2, "b")
	storetest.MustPersist(t, st, b)
	cc := storetest.MustFork(t, b, 3)
	storetest.AppendN(cc, 1, "c")
	storetest.MustPersist(t, st, cc)
	dd := storetest.MustFork(t, cc, 4) // a fork of the fork of the fork
	storetest.AppendN(dd, 1, "d")
	storetest.MustPersist(t, st, dd)
	sib := storetest.MustFork(t, a, 1) // a's other fork: not in b's tree
	storetest.AppendN(sib, 1, "sibling")
	storetest.MustPersist(t, st, sib)
	other := storetest.Persisted(t, st, "oscar", 2) // another tree altogether
	otherFork := storetest.MustFork(t, other, 1)
	storetest.AppendN(otherFork, 1, "of")
	storetest.MustPersist(t, st, otherFork)

	tree := []string{a.ID, b.ID, cc.ID, dd.ID}
	want := loadAll(t, st, tree)
	data, stats := mustExport(t, st, admin.NQuads, b.ID)
	if stats.Sessions != len(tree) {
		t.Fatalf("got %d sessions, want %d", stats.Sessions, len(tree))
	}
	wantTurns := 4 + 2 + 1 + 1 // each session's own turns
	if stats.Turns != wantTurns {
		t.Fatalf("got %d turns, want %d", stats.Turns, wantTurns)
	}

	inTree := make(map[string]bool)
	for _, id := range tree {
		inTree[ontology.SessionIRI(id)] = true
	}
	quads := parseNQuads(t, data)
	if len(quads) != stats.Quads {
		t.Fatalf("got %d quads, the stats say %d", len(quads), stats.Quads)
	}
	graphs := make(map[string]bool)
	activities := make(map[string]bool) // activities of the PROV records kept
	for _, q := range quads {
		graphs[q.Ctx.String()] = true
		for _, term := range []rdf.Term{q.Subj, q.Obj} {
			s := term.String()
			if s == ontology.SessionIRI(other.ID) || s == ontology.SessionIRI(otherFork.ID) {
				t.Fatalf("the export mentions the other tree: %s", q.Serialize(rdf.NQuads))
			}
		}
		if q.Ctx.String() == ontology.ProvGraph && strings.HasPrefix(q.Subj.String(), ontology.ActivityBase) {
			activities[q.Subj.String()] = true
		}
	}
	for g := range graphs {
		if g != ontology.ProvGraph && !inTree[g] {
			t.Fatalf("the export holds graph <%s>, outside the tree", g)
		}
	}
	for g := range inTree {
		if !graphs[g] {
			t.Fatalf("the export lacks graph <%s>", g)
		}
	}
	for _, q := range quads {
		if q.Ctx.String() != ontology.ProvGraph {
			continue
		}
		s, o := q.Subj.String(), q.Obj.String()
		agentOfKept := strings.HasPrefix(s, ontology.AgentBase)
		if !inTree[s] && !inTree[o] && !activities[s] && !agentOfKept {
			t.Fatalf("a PROV quad about none of the tree: %s", q.Serialize(rdf.NQuads))
		}
	}
	// Each fork of the tree comes with its PROV record.
	for _, id := range tree[1:] {
		act := ontology.ActivityIRI("fork", id)
		if !activities[act] {
			t.Fatalf("the fork activity of %s is missing", id)
		}
	}

	// The tree alone loads in an empty store.
	c = clustertest.Empty(t)
	st = openStore(t, c)
	mustImport(t, st, data, admin.NQuads)
	for _, id := range tree {
		storetest.SameSession(t, storetest.MustLoad(t, st, id), want[id])
	}
	for _, id := range []string{sib.ID, other.ID, otherFork.ID} {
		if _, err := st.Info(ctx, id); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("info %s: got %v, want ErrNotFound", id, err)
		}
	}
}

// parseNQuads reads N-Quads with knakk/rdf's decoder, a second opinion on
// what Export writes.
func parseNQuads(tb testing.TB, data []byte) []rdf.Quad {
	tb.Helper()
	qs, err := rdf.NewQuadDecoder(bytes.NewReader(data), rdf.NQuads).DecodeAll()
	if err != nil {
		tb.Fatalf("knakk/rdf cannot read the export: %v", err)
	}
	return qs
}

func TestExportErrors(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	for _, tc := range []struct {
		name string
		f    admin.Format
		ids  []string
		want error
	}{
		{"unknown format", "xml", nil, session.ErrInvalid},
		{"bad id", admin.NQuads, []string{"not-a-uuid"}, session.ErrInvalid},
		{"unknown id", admin.NQuads, []string{"0190c000-0000-7000-8000-0000000000ff"}, session.ErrNotFound},
		{"unknown id, jsonl", admin.JSONL, []string{"0190c000-0000-7000-8000-0000000000ff"}, session.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := st.Export(ctx, io.Discard, tc.f, tc.ids...); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := st.Import(ctx, strings.NewReader(""), admin.JSONL, nil); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("import jsonl: got %v, want ErrInvalid", err)
	}
}

// jsonlLine is the public JSONL format, spelled independently of the
// package.
type jsonlLine struct {
	Session    string `json:"session"`
	Parent     string `json:"parent"`
	Branch     string `json:"branch"`
	Principal  string `json:"principal"`
	Index      int    `json:"index"`
	Role       string `json:"role"`
	Content    string `json:"content"`
	TurnBranch string `json:"turn_branch"`
	Created    string `json:"created"`
}

func TestExportJSONL(t *testing.T) {
	c := clustertest.Empty(t)
	st := openStore(t, c)
	v := buildVaried(t, st)
	want := loadAll(t, st, v.live)
	for _, tc := range []struct {
		name  string
		ids   []string
		order []string // the sessions expected, in order
	}{
		// a's tree: a, then its descendants by creation (b, c, f0); d was
		// detached, so it is a root of its own.
		{"tree", []string{v.a}, []string{v.a, v.b, v.c, v.live[3]}},
		// c's: its ancestors and itself.
		{"leaf", []string{v.c}, []string{v.a, v.b, v.c}},
		{"all", nil, v.live},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, stats := mustExport(t, st, admin.JSONL, tc.ids...)
			var got []jsonlLine
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 1<<20)
			for n := 1; sc.Scan(); n++ {
				var fields map[string]any
				if err := json.Unmarshal(sc.Bytes(), &fields); err != nil {
					t.Fatalf("line %d is not JSON: %v", n, err)
				}
				if len(fields) != 9 {
					t.Fatalf("line %d: got fields %v, want the 9 of the format", n, fields)
				}
				var l jsonlLine
				dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&l); err != nil {
					t.Fatalf("line %d: %v", n, err)
				}
				got = append(got, l)
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			var order []string
			for _, l := range got {
				if len(order) == 0 || order[len(order)-1] != l.Session {
					order = append(order, l.Session)
				}
			}
			var withTurns []string // a session without turns has no line
			for _, id := range tc.order {
				if len(want[id].Turns) > 0 {
					withTurns = append(withTurns, id)
				}
			}
			if tc.ids == nil {
				// The whole dataset: every session once, each tree's root
				// before its descendants.
				if !sameSet(order, withTurns) {
					t.Fatalf("got sessions %v, want %v", order, withTurns)
				}
				if slices.Index(order, v.a) > slices.Index(order, v.b) || slices.Index(order, v.b) > slices.Index(order, v.c) {
					t.Fatalf("got sessions %v: a root after its fork", order)
				}
			} else if !slices.Equal(order, withTurns) {
				t.Fatalf("got sessions %v, want %v", order, withTurns)
			}
			if stats.Sessions != len(tc.order) || stats.Turns != len(got) || stats.Quads != 0 {
				t.Fatalf("got %+v, want %d sessions and %d turns", stats, len(tc.order), len(got))
			}
			k := 0
			for _, id := range order {
				s := want[id]
				for i, turn := range s.Turns {
					l := got[k]
					k++
					created, err := time.Parse(time.RFC3339Nano, l.Created)
					if err != nil {
						t.Fatalf("%s turn %d: created %q: %v", id, i, l.Created, err)
					}
					if l.Session != s.ID || l.Parent != s.ParentID || l.Branch != s.Branch || l.Principal != s.Principal ||
						l.Index != turn.Index || l.Role != turn.Role || l.Content != turn.Content ||
						l.TurnBranch != turn.Branch || !created.Equal(turn.Created) {
						t.Fatalf("%s turn %d: got %+v, want %+v of %s", id, i, l, turn, s.ID)
					}
				}
			}
			if k != len(got) {
				t.Fatalf("got %d lines, want %d", len(got), k)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestImportInvalid feeds each input of testdata/export/invalid to Import:
// each is refused with ErrInvalid and nothing is written, not even its
// valid first quad.
func TestImportInvalid(t *testing.T) {
	ctx := context.Background()
	st, c := newStore(t)
	storetest.Persisted(t, st, "bystander", 2)
	dir := filepath.Join("..", "testdata", "export", "invalid")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	const firstID = "0190b000-0000-7000-8000-000000000001"
	n := 0
	for _, e := range entries {
		f := map[string]admin.Format{".nq": admin.NQuads, ".trig": admin.TriG}[filepath.Ext(e.Name())]
		if f == "" {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			before := storetest.CountQuads(t, c, "")
			stats, err := st.Import(ctx, bytes.NewReader(data), f, func(int, int) { t.Fatal("progress called: something was written") })
			if !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			t.Log(err)
			if stats != (admin.ImportStats{}) {
				t.Fatalf("got %+v, want nothing written", stats)
			}
			if after := storetest.CountQuads(t, c, ""); after != before {
				t.Fatalf("got %d quads in the store, want %d as before", after, before)
			}
			if _, err := st.Info(ctx, firstID); !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("info of the valid part: got %v, want ErrNotFound", err)
			}
		})
	}
	if n < 20 {
		t.Fatalf("got %d cases under %s, want at least 20", n, dir)
	}
}

// TestImportConflict imports over a session stored with other content:
// ErrConflict, and nothing written, not even the sessions that do not
// conflict.
func TestImportConflict(t *testing.T) {
	ctx := context.Background()
	c := clustertest.Empty(t)
	st := openStore(t, c)
	s := storetest.Persisted(t, st, "alice", 2)
	gone := storetest.Persisted(t, st, "bob", 2)
	data, _ := mustExport(t, st, admin.NQuads)
	s.Append("user", "said after the backup")
	storetest.MustPersist(t, st, s)
	if err := st.Delete(ctx, gone.ID, session.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, st)
	_, err := st.Import(ctx, bytes.NewReader(data), admin.NQuads, nil)
	if !errors.Is(err, session.ErrConflict) || !strings.Contains(err.Error(), s.ID) {
		t.Fatalf("got %v, want ErrConflict naming %s", err, s.ID)
	}
	if after := snapshot(t, st); !slices.Equal(after, before) {
		t.Fatalf("the store changed:\n%s", firstDiff(after, before))
	}
	if _, err := st.Info(ctx, gone.ID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("info %s: got %v, want ErrNotFound (nothing written)", gone.ID, err)
	}
	storetest.SameSession(t, storetest.MustLoad(t, st, s.ID), s)
}

// TestImportTwice checks that importing the same file twice, or into the
// store it came from, changes nothing.
func TestImportTwice(t *testing.T) {
	c := clustertest.Empty(t)
	st := openStore(t, c)
	v := buildVaried(t, st)
	for _, f := range []admin.Format{admin.NQuads, admin.TriG} {
		t.Run(string(f), func(t *testing.T) {
			want := snapshot(t, st)
			data, _ := mustExport(t, st, f)
			if stats := mustImport(t, st, data, f); stats.Sessions != 0 {
				t.Fatalf("into its own store: got %+v, want no session written", stats)
			}
			if got := snapshot(t, st); !slices.Equal(got, want) {
				t.Fatalf("into its own store: changed\n%s", firstDiff(got, want))
			}
			c := clustertest.Empty(t)
			st := openStore(t, c)
			if stats := mustImport(t, st, data, f); stats.Sessions != len(v.live) {
				t.Fatalf("first import: got %+v, want %d sessions", stats, len(v.live))
			}
			if stats := mustImport(t, st, data, f); stats.Sessions != 0 {
				t.Fatalf("second import: got %+v, want no session written", stats)
			}
			if got := snapshot(t, st); !slices.Equal(got, want) {
				t.Fatalf("after two imports: differs\n%s", firstDiff(got, want))
			}
		})
		// The next round exports from the imported copy.
		st = openStore(t, fusekitest.New(t))
	}
}

// TestImportValueEquality imports a session whose literals are written
// differently from how the store keeps them ("05" for 5, trailing zeros in
// a time): it is the same session, not a conflict.
func TestImportValueEquality(t *testing.T) {
	c := clustertest.Empty(t)
	st := openStore(t, c)
	const id = "0190b000-0000-7000-8000-0000000000aa"
	g := "<" + ontology.SessionIRI(id) + ">"
	data := fmt.Sprintf(`PREFIX trails: <%s>
PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
GRAPH %s {
  %s a trails:Session ; trails:branch 'main' ; trails:ownTurns 0 ;
     trails:principal <%s> ;
     trails:forkedAtIndex "00"^^xsd:integer ;
     trails:created "2026-01-02T03:04:05.100Z"^^xsd:dateTime .
}
`, ontology.NS, g, g, ontology.AgentIRI("valuer"))
	if stats := mustImport(t, st, []byte(data), admin.TriG); stats.Sessions != 1 {
		t.Fatalf("first import: got %+v, want 1 session", stats)
	}
	if stats := mustImport(t, st, []byte(data), admin.TriG); stats.Sessions != 0 {
		t.Fatalf("second import: got %+v, want none", stats)
	}
}

var goldenIDs = struct{ root, fork string }{
	"01900000-0000-7000-8000-000000000001",
	"01900000-0000-7000-8000-000000000002",
}

// buildGolden stores a small tree with fixed ids, branch labels and times.
func buildGolden(tb testing.TB, st *store) []string {
	tb.Helper()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	root := session.New("agent-7")
	root.ID = goldenIDs.root
	root.Append("user", "Name a prime number.")
	root.Append("assistant", "7, or \"seven\".\nAnother line.")
	root.Append("user", "Tab\there, NUL \x00 here, and 🎉.")
	for i := range root.Turns {
		root.Turns[i].Created = t0.Add(time.Duration(i) * 1500 * time.Millisecond)
	}
	storetest.MustPersist(tb, st, root)
	fork, err := root.Fork(1)
	if err != nil {
		tb.Fatal(err)
	}
	fork.ID = goldenIDs.fork
	fork.Branch = "fork-0000abcd"
	fork.Append("assistant", `13 """ and a backslash \`)
	fork.Turns[1].Created = t0.Add(time.Minute)
	storetest.MustPersist(tb, st, fork)
	return []string{root.ID, fork.ID}
}

// TestExportGolden exports a fixed tree in each format and compares with
// testdata/export/golden (go test -run TestExportGolden -update to
// rewrite). It also hands the TriG to Fuseki's own parser, so that the
// export is TriG to other tools too, not only to Import.
func TestExportGolden(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	c := clustertest.Empty(t)
	st := openStore(t, c, session.WithClock(func() time.Time { return clock }))
	ids := buildGolden(t, st)
	want := loadAll(t, st, ids)
	for _, f := range []admin.Format{admin.NQuads, admin.TriG, admin.JSONL} {
		t.Run(string(f), func(t *testing.T) {
			got, _ := mustExport(t, st, f, ids[0])
			ext := map[admin.Format]string{admin.NQuads: "nq", admin.TriG: "trig", admin.JSONL: "jsonl"}[f]
			path := filepath.Join("..", "testdata", "export", "golden", "tree."+ext)
			if updating() {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			golden, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, golden) {
				t.Fatalf("export differs from %s:\n%s", path, firstDiff(lines(got), lines(golden)))
			}
		})
	}

	trig, err := os.ReadFile(filepath.Join("..", "testdata", "export", "golden", "tree.trig"))
	if err != nil {
		t.Fatal(err)
	}
	c = clustertest.Empty(t)
	postData(t, c, "application/trig", trig)
	st = openStore(t, c)
	for _, id := range ids {
		storetest.SameSession(t, storetest.MustLoad(t, st, id), want[id])
	}
}

// postData adds data to the dataset of c through Fuseki's own parser (a
// Graph Store POST). On the kafka profile that goes around the log: call
// it only between clustertest.Empty and the next openStore of c's
// dataset, whose replicated store then starts from what it holds.
func postData(tb testing.TB, c *kg.Client, mediaType string, data []byte) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, c.GraphStoreURL(), bytes.NewReader(data))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", mediaType)
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		tb.Fatalf("the store refused the %s: %s %s", mediaType, resp.Status, body)
	}
}

// dump returns every quad of the dataset of c, as Fuseki writes them,
// sorted, but for the replica graph (ontology.ReplicaGraph: a replica of
// a log keeps its offsets there, on the kafka profile).
func dump(tb testing.TB, c *kg.Client) []string {
	tb.Helper()
	var buf bytes.Buffer
	if err := c.Dump(context.Background(), &buf); err != nil {
		tb.Fatal(err)
	}
	ls := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	ls = slices.DeleteFunc(ls, func(l string) bool { return strings.HasSuffix(l, "<"+ontology.ReplicaGraph+"> .") })
	slices.Sort(ls)
	return ls
}

// TestImportSyntax imports files that use the syntax of TriG and N-Quads
// broadly, and has Fuseki's own parser load them too: both stores must
// hold the same quads.
func TestImportSyntax(t *testing.T) {
	for _, tc := range []struct {
		file  string
		f     admin.Format
		media string
		quads int
	}{
		{"features.trig", admin.TriG, "application/trig", 48},
		{"features.nq", admin.NQuads, "application/n-quads", 10},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "testdata", "export", "syntax", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			c := clustertest.Empty(t)
			stats := mustImport(t, openStore(t, c), data, tc.f)
			got := dump(t, c)
			if stats.Quads != tc.quads || len(got) != tc.quads {
				t.Fatalf("got %d quads sent and %d stored, want %d", stats.Quads, len(got), tc.quads)
			}
			c = clustertest.Empty(t)
			postData(t, c, tc.media, data)
			if want := dump(t, c); !slices.Equal(got, want) {
				t.Fatalf("Import and Fuseki read %s differently:\n%s", tc.file, firstDiff(got, want))
			}
		})
	}
}

// BenchmarkExportImport exports and imports about 5,000 turns (20 roots of
// 200 turns, each with a fork of 50) on Fuseki with TDB2 on disk, reporting
// quads per second.
//
//	go test -run '^$' -bench BenchmarkExportImport -benchtime 5x ./session/
func BenchmarkExportImport(b *testing.B) {
	fusekitest.RequireDirect(b, "it measures a Fuseki on disk, wiped between imports")
	ctx := context.Background()
	c := fusekitest.Client(b, kg.Config{Endpoint: storetest.DiskEndpoint(b), Timeout: -1})
	wipe := func() {
		if err := c.Update(ctx, "DROP ALL", kg.Idempotent()); err != nil {
			b.Fatal(err)
		}
	}
	wipe()
	st := openStore(b, c)
	rng := rand.New(rand.NewPCG(7, 7))
	for range 20 {
		s := session.New("bench")
		for i := 0; i < 200; i++ {
			s.Append([]string{"user", "assistant"}[i%2], storetest.Realistic(rng))
		}
		storetest.MustPersist(b, st, s)
		f := storetest.MustFork(b, s, 100)
		for i := 0; i < 50; i++ {
			f.Append("assistant", storetest.Realistic(rng))
		}
		storetest.MustPersist(b, st, f)
	}
	data := make(map[admin.Format][]byte)
	for _, f := range []admin.Format{admin.NQuads, admin.TriG, admin.JSONL} {
		b.Run("export/"+string(f), func(b *testing.B) {
			var stats admin.ExportStats
			for i := 0; i < b.N; i++ {
				var buf bytes.Buffer
				var err error
				if stats, err = st.Export(ctx, &buf, f); err != nil {
					b.Fatal(err)
				}
				data[f] = buf.Bytes()
			}
			b.ReportMetric(float64(stats.Turns*b.N)/b.Elapsed().Seconds(), "turns/s")
			if f != admin.JSONL {
				b.ReportMetric(float64(stats.Quads*b.N)/b.Elapsed().Seconds(), "quads/s")
			}
			b.ReportMetric(float64(len(data[f])), "bytes")
		})
	}
	for _, f := range []admin.Format{admin.NQuads, admin.TriG} {
		b.Run("import/"+string(f), func(b *testing.B) {
			var stats admin.ImportStats
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				wipe()
				b.StartTimer()
				var err error
				if stats, err = st.Import(ctx, bytes.NewReader(data[f]), f, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(stats.Quads*b.N)/b.Elapsed().Seconds(), "quads/s")
		})
	}
}
