package prov_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
)

// TestStateChange writes StateChange records with AddStateChange and
// reads them back with the state-changes and cancel-requested queries.
func TestStateChange(t *testing.T) {
	c := fusekitest.Empty(t)
	ctx := context.Background()
	r := prov.NewReader(c)
	parent := session{ID: newID(t), Branch: "main", Principal: "alice", Created: minute(0)}
	child := session{ID: newID(t), Parent: parent.ID, At: 0, Branch: branch(parent.ID), Principal: "bob", Created: minute(1)}
	var d kg.Data
	parent.add(&d)
	child.add(&d)
	prov.AddFork(&d, child.fork())
	suspend, complete := prov.NewStateChangeActivity(), prov.NewStateChangeActivity()
	if suspend == complete || !strings.HasPrefix(suspend.String(), ontology.ActivityBase+"state/") {
		t.Fatalf("activity IRIs: got %s and %s, want two fresh ones under %sstate/", suspend, complete, ontology.ActivityBase)
	}
	prov.AddStateChange(&d, suspend, prov.StateChange{Session: parent.ID, From: "active", To: "suspended", Principal: "alice", Time: minute(2)})
	prov.AddStateChange(&d, complete, prov.StateChange{Session: parent.ID, From: "suspended", To: "completed", Principal: "ops", Time: minute(3), Reason: `done, "at last"`})
	g := sessionIRI(child.ID)
	d.Add(g, g, iri(ontology.CancelRequested), kg.Bool(true))
	d.Add(g, g, iri(ontology.CancelRequestedBy), complete)
	update(t, c, &d)

	res, err := r.Run(ctx, "state-changes", map[string]string{"session": parent.ID})
	if err != nil {
		t.Fatal(err)
	}
	want := []row{
		{"activity": suspend.String(), "from": "active", "to": "suspended", "principal": "alice", "time": minute(2).Format(time.RFC3339), "flagged": "0"},
		{"activity": complete.String(), "from": "suspended", "to": "completed", "principal": "ops", "time": minute(3).Format(time.RFC3339), "reason": `done, "at last"`, "flagged": "1"},
	}
	if got := rows(t, res); !reflect.DeepEqual(got, want) {
		t.Fatalf("state-changes: got %v, want %v", got, want)
	}
	res, err = r.Run(ctx, "cancel-requested", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantFlags := []row{{"session": g.String(), "principal": "bob", "state": "active", "ancestor": sessionIRI(parent.ID).String(),
		"ancestorState": "completed", "activity": complete.String(), "time": minute(3).Format(time.RFC3339)}}
	if got := rows(t, res); !reflect.DeepEqual(got, wantFlags) {
		t.Fatalf("cancel-requested: got %v, want %v", got, wantFlags)
	}

	// The records conform to the shapes.
	rep, err := c.Validate(ctx, ontology.Shapes, "union")
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Conforms {
		t.Fatalf("got SHACL results %+v, want none", rep.Results)
	}
}
