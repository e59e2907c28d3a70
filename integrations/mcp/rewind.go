package mcp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// RewindInput is the input of rewind_session.
type RewindInput struct {
	ID     string `json:"id" jsonschema:"the session to rewind"`
	To     int    `json:"to" jsonschema:"keep the turns with index < to: the session's new length"`
	Reason string `json:"reason,omitempty" jsonschema:"why, recorded in PROV"`
	By     string `json:"by,omitempty" jsonschema:"the principal PROV records as the one who rewound (default: the session's)"`
}

// RewindOutput is the result of rewind_session (trails-admin rewind
// --json's fields).
type RewindOutput struct {
	Session    string   `json:"session"`
	Archive    string   `json:"archive" jsonschema:"the new fork at to that holds the turns moved out of the session"`
	To         int      `json:"to"`
	Moved      int      `json:"moved" jsonschema:"how many turns moved into the archive"`
	Anchors    []string `json:"anchors" jsonschema:"the anchors moved into the archive"`
	Reparented []string `json:"reparented" jsonschema:"the forks re-parented to the archive"`
}

func (t *tools) addRewindTool(srv *sdk.Server) {
	addTool(srv, &sdk.Tool{Name: ToolRewind, Annotations: additive,
		Description: "Make a session continue from turn 'to': its later turns move, untouched, into a new archive fork (nothing is deleted), " +
			"forks made beyond 'to' follow them, and PROV records the rewind, in one atomic step. Needs write access to the store."},
		t.rewind)
}

func (t *tools) rewind(ctx context.Context, in RewindInput) (RewindOutput, string, error) {
	if in.To < 0 {
		return RewindOutput{}, "", fmt.Errorf("to %d: want a whole number >= 0, the number of turns to keep", in.To)
	}
	_, r, err := t.st.Rewind(ctx, in.ID, in.To, session.RewindOptions{Reason: in.Reason, By: in.By})
	if err != nil {
		return RewindOutput{}, "", err
	}
	out := RewindOutput{Session: in.ID, Archive: r.Archive, To: r.To, Moved: r.Moved, Anchors: nonNil(r.Anchors), Reparented: nonNil(r.Reparented)}
	var b strings.Builder
	archive := termsafe.String(r.Archive)
	fmt.Fprintf(&b, "rewound %s to %s; archive %s holds the %s after them\n", termsafe.String(in.ID), render.Plural(r.To, "turn"), archive, render.Plural(r.Moved, "abandoned turn"))
	for _, name := range r.Anchors {
		fmt.Fprintf(&b, "  moved anchor %s to the archive\n", termsafe.String(name))
	}
	for _, f := range r.Reparented {
		fmt.Fprintf(&b, "  re-parented fork %s to the archive\n", termsafe.String(f))
	}
	return out, b.String(), nil
}

// nonNil returns s, or an empty slice for nil, so that JSON shows [].
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
