package exit_test

import (
	"context"
	"errors"
	"fmt"
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
