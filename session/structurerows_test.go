package session_test

import (
	"context"
	"errors"
	"testing"

	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

// TestStructuredDamaged: a structured field Load cannot read gives
// ErrCorrupt, through Load (whose structure query runs while the turns are
// read), Replay and a tail (which names its turns), and the damage of a
// parent's turn after a fork point does not reach the fork.
func TestStructuredDamaged(t *testing.T) {
	fusekitest.Parallel(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		damage string // an update; $t is turn 1 (the model's turn with calls), $g its graph
	}{
		{"a state change's value that is not rdf:JSON",
			`DELETE { GRAPH $g { ?c <` + ontology.Value + `> ?v } } INSERT { GRAPH $g { ?c <` + ontology.Value + `> "1" } } WHERE { GRAPH $g { $t <` + ontology.Changes + `> ?c . ?c <` + ontology.Value + `> ?v } }`},
		{"a part without its kind",
			`DELETE { GRAPH $g { ?x a ?k } } WHERE { GRAPH $g { ?x <` + ontology.PartOf + `> $t ; <` + ontology.PartIndex + `> 0 ; a ?k } }`},
		{"a negative token count",
			`DELETE { GRAPH $g { ?inv <` + ontology.InputTokens + `> ?n } } INSERT { GRAPH $g { ?inv <` + ontology.InputTokens + `> -1 } } WHERE { GRAPH $g { $t <` + ontology.ProvWasGeneratedBy + `> ?inv . ?inv <` + ontology.InputTokens + `> ?n } }`},
		{"an author that is not a string",
			`DELETE { GRAPH $g { $t <` + ontology.Author + `> ?a } } INSERT { GRAPH $g { $t <` + ontology.Author + `> <urn:x> } } WHERE { GRAPH $g { $t <` + ontology.Author + `> ?a } }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _, c := newStore(t)
			root := session.New("agent")
			agentLoop(root)
			root.Turns[1].Structure.Delta = values("k", `"v"`)
			mustPersist(t, st, root)
			fork := mustFork(t, root, 1) // before the damaged turn
			fork.AppendTurn(deltaTurn("mine", values("k", `"w"`)))
			mustPersist(t, st, fork)
			u, err := kg.Bind(tc.damage, kg.Params{"t": kg.MustIRI(root.Turns[1].ID), "g": kg.MustIRI(ontology.SessionIRI(root.ID))})
			if err != nil {
				t.Fatal(err)
			}
			if err := clustertest.Update(ctx, t, c, u); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Load(ctx, root.ID); !errors.Is(err, session.ErrCorrupt) {
				t.Errorf("Load: got %v, want ErrCorrupt", err)
			}
			if _, err := st.Replay(ctx, root.ID, session.UpTo(2)); !errors.Is(err, session.ErrCorrupt) {
				t.Errorf("Replay to 2: got %v, want ErrCorrupt", err)
			}
			if _, err := st.LoadTail(ctx, root.ID, session.Tail{Last: 3}); !errors.Is(err, session.ErrCorrupt) {
				t.Errorf("LoadTail: got %v, want ErrCorrupt", err)
			}
			got := mustLoad(t, st, fork.ID)
			sameHistory(t, got.Turns, fork.Turns)
			sameValues(t, "fork", got.Values, values("k", `"w"`))
		})
	}
}
