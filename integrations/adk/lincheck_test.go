package adk_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/adk/v2/session"

	"github.com/trails-kg/trails/integrations/adk"
	"github.com/trails-kg/trails/internal/clustertest"
	"github.com/trails-kg/trails/internal/fusekitest"
	trails "github.com/trails-kg/trails/session"
)

// TestLinearizable is the ADK adapter's share of the linearizability
// checker (internal/lincheck, docs/reliability.md), which cannot call ADK
// from the core module: 4 clients call Get, AppendEvent (from the value
// they got, fresh or stale, with a state delta of the session's own key,
// a user: or an app: key) and Delete on two ADK sessions of one user, and
// Porcupine decides whether one order of the calls explains every answer
// by a model of the documented semantics: AppendEvent is a compare and
// swap on the history the value holds (ErrConflict, the value left as it
// was), Get returns exactly the events acknowledged and the state they
// give, shared keys the last acknowledged write, a deleted session
// ErrNotFound.
//
// TRAILS_LINCHECK_HISTORIES sets how many histories (default 30, 10 with
// -short); TRAILS_LINCHECK_SEED the first seed.
func TestLinearizable(t *testing.T) {
	fusekitest.Parallel(t)
	n := 30
	if testing.Short() {
		n = 10
	}
	if v := os.Getenv("TRAILS_LINCHECK_HISTORIES"); v != "" {
		if k, err := strconv.Atoi(v); err == nil {
			n = max(1, k/10)
		}
	}
	seed := uint64(time.Now().UnixNano()) & (1<<40 - 1)
	if v := os.Getenv("TRAILS_LINCHECK_SEED"); v != "" {
		if s, err := strconv.ParseUint(v, 10, 64); err == nil {
			seed = s
		}
	}
	svc, _ := newService(t)
	ops := 0
	for i := 0; i < n && !t.Failed(); i++ {
		ops += adkHistory(t, svc, seed+uint64(i))
	}
	t.Logf("%d histories from seed %d, %d operations", n, seed, ops)
}

// The model's calls and answers.
type adkIn struct {
	Op    string // "get", "append", "delete"
	Sess  int    // 0 or 1
	Vid   int    // get: the value kept; append: the value used
	Event string // append: the event's id
	Delta string // append: "key=value" or ""
}

type adkOut struct {
	Unknown bool
	Err     string // "", "conflict", "notfound"
	Events  []string
	State   string // sorted key=value of the keys the histories use
}

type adkVal struct {
	Sess   int
	Events []string
}

type adkState struct {
	Events  [2][]string
	Deltas  [2][]string // per event, "key=value" or ""
	Deleted [2]bool
	Shared  map[string]string
	Vals    map[int]adkVal
	key     string
}

func (s *adkState) seal() *adkState {
	var b strings.Builder
	fmt.Fprintf(&b, "%v%v%v", s.Events, s.Deltas, s.Deleted)
	for _, k := range slices.Sorted(maps.Keys(s.Shared)) {
		fmt.Fprintf(&b, ";%s=%s", k, s.Shared[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Vals)) {
		fmt.Fprintf(&b, ";%d:%v", k, s.Vals[k])
	}
	s.key = b.String()
	return s
}

func (s *adkState) clone() *adkState {
	n := *s
	n.Shared, n.Vals = maps.Clone(s.Shared), maps.Clone(s.Vals)
	for i := range 2 {
		n.Events[i], n.Deltas[i] = slices.Clone(s.Events[i]), slices.Clone(s.Deltas[i])
	}
	return &n
}

// state returns the state a Get of session i shows.
func (s *adkState) state(i int) string {
	v := map[string]string{}
	for _, d := range s.Deltas[i] {
		if k, val, ok := strings.Cut(d, "="); ok && !strings.Contains(k, ":") {
			v[k] = val
		}
	}
	maps.Copy(v, s.Shared)
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(v)) {
		parts = append(parts, k+"="+v[k])
	}
	return strings.Join(parts, ",")
}

func adkStep(state, input, output any) []any {
	s, in, out := state.(*adkState), input.(adkIn), output.(adkOut)
	n := s.clone()
	var next *adkState // the state after success, nil when it cannot succeed
	var errs []string
	ok := func() bool { return true }
	check := ok
	switch in.Op {
	case "get":
		if s.Deleted[in.Sess] {
			errs = append(errs, "notfound")
			break
		}
		n.Vals[in.Vid] = adkVal{in.Sess, slices.Clone(s.Events[in.Sess])}
		next = n.seal()
		// A Get racing the Delete of its session reads the raw copies in
		// the query of the turns (RawOnly): never the events without them
		// (A11, fixed).
		check = func() bool {
			return slices.Equal(out.Events, s.Events[in.Sess]) && out.State == s.state(in.Sess)
		}
	case "append":
		v := s.Vals[in.Vid]
		switch {
		case s.Deleted[v.Sess]:
			errs = append(errs, "notfound", "conflict")
		case !slices.Equal(v.Events, s.Events[v.Sess]):
			errs = append(errs, "conflict")
		default:
			n.Events[v.Sess] = append(n.Events[v.Sess], in.Event)
			n.Deltas[v.Sess] = append(n.Deltas[v.Sess], in.Delta)
			if k, val, ok := strings.Cut(in.Delta, "="); ok && strings.Contains(k, ":") {
				n.Shared[k] = val
			}
			n.Vals[in.Vid] = adkVal{v.Sess, append(slices.Clone(v.Events), in.Event)}
			next = n.seal()
		}
	case "delete":
		if s.Deleted[in.Sess] {
			// ADK's semantics (its in-memory service): deleting a session
			// that is not stored does nothing and succeeds. Of Trails'
			// Deletes racing on one session one deletes it (A1, fixed);
			// the adapter answers the others' ErrNotFound with nil.
			next = s
			break
		}
		n.Deleted[in.Sess] = true
		next = n.seal()
	}
	switch {
	case out.Unknown:
		if next != nil {
			return []any{s, next}
		}
		return []any{s}
	case out.Err != "":
		if slices.Contains(errs, out.Err) {
			return []any{s}
		}
		return nil
	case next == nil || !check():
		return nil
	}
	return []any{next}
}

func adkModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any {
			return []any{(&adkState{Shared: map[string]string{}, Vals: map[int]adkVal{}}).seal()}
		},
		Step:  adkStep,
		Equal: func(a, b any) bool { return a.(*adkState).key == b.(*adkState).key },
		Hash: func(a any) uint64 {
			h := fnv.New64a()
			h.Write([]byte(a.(*adkState).key))
			return h.Sum64()
		},
		DescribeOperation: func(in, out any) string {
			i, o := in.(adkIn), out.(adkOut)
			var call string
			switch i.Op {
			case "get":
				call = fmt.Sprintf("get(s%d) as v%d", i.Sess, i.Vid)
			case "append":
				call = fmt.Sprintf("append(v%d, %s %s)", i.Vid, i.Event, i.Delta)
			default:
				call = fmt.Sprintf("delete(s%d)", i.Sess)
			}
			switch {
			case o.Unknown:
				return call + " -> unknown"
			case o.Err != "":
				return call + " -> " + o.Err
			case i.Op == "get":
				return fmt.Sprintf("%s -> %v {%s}", call, o.Events, o.State)
			}
			return call + " -> ok"
		},
		DescribeState: func(st any) string { return st.(*adkState).key },
	}
	return nm.ToModel()
}

// adkHistory runs and checks one history; it returns its operations.
func adkHistory(t *testing.T, svc *adk.SessionService, seed uint64) int {
	t.Helper()
	ctx := context.Background()
	user := fmt.Sprintf("lc-%d", seed)
	app := fmt.Sprintf("lc-app-%d", seed)
	// The deltas an append sets. On replica groups a shared value set
	// from a tree outside the shared group is a second record behind the
	// event's (docs/scale-out.md): a get of that tree between the two
	// sees the event without its value, which this model, where an append
	// is atomic, calls not linearizable (it found it). There the appends
	// change the session's own key only.
	keys := []string{"", "k", "user:u", "app:a"}
	if clustertest.Groups() > 1 {
		keys = []string{"", "k"}
	}
	var ids [2]string
	for i := range ids {
		c, err := svc.Create(ctx, &session.CreateRequest{AppName: app, UserID: user})
		if err != nil {
			t.Fatalf("seed %d: create: %v", seed, err)
		}
		ids[i] = c.Session.ID()
	}
	var (
		mu    sync.Mutex
		hist  []porcupine.Operation
		vid   int
		start = time.Now()
	)
	now := func() int64 { return int64(time.Since(start)) }
	record := func(c int, in adkIn, out adkOut, t0, t1 int64) {
		if out.Unknown {
			t1 = math.MaxInt64 / 2
		}
		mu.Lock()
		defer mu.Unlock()
		hist = append(hist, porcupine.Operation{ClientId: c, Input: in, Output: out, Call: t0, Return: t1})
	}
	nextVid := func() int {
		mu.Lock()
		defer mu.Unlock()
		vid++
		return vid
	}
	classify := func(err error) adkOut {
		switch {
		case err == nil:
			return adkOut{}
		case errors.Is(err, trails.ErrConflict):
			return adkOut{Err: "conflict"}
		case errors.Is(err, adk.ErrNotFound):
			return adkOut{Err: "notfound"}
		}
		return adkOut{Unknown: true}
	}
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			type held struct {
				vid  int
				sess int
				s    session.Session
			}
			var vals []held
			for k := range 10 {
				i := rng.IntN(2)
				switch r := rng.IntN(100); {
				case r < 35 || len(vals) == 0 && r < 98:
					v := nextVid()
					t0 := now()
					g, err := svc.Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: ids[i]})
					t1 := now()
					out := classify(err)
					if out.Unknown {
						continue
					}
					if err == nil {
						for e := range g.Session.Events().All() {
							out.Events = append(out.Events, e.ID)
						}
						var parts []string
						for _, key := range []string{"app:a", "k", "user:u"} {
							if val, err := g.Session.State().Get(key); err == nil {
								parts = append(parts, fmt.Sprintf("%s=%v", key, val))
							}
						}
						out.State = strings.Join(parts, ",")
						vals = append(vals, held{v, i, g.Session})
					}
					record(c, adkIn{Op: "get", Sess: i, Vid: v}, out, t0, t1)
				case r < 98:
					h := vals[rng.IntN(len(vals))]
					ev := &session.Event{ID: fmt.Sprintf("e%d.%d", c, k), Author: "user", InvocationID: "inv"}
					in := adkIn{Op: "append", Vid: h.vid, Event: ev.ID, Sess: h.sess}
					if key := keys[rng.IntN(len(keys))]; key != "" {
						in.Delta = key + "=" + ev.ID
						ev.Actions.StateDelta = map[string]any{key: ev.ID}
					}
					t0 := now()
					err := svc.AppendEvent(ctx, h.s, ev)
					t1 := now()
					out := classify(err)
					record(c, in, out, t0, t1)
					if out.Unknown {
						vals = slices.DeleteFunc(vals, func(x held) bool { return x.vid == h.vid })
					}
				default:
					t0 := now()
					err := svc.Delete(ctx, &session.DeleteRequest{AppName: app, UserID: user, SessionID: ids[i]})
					t1 := now()
					record(c, adkIn{Op: "delete", Sess: i}, classify(err), t0, t1)
				}
			}
		}()
	}
	wg.Wait()
	model := adkModel()
	res, info := porcupine.CheckOperationsVerbose(model, hist, 60*time.Second)
	if res == porcupine.Illegal {
		path := fmt.Sprintf("%s/lincheck-adk-%d.html", outDir(t), seed)
		if err := porcupine.VisualizePath(model, info, path); err != nil {
			t.Errorf("visualization: %v", err)
		}
		var b strings.Builder
		slices.SortFunc(hist, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
		for _, o := range hist {
			fmt.Fprintf(&b, "  client %d [%.1f ms, %.1f ms] %s\n", o.ClientId, float64(o.Call)/1e6, float64(o.Return)/1e6,
				model.DescribeOperation(o.Input, o.Output))
		}
		t.Errorf("seed %d: the history is not linearizable\n%svisualization: %s\nreplay: TRAILS_LINCHECK_SEED=%d TRAILS_LINCHECK_HISTORIES=10 go test -run TestLinearizable .",
			seed, b.String(), path, seed)
	}
	return len(hist)
}

// outDir is $TRAILS_LINCHECK_OUT, else the test's temporary directory.
func outDir(t *testing.T) string {
	if d := os.Getenv("TRAILS_LINCHECK_OUT"); d != "" {
		if err := os.MkdirAll(d, 0o755); err == nil {
			return d
		}
	}
	return t.TempDir()
}

// TestLinearizableModel checks the model of TestLinearizable on
// hand-written histories: it must refuse an acknowledged event lost and
// two appends from one value both acknowledged, and accept their
// linearizable variants.
func TestLinearizableModel(t *testing.T) {
	get := func(c int, t0, t1 int64, vid int, events ...string) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: adkIn{Op: "get", Vid: vid}, Output: adkOut{Events: events}, Call: t0, Return: t1}
	}
	appendOp := func(c int, t0, t1 int64, vid int, ev, err string) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: adkIn{Op: "append", Vid: vid, Event: ev}, Output: adkOut{Err: err}, Call: t0, Return: t1}
	}
	tests := []struct {
		name string
		hist []porcupine.Operation
		want bool
	}{
		{"append then get", []porcupine.Operation{get(0, 0, 1, 1), appendOp(0, 2, 3, 1, "a", ""), get(1, 4, 5, 2, "a")}, true},
		{"an acknowledged event lost", []porcupine.Operation{get(0, 0, 1, 1), appendOp(0, 2, 3, 1, "a", ""), get(1, 4, 5, 2)}, false},
		{"two appends from one value", []porcupine.Operation{get(0, 0, 1, 1), get(1, 0, 1, 2),
			appendOp(0, 2, 4, 1, "a", ""), appendOp(1, 2, 4, 2, "b", "")}, false},
		{"two appends from one value, one refused", []porcupine.Operation{get(0, 0, 1, 1), get(1, 0, 1, 2),
			appendOp(0, 2, 4, 1, "a", ""), appendOp(1, 2, 4, 2, "b", "conflict"), get(2, 5, 6, 3, "a")}, true},
		{"two deletes, both nil (ADK deletes a missing session quietly)", []porcupine.Operation{
			{ClientId: 0, Input: adkIn{Op: "delete"}, Output: adkOut{}, Call: 0, Return: 2},
			{ClientId: 1, Input: adkIn{Op: "delete"}, Output: adkOut{}, Call: 0, Return: 2}}, true},
		{"a get after a delete", []porcupine.Operation{
			{ClientId: 0, Input: adkIn{Op: "delete"}, Output: adkOut{}, Call: 0, Return: 1}, get(0, 2, 3, 1)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(adkModel(), tt.hist); got != tt.want {
				t.Errorf("linearizable: got %v, want %v", got, tt.want)
			}
		})
	}
}
