package telemetry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/trails-kg/trails/internal/telemetry"
)

func TestQueryName(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"embedded", "# append: add turns to session $s\nPREFIX x: <urn:x>", "append"},
		{"dashes", "# verify-append: whether", "verify-append"},
		{"no comment", "PREFIX x: <urn:x>\nASK {}", ""},
		{"prose", "# this is prose: not a name", ""},
		{"upper", "# Append: no", ""},
		{"empty name", "# : no", ""},
		{"no colon", "# append", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := telemetry.QueryName(tc.text); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestErrorType(t *testing.T) {
	errA, errB := errors.New("pkg: a"), errors.New("up: b")
	telemetry.RegisterErrors(errA)
	telemetry.RegisterErrors(errB)
	both := errors.Join(errA, errB)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"registered last first", both, "up: b"},
		{"one", errA, "pkg: a"},
		{"context", context.Canceled, "context canceled"},
		{"other", errors.New("x"), "_OTHER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := telemetry.ErrorType(tc.err); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// BenchmarkNoProvider measures what the instrumentation of one exported
// call making one store request costs when the program installs no
// provider: the floor a lone append pays (it makes one or two requests).
func BenchmarkNoProvider(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		cctx, call := telemetry.Start(ctx, "session.Persist", "01a21eff-0457-72ea-b74a-fd6190b89619")
		rctx, req := telemetry.StartRequest(cctx, "fuseki", "update", "# append: ...", "http://127.0.0.1:3030/trails/update")
		telemetry.Committed(rctx)
		req.End(rctx, nil)
		call.End(nil)
	}
}

// BenchmarkNoProviderSend measures what the instrumentation of one write
// through the log (the cluster profile) costs with no provider installed:
// its span, the send's duration and, on a replica, the applier's record
// count and request duration.
func BenchmarkNoProviderSend(b *testing.B) {
	ctx := context.Background()
	r := telemetry.NewReplica("trails", "http://127.0.0.1:3131/trails")
	b.ReportAllocs()
	for b.Loop() {
		sctx, send := telemetry.StartSend(ctx, "trails", "update", "# append: ...", 4096)
		send.Sent(sctx, 42, nil)
		send.End(nil)
		start := r.StartApply(ctx)
		r.Records(ctx, 1, 0)
		r.ApplyDone(ctx, start, nil)
	}
}
