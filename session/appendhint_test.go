package session_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/appendhint"
	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/session"
)

// hintRecorder is a Querier that keeps each update's text and append
// hint (kg.Hint) before sending it.
type hintRecorder struct {
	*kg.Client
	texts, hints []string
}

func (q *hintRecorder) Update(ctx context.Context, u string, opts ...kg.UpdateOption) error {
	for _, kv := range kg.HintsOf(opts...) {
		if kv[0] == appendhint.Key {
			q.texts, q.hints = append(q.texts, u), append(q.hints, kv[1])
		}
	}
	return q.Client.Update(ctx, u, opts...)
}

// TestAppendHintTemplate: appendhint.Where is append.ru's WHERE clause,
// and a hint's values (appendhint.Params) bind it to exactly the
// condition of the append the hint describes, so that a replica's
// applier can send that condition as one template and its values:
// appends to a root, to a fork, after a rewind. (An append to a session
// holding no turn of its own binds $prev otherwise; its condition does
// not read it, and the applier sends its own text.)
func TestAppendHintTemplate(t *testing.T) {
	ru := session.AppendTemplate()
	if w := ru[strings.Index(ru, "WHERE {")+len("WHERE {") : strings.LastIndex(ru, "}")]; w != appendhint.Where {
		t.Fatalf("appendhint.Where is not append.ru's WHERE clause:\n%s\nappend.ru:\n%s", appendhint.Where, w)
	}
	fusekitest.Parallel(t)
	q := &hintRecorder{Client: fusekitest.New(t)}
	st := session.NewStore(q, session.WithConditionalPatch(false)) // hints ride SPARQL Updates; the conditional patch path sends none
	ctx := context.Background()
	s := session.New("hinted")
	for i := range 4 {
		s.Append("user", fmt.Sprintf("turn %d", i))
		if err := st.Persist(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	f, err := st.Fork(ctx, s.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		f.Append("user", fmt.Sprintf("fork turn %d", i))
		if err := st.Persist(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	s, _, err = st.Rewind(ctx, s.ID, 1, session.RewindOptions{Reason: "again"})
	if err != nil {
		t.Fatal(err)
	}
	s.Append("user", "after the rewind")
	if err := st.Persist(ctx, s); err != nil {
		t.Fatal(err)
	}
	bound := 0
	for i, v := range q.hints {
		h, err := appendhint.Decode(v, q.texts[i])
		if err != nil {
			t.Fatalf("hint %d: %v", i, err)
		}
		if h.Own == 0 {
			continue
		}
		got, err := kg.Bind(appendhint.Where, appendhint.Params(h))
		if want := appendhint.Span(q.texts[i], h.Cond); err != nil || got != want {
			t.Errorf("hint %d (%d own turns, fork at %d, %d rewinds): Where bound by its values is not the update's condition (%v):\n%s\nwant:\n%s", i, h.Own, h.ForkAt, h.Gen, err, got, want)
		}
		bound++
	}
	if bound < 6 {
		t.Errorf("%d appends of a turn or more carried a hint, want at least 6 (of %d hints)", bound, len(q.hints))
	}
}
