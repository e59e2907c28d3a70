package prov_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
)

func TestMain(m *testing.M) { fusekitest.Main(m) }

// newID returns a fresh, time-ordered id.
func newID(tb testing.TB) string {
	tb.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		tb.Fatal(err)
	}
	return id.String()
}

func iri(s string) rdf.IRI         { return kg.MustIRI(s) }
func sessionIRI(id string) rdf.IRI { return iri(ontology.SessionIRI(id)) }

// session is a session as the session package writes it, for fixtures.
type session struct {
	ID        string
	Parent    string // "" for a root
	At        int    // forkedAtIndex
	Branch    string
	Principal string
	Created   time.Time
	Turns     int // turns written by the session itself, from index At
	// Detach, when set, writes the session as detached by that activity:
	// no parent link or fork index, the inherited prefix copied in.
	Detach rdf.IRI
}

// add adds the session's own named graph to d, laid out as the session
// package writes it.
func (s session) add(d *kg.Data) {
	g := sessionIRI(s.ID)
	typ := iri(ontology.RDFType)
	d.Add(g, g, typ, iri(ontology.Session))
	d.Add(g, g, iri(ontology.DCTIdentifier), kg.String(s.ID))
	d.Add(g, g, iri(ontology.Branch), kg.String(s.Branch))
	d.Add(g, g, iri(ontology.Created), kg.DateTime(s.Created))
	d.Add(g, g, iri(ontology.Principal), prov.AddAgent(d, g, s.Principal))
	own := s.Turns
	if s.Parent != "" {
		p := sessionIRI(s.Parent)
		d.Add(g, g, iri(ontology.ProvWasDerivedFrom), p)
		if s.Detach.String() == "" {
			d.Add(g, g, iri(ontology.ParentSession), p)
			d.Add(g, g, iri(ontology.ForkedAtIndex), kg.Int(s.At))
		} else {
			own += s.At
		}
	}
	d.Add(g, g, iri(ontology.OwnTurns), kg.Int(own))
	d.Add(g, g, iri(ontology.HeadDigest), kg.String(fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(s.ID)))))
	first := s.At
	if s.Detach.String() != "" {
		first = 0
	}
	for i := first; i < s.At+s.Turns; i++ {
		t := iri(ontology.TurnIRI(g.String(), i))
		d.Add(g, t, typ, iri(ontology.Turn))
		d.Add(g, t, iri(ontology.TurnSession), g)
		d.Add(g, t, iri(ontology.Index), kg.Int(i))
		d.Add(g, t, iri(ontology.Role), kg.String("user"))
		d.Add(g, t, iri(ontology.Content), kg.String(fmt.Sprintf("turn %d of %s", i, s.ID)))
		d.Add(g, t, iri(ontology.Branch), kg.String(s.Branch))
		d.Add(g, t, iri(ontology.Created), kg.DateTime(s.Created.Add(time.Duration(i)*time.Second)))
		if i < s.At { // a copy made by the detach
			d.Add(g, t, iri(ontology.CopiedFrom), iri(ontology.TurnIRI(ontology.SessionIRI(s.Parent), i)))
			d.Add(g, t, iri(ontology.ProvWasGeneratedBy), s.Detach)
		}
	}
}

// fork returns the PROV record of the fork that created s.
func (s session) fork() prov.Fork {
	return prov.Fork{Child: s.ID, Parent: s.Parent, At: s.At, Principal: s.Principal, Time: s.Created}
}

// branch returns a fork branch label: "fork-" and 8 hex digits.
func branch(id string) string { return fmt.Sprintf("fork-%x", sha256.Sum256([]byte(id)))[:13] }

// update sends the data as one INSERT DATA request, failing tb on error.
func update(tb testing.TB, c *kg.Client, d *kg.Data) {
	tb.Helper()
	u, err := d.InsertData()
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Update(context.Background(), u); err != nil {
		tb.Fatalf("insert fixture: %v", err)
	}
}

// world is the fixture the read-side tests share:
//
//	R (root, alice)
//	├── A  fork at 2 by alice
//	│   └── B  fork at 3 by bob                  (fork of a fork)
//	├── C  fork at 1 by bob, deleted by carol    (Deletion recorded)
//	│   └── D  fork at 1 by bob                  (orphan: C is missing)
//	│       └── E  fork at 2 by carol            (orphan: C is missing)
//	├── P  fork at 1 by alice, graph dropped     (no Deletion recorded)
//	│   └── Q  fork at 2 by alice                (orphan: P is missing)
//	└── X  fork at 2 by alice, detached by alice
//
// Every fork has its prov.AddFork record, timed as its child was created;
// the numbers in the calls to mk, AddDetach and AddDeletion are minutes.
type world struct {
	R, A, B, C, D, E, P, Q, X session
	DelC, DetX                rdf.IRI
}

// minute returns the fixture time n minutes after the start.
func minute(n int) time.Time { return time.Date(2026, 3, 1, 10, n, 0, 0, time.UTC) }

// newWorld writes the fixture into an empty dataset. Callers must not run
// in parallel with other tests of the package.
func newWorld(tb testing.TB) (*kg.Client, world) {
	tb.Helper()
	c := fusekitest.Empty(tb)
	var w world
	mk := func(parent *session, at int, principal string, n int) session {
		id := newID(tb)
		s := session{ID: id, At: at, Principal: principal, Created: minute(n), Turns: 2, Branch: branch(id)}
		if parent != nil {
			s.Parent = parent.ID
		}
		return s
	}
	w.R = mk(nil, 0, "alice", 0)
	w.R.Branch, w.R.Turns = "main", 4
	w.A = mk(&w.R, 2, "alice", 1)
	w.B = mk(&w.A, 3, "bob", 2)
	w.C = mk(&w.R, 1, "bob", 3)
	w.D = mk(&w.C, 1, "bob", 4)
	w.E = mk(&w.D, 2, "carol", 5)
	w.P = mk(&w.R, 1, "alice", 6)
	w.Q = mk(&w.P, 2, "alice", 7)
	w.X = mk(&w.R, 2, "alice", 8)
	w.DetX = iri(ontology.ActivityIRI("detach", newID(tb)))
	w.DelC = iri(ontology.ActivityIRI("deletion", newID(tb)))
	w.X.Detach = w.DetX

	var d kg.Data
	for _, s := range []session{w.R, w.A, w.B, w.C, w.D, w.E, w.P, w.Q, w.X} {
		s.add(&d)
		if s.Parent != "" {
			prov.AddFork(&d, s.fork())
		}
	}
	prov.AddDetach(&d, w.DetX, prov.Detach{Session: w.X.ID, Parent: w.R.ID, Copied: 2, Principal: "alice", Time: minute(9)})
	prov.AddDeletion(&d, w.DelC, prov.Deletion{Session: w.C.ID, Principal: "carol", Time: minute(10)})
	update(tb, c, &d)
	// C was deleted and P's graph dropped by hand: their graphs are gone.
	drop, err := kg.Bind("DROP GRAPH $c ; DROP GRAPH $p", kg.Params{"c": sessionIRI(w.C.ID), "p": sessionIRI(w.P.ID)})
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Update(context.Background(), drop); err != nil {
		tb.Fatalf("drop graphs: %v", err)
	}
	return c, w
}

// TestRecordsAreIdempotent writes each kind of record twice and checks that
// the second write adds nothing: the records have no blank nodes and the
// fork's activity IRI is derived from the child.
func TestRecordsAreIdempotent(t *testing.T) {
	c := fusekitest.New(t)
	ctx := context.Background()
	principal := "idem " + newID(t) // a principal of its own: its agent triples are counted
	agent := iri(ontology.AgentIRI(principal))
	child, parent := newID(t), newID(t)
	when := time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)
	detach := iri(ontology.ActivityIRI("detach", newID(t)))
	deletion := iri(ontology.ActivityIRI("deletion", newID(t)))
	for _, tc := range []struct {
		name  string
		write func(*kg.Data) rdf.IRI
		want  int // triples about the activity, the child and the agent
	}{
		{"fork", func(d *kg.Data) rdf.IRI {
			return prov.AddFork(d, prov.Fork{Child: child, Parent: parent, At: 3, Principal: principal, Time: when})
		}, 9},
		{"detach", func(d *kg.Data) rdf.IRI {
			prov.AddDetach(d, detach, prov.Detach{Session: child, Parent: parent, Copied: 3, Principal: principal, Time: when})
			return detach
		}, 9},
		{"deletion", func(d *kg.Data) rdf.IRI {
			prov.AddDeletion(d, deletion, prov.Deletion{Session: child, Principal: principal, Time: when})
			return deletion
		}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var counts []int
			for range 2 {
				var d kg.Data
				act := tc.write(&d)
				update(t, c, &d)
				// This record's triples: the activity's, the agent's and,
				// for a fork, the child's link to it.
				q, err := kg.Bind(`SELECT (COUNT(*) AS ?n) WHERE { GRAPH $g { ?s ?p ?o }
					FILTER(?s = $act || ?s = $agent || (?s = $child && ?o = $act)) }`,
					kg.Params{"g": iri(ontology.ProvGraph), "act": act, "agent": agent, "child": sessionIRI(child)})
				if err != nil {
					t.Fatal(err)
				}
				res, err := c.Select(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				n, err := res.Solutions[0].Int("n")
				if err != nil {
					t.Fatal(err)
				}
				counts = append(counts, n)
			}
			if want := []int{tc.want, tc.want}; !reflect.DeepEqual(counts, want) {
				t.Fatalf("triples after writing once and twice: got %v, want %v", counts, want)
			}
		})
	}
	if got, want := prov.ForkActivity(child).String(), ontology.ActivityBase+"fork/"+child; got != want {
		t.Fatalf("fork activity: got %s, want %s", got, want)
	}
}

// TestForkRecordRoundTrip writes a fork record alone (no session triples)
// with a principal that needs escaping and a time with nanoseconds, and
// reads it back whole.
func TestForkRecordRoundTrip(t *testing.T) {
	c := fusekitest.New(t)
	ctx := context.Background()
	f := prov.Fork{
		Child: newID(t), Parent: newID(t), At: 7,
		Principal: "ïda \"the\" <admin>/ops\n" + newID(t),
		Time:      time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC),
	}
	var d kg.Data
	prov.AddFork(&d, f)
	update(t, c, &d)
	r := prov.NewReader(c)
	want := []prov.ForkRecord{{Fork: f}}
	got, err := r.ForksOf(ctx, f.Parent)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ForksOf: got %v, %v; want %v", got, err, want)
	}
	got, err = r.ForksBy(ctx, f.Principal, f.Time, f.Time.Add(time.Nanosecond))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ForksBy: got %v, %v; want %v", got, err, want)
	}
}
