package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/kafkatest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/session"
)

var _ admin.Querier = (*cluster.Client)(nil)

// testGraphStore: what goes to a store through the Graph Store Protocol
// goes through the log as records of its own. A 16 MiB turn is staged
// (a PUT record) and bound by its append (an update record); a PUT of
// data the store cannot read is refused by every replica alike and the
// log goes on; quads loaded are on every replica; trails-admin's check
// runs through the Client and finds nothing.
func testGraphStore(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	r := newRig(t, k, srv, 3)
	c := r.client(t)
	st := session.NewStore(c)

	s := session.New("dora")
	s.Append("user", "summarize the attached report")
	big := strings.Repeat("a long report, line after line \"quoted\"\n", 16<<20/40)
	s.Append("tool", big)
	if err := st.Persist(ctx, s); err != nil {
		t.Fatalf("persist a %d-byte turn: %v", len(big), err)
	}
	got, err := st.Load(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Turns) != 2 || got.Turns[1].Content != big {
		t.Fatalf("loaded %d turns; the long one is %d bytes, want %d", len(got.Turns), len(got.Turns[len(got.Turns)-1].Content), len(big))
	}

	g := kg.MustIRI("https://example.org/graph/put")
	if err := c.PutGraph(ctx, g, kg.NTriples, []byte("not n-triples\n")); !errors.Is(err, kg.ErrBadRequest) {
		t.Errorf("PutGraph of bad data: got %v, want kg.ErrBadRequest", err)
	}
	if err := c.PutGraph(ctx, g, "text/x-unknown", []byte("<a:s> <a:p> <a:o> .\n")); !errors.Is(err, kg.ErrBadRequest) {
		t.Errorf("PutGraph of an unknown media type: got %v, want kg.ErrBadRequest", err)
	}
	nt := "<https://example.org/s> <https://example.org/p> \"put\" .\n"
	if err := c.PutGraph(ctx, g, kg.NTriples, []byte(nt)); err != nil {
		t.Fatal(err)
	}
	if back, err := c.GetGraph(ctx, g); err != nil || string(back) != nt {
		t.Errorf("GetGraph after PutGraph: got %q, %v; want %q", back, err, nt)
	}
	q := "<https://example.org/s> <https://example.org/p> \"loaded\" <https://example.org/graph/load> .\n"
	if err := c.LoadQuads(ctx, []byte(q)); err != nil {
		t.Fatal(err)
	}
	quads := r.converged(t, c.Position())
	for _, want := range []string{strings.TrimSpace(nt[:len(nt)-2]) + " <" + g.String() + "> .", strings.TrimSpace(q)} {
		if !strings.Contains(quads, want) {
			t.Errorf("the replicas lack %s", want)
		}
	}
	// The two PUTs refused: each left its refusal marker, on both replicas
	// (converged compared them), in the transaction that passed it.
	if n := strings.Count(quads, "<"+ontology.RefusedOffset+">"); n != 2 {
		t.Errorf("the replicas hold %d refusal markers, want 2 (the two PUTs refused)", n)
	}

	findings, err := admin.New(c).Check(ctx)
	if err != nil {
		t.Fatalf("check through the cluster: %v", err)
	}
	if len(findings) > 0 {
		t.Errorf("check through the cluster: %d findings, first %+v", len(findings), findings[0])
	}
}

// offsetMover is the transport of an applier's store: when the applier
// sends the request that moves its offset past a refused record (the
// guard and the offset move, no record), it first moves the dataset's
// offset itself, as a second applier writing the same dataset would.
type offsetMover struct {
	next   http.RoundTripper
	moveTo func() error
	moved  atomic.Bool
}

func (m *offsetMover) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.Body != nil && !m.moved.Load() {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		if u := string(b); strings.Contains(u, ontology.AppliedOffset) && strings.Contains(u, "DELETE {") && !strings.Contains(u, "ADD <urn:trails-test:missing>") && !strings.Contains(u, "INSERT DATA { GRAPH <urn:trails-test:g>") { // the guard and no record: a move of the offset past a refused record (with its marker)
			if err := m.moveTo(); err != nil {
				return nil, err
			}
			m.moved.Store(true)
		}
	}
	return m.next.RoundTrip(r)
}

// testOffsetMoved: an applier whose dataset's offset moves under it (a
// second applier on the same dataset) stops with an error when it finds
// out, here as it moves its offset past a refused record; it does not go
// on as if the record had applied.
func testOffsetMoved(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	r := newRig(t, k, srv, 5)
	r.appliers[1].stop(t)
	direct := r.stores[1]
	mover := &offsetMover{next: http.DefaultTransport, moveTo: func() error {
		return direct.Update(ctx, `DELETE WHERE { GRAPH <`+ontology.ReplicaGraph+`> { ?l <`+ontology.AppliedOffset+`> ?o } } ;
INSERT DATA { GRAPH <`+ontology.ReplicaGraph+`> { <`+ontology.LogIRI(r.topic, 0)+`> <`+ontology.AppliedOffset+`> -7 } }`)
	}}
	store := fusekitest.Client(t, kg.Config{Endpoint: direct.Endpoint(), Store: kg.Fuseki, HTTPClient: &http.Client{Transport: mover}})
	a, err := cluster.NewApplier(cluster.ApplierConfig{Brokers: r.brokers, Topic: r.topic, Store: store, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	c := r.client(t) // replica 0 answers the writer
	if err := c.Update(ctx, "INSERT DATA { GRAPH <urn:trails-test:g> { <urn:trails-test:s> <urn:trails-test:p> 1 } }"); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, "ADD <urn:trails-test:missing> TO <urn:trails-test:g>"); !errors.Is(err, kg.ErrBadRequest) && !errors.Is(err, kg.ErrUnavailable) {
		var ke *kg.Error
		if !errors.As(err, &ke) || ke.Status != http.StatusInternalServerError {
			t.Fatalf("a refused update: got %v, want the store's refusal", err)
		}
	}
	err = <-done
	if !mover.moved.Load() {
		t.Fatalf("the applier never moved its offset past the refused record (Run: %v)", err)
	}
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "another applier") {
		t.Errorf("Run after its dataset's offset moved under it: got %v, want an error saying another applier writes the dataset", err)
	}
}

// updateCounter counts the update requests whose body holds marker.
type updateCounter struct {
	next   http.RoundTripper
	marker string
	n      atomic.Int64
}

func (u *updateCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		if strings.Contains(string(b), u.marker) {
			u.n.Add(1)
		}
	}
	return u.next.RoundTrip(r)
}

// testRefusedAtOnce: a record refused because a condition of a Trails
// write did not hold (the ADD of its missing acknowledgement graph) is
// sent to the store twice, in its batch and alone, not three times each:
// Fuseki's answer names the graph, the same on every try.
func testRefusedAtOnce(t *testing.T, k *kafkatest.Cluster, srv *fusekitest.Server) {
	ctx := context.Background()
	r := newRig(t, k, srv, 5)
	r.appliers[1].stop(t)
	ack := ontology.StagingBase + "refused-at-once"
	counter := &updateCounter{next: http.DefaultTransport, marker: "ADD <" + ack + ">"} // the record, not its refusal marker (which quotes the store's answer)
	store := fusekitest.Client(t, kg.Config{Endpoint: r.stores[1].Endpoint(), Store: kg.Fuseki, HTTPClient: &http.Client{Transport: counter}})
	r.appliers[1] = r.start(t, store, r.appliers[1].srv)
	c, err := cluster.Open(cluster.Config{Brokers: r.brokers, Topic: r.topic, Replicas: r.replicas()[1:], Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Update(ctx, "INSERT DATA { GRAPH <urn:trails-test:g> { <urn:trails-test:s> <urn:trails-test:p> 1 } } ;\nADD <"+ack+"> TO <"+ack+">")
	if !errors.Is(err, kg.ErrBadRequest) && !errors.Is(err, kg.ErrUnavailable) {
		var ke *kg.Error
		if !errors.As(err, &ke) || ke.Status != http.StatusInternalServerError {
			t.Fatalf("an update whose condition failed: got %v, want the store's refusal", err)
		}
	}
	if n := counter.n.Load(); n != 2 {
		t.Errorf("the refused record was sent to the store %d times, want 2 (its batch, then alone)", n)
	}
	r.converged(t, c.Position())
}
