package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// beforeNth is a transport that calls hook once, just before it sends the
// nth request (from 1), and sends every request on.
type beforeNth struct {
	n    int64
	seen atomic.Int64
	hook func()
}

func (b *beforeNth) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.seen.Add(1) == b.n {
		b.hook()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestLoadTorn: a Load whose session is deleted, rewound or detached
// between its chain query and its turns query answers as if it had
// started after the change: ErrNotFound for a deleted session, the
// history as it is now otherwise; never ErrCorrupt (issue 22, anomalies
// A2/A3: "N turns found, the chain says M" for data that was fine).
func TestLoadTorn(t *testing.T) {
	fusekitest.Parallel(t)
	st, _, _ := newStore(t)
	ctx := context.Background()
	for _, lean := range []bool{false, true} {
		var opts []session.LoadOption
		if lean {
			opts = append(opts, session.RawOnly())
		}
		racing := func(t *testing.T, change func(id string)) (*session.Session, error, *session.Session) {
			t.Helper()
			s := session.New("agent")
			structuredTurns(s, 4)
			mustPersist(t, st, s)
			f := mustFork(t, s, 2)
			f.Append("user", "fork's own")
			mustPersist(t, st, f)
			tr := &beforeNth{n: 2}
			tr.hook = func() { change(s.ID) }
			racer := session.NewStore(fusekitest.Client(t, kg.Config{Endpoint: fusekitest.Endpoint(t), HTTPClient: &http.Client{Transport: tr}}))
			got, err := racer.Load(ctx, s.ID, opts...)
			return got, err, s
		}
		t.Run("delete/lean="+boolString(lean), func(t *testing.T) {
			_, err, _ := racing(t, func(id string) {
				if err := st.Delete(ctx, id, session.DeleteOptions{Cascade: true}); err != nil {
					t.Error(err)
				}
			})
			if !errors.Is(err, session.ErrNotFound) {
				t.Errorf("load racing a delete of its session: got %v, want ErrNotFound", err)
			}
		})
		t.Run("rewind/lean="+boolString(lean), func(t *testing.T) {
			got, err, s := racing(t, func(id string) {
				if _, _, err := st.Rewind(ctx, id, 3, session.RewindOptions{}); err != nil {
					t.Fatal(err)
				}
			})
			if err != nil {
				t.Fatalf("load racing a rewind: %v", err)
			}
			if len(got.Turns) != 3 || got.Turns[2].Content != s.Turns[2].Content {
				t.Errorf("load racing a rewind: got %d turns, want the 3 kept", len(got.Turns))
			}
		})
	}
}

// structuredTurns appends n turns with a raw copy and a state change each.
func structuredTurns(s *session.Session, n int) {
	for i := range n {
		s.AppendTurn(session.Turn{Role: "assistant", Content: "turn " + itoa(i), Structure: &session.Structure{
			Raw:   &session.Raw{Format: "test/v1", Data: []byte(`{"i":` + itoa(i) + `}`)},
			Delta: map[string]json.RawMessage{"k": json.RawMessage(itoa(i))},
		}})
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
