package openaiagents_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nlpodyssey/openai-agents-go/memory"
	"github.com/trails-kg/trails/integrations/openaiagents"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// archived fails tb unless the latest rewind of session id went to index
// to with reason, PROV holds its record, and its archive holds the items
// of id before to followed by items, the ones it abandoned.
func archived(tb testing.TB, st *session.Store, c *kg.Client, id string, to int, reason string, items []memory.TResponseInputItem) {
	tb.Helper()
	ctx := context.Background()
	recs, err := st.Rewinds(ctx, id)
	if err != nil {
		tb.Fatal(err)
	}
	if len(recs) == 0 {
		tb.Fatal("no rewind recorded")
	}
	r := recs[len(recs)-1]
	if r.To != to || r.Reason != reason {
		tb.Errorf("got rewind to %d (%q), want to %d (%q)", r.To, r.Reason, to, reason)
	}
	q, err := kg.Bind(`ASK { GRAPH $prov { ?a a $Rewind ; $used $s ; $generated $archive ; $rewoundTo $to ; $reason $why } }`, kg.Params{
		"prov": kg.MustIRI(ontology.ProvGraph), "Rewind": kg.MustIRI(ontology.Rewind), "used": kg.MustIRI(ontology.ProvUsed),
		"generated": kg.MustIRI(ontology.ProvGenerated), "rewoundTo": kg.MustIRI(ontology.RewoundTo), "reason": kg.MustIRI(ontology.Reason),
		"s": kg.MustIRI(ontology.SessionIRI(id)), "archive": kg.MustIRI(ontology.SessionIRI(r.Archive)), "to": kg.Int(to), "why": kg.String(reason),
	})
	if err != nil {
		tb.Fatal(err)
	}
	if ok, err := c.Ask(ctx, q); err != nil || !ok {
		tb.Errorf("PROV record of the rewind to %s: got %v (%v), want it", r.Archive, ok, err)
	}
	kept := mustGet(tb, openaiagents.NewSession(st, id), 0)
	if len(kept) < to {
		tb.Fatalf("rewound session: got %d items, want at least %d", len(kept), to)
	}
	want := append(append([]memory.TResponseInputItem(nil), kept[:to]...), items...)
	sameItems(tb, mustGet(tb, openaiagents.NewSession(st, r.Archive), 0), want)
}

// TestFork: a fork shares the items before its fork point with its
// parent, recorded in PROV as a fork; items added to either are not the
// other's; the fork's PopItem and ClearSession give up only its own items
// (ErrInherited, nothing changed, for the inherited ones); a fork of a
// fork goes on the chain.
func TestFork(t *testing.T) {
	fusekitest.Parallel(t)
	st, c := newStore(t)
	ctx := context.Background()
	p := openaiagents.NewSession(st, "parent", openaiagents.WithPrincipal("alice"), openaiagents.WithApp("shop"))
	if _, err := p.Fork(ctx, 0); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("fork of an unstored session: got %v, want %v", err, session.ErrNotFound)
	}
	items := []memory.TResponseInputItem{user("Weather in Lisbon?"), call("c1", "get_weather", `{"city":"Lisbon"}`),
		output("c1", `{"sky":"sunny"}`), answer("msg_1", "Sunny."), user("And Porto?")}
	mustAdd(t, p, items...)

	f, err := p.Fork(ctx, 4, session.WithReason("ask about Madrid instead"))
	if err != nil {
		t.Fatal(err)
	}
	fid := f.SessionID(ctx)
	if fid == p.SessionID(ctx) || session.CheckID(fid) != nil {
		t.Fatalf("got fork id %q, want a fresh one", fid)
	}
	stored(t, st, f, items[:4])
	mustAdd(t, f, user("And Madrid?"))
	mustAdd(t, p, answer("msg_2", "Cloudy."))
	stored(t, st, f, append(items[:4:4], user("And Madrid?")))
	stored(t, st, p, append(items[:5:5], answer("msg_2", "Cloudy.")))

	info, err := st.Info(ctx, fid)
	if err != nil {
		t.Fatal(err)
	}
	if info.ParentID != p.SessionID(ctx) || info.ForkedAt != 4 || info.Principal != "alice" {
		t.Errorf("got fork of %s at %d by %q, want of %s at 4 by alice", info.ParentID, info.ForkedAt, info.Principal, p.SessionID(ctx))
	}
	recs, err := prov.NewReader(c).ForksOf(ctx, p.SessionID(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Child != fid || recs[0].At != 4 {
		t.Fatalf("got PROV fork records %+v, want one of %s at 4", recs, fid)
	}
	rec, err := prov.NewReader(c).ForkRecord(ctx, fid)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Reason != "ask about Madrid instead" {
		t.Errorf("got the fork's reason %q, want %q", rec.Reason, "ask about Madrid instead")
	}

	// The fork gives up its own item, not the inherited ones.
	got, err := f.PopItem(ctx)
	if err != nil || got == nil {
		t.Fatalf("pop of the fork's own item: got %v (%v)", got, err)
	}
	sameItems(t, []memory.TResponseInputItem{*got}, []memory.TResponseInputItem{user("And Madrid?")})
	archived(t, st, c, fid, 4, openaiagents.ReasonPop, []memory.TResponseInputItem{user("And Madrid?")})
	if got, err := f.PopItem(ctx); !errors.Is(err, openaiagents.ErrInherited) || got != nil {
		t.Fatalf("pop of an inherited item: got %v (%v), want %v", got, err, openaiagents.ErrInherited)
	}
	mustAdd(t, f, user("And Faro?"))
	if err := f.ClearSession(ctx); !errors.Is(err, openaiagents.ErrInherited) {
		t.Fatalf("clear of a fork: got %v, want %v", err, openaiagents.ErrInherited)
	}
	stored(t, st, f, append(items[:4:4], user("And Faro?")))

	// A fork of the fork, and a fork at 0 (which can be cleared).
	g, err := f.Fork(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, g, answer("msg_3", "Warm."))
	stored(t, st, g, append(items[:4:4], user("And Faro?"), answer("msg_3", "Warm.")))
	z, err := g.Fork(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, z, user("fresh"))
	if err := z.ClearSession(ctx); err != nil {
		t.Fatal(err)
	}
	stored(t, st, z, nil)
	if _, err := p.Fork(ctx, 99); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("fork beyond the end: got %v, want %v", err, session.ErrInvalid)
	}
}

// TestClearSession: ClearSession is a rewind to 0 recorded in PROV whose
// archive holds every item; clearing an empty or unstored session does
// nothing; the session goes on afterwards.
func TestClearSession(t *testing.T) {
	fusekitest.Parallel(t)
	st, c := newStore(t)
	ctx := context.Background()
	s := openaiagents.NewSession(st, "")
	if err := s.ClearSession(ctx); err != nil {
		t.Fatalf("clear of an unstored session: %v", err)
	}
	items := []memory.TResponseInputItem{user("a"), call("c", "f", "not json"), output("c", hostile)}
	mustAdd(t, s, items...)
	if err := s.ClearSession(ctx); err != nil {
		t.Fatal(err)
	}
	stored(t, st, s, nil)
	archived(t, st, c, s.SessionID(ctx), 0, openaiagents.ReasonClear, items)
	if err := s.ClearSession(ctx); err != nil {
		t.Fatal(err)
	}
	if recs, err := st.Rewinds(ctx, s.SessionID(ctx)); err != nil || len(recs) != 1 {
		t.Fatalf("got %d rewinds (%v), want 1", len(recs), err)
	}
	mustAdd(t, s, items[0])
	stored(t, st, s, items[:1])
}
