package exit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trails-kg/trails/internal/exit"
)

// TestCode: each kind of error has its code, wrapped or not.
func TestCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, exit.OK},
		{"usage", fmt.Errorf("parse: %w", exit.Usagef("-x %d", 1)), exit.Usage},
		{"interrupted", fmt.Errorf("run: %w", context.Canceled), exit.Interrupted},
		{"failure", errors.New("boom"), exit.Failure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exit.Code(tt.err); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
	if got, want := exit.Usagef("-x %d", 1).Error(), "-x 1"; got != want {
		t.Errorf("message: got %q, want %q", got, want)
	}
}

// TestReport: a usage error says how to get the usage; another error is
// one line; nil writes nothing.
func TestReport(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"usage", exit.Usagef("bad -x"), "cmd: bad -x\nRun \"cmd -h\" for the usage.\n"},
		{"failure", errors.New("boom"), "cmd: boom\n"},
		{"nil", nil, ""},
	} {
		var b strings.Builder
		if err := exit.Report(&b, "cmd", tt.err); err != tt.err {
			t.Errorf("%s: returned %v, want %v", tt.name, err, tt.err)
		}
		if b.String() != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, b.String(), tt.want)
		}
	}
}
