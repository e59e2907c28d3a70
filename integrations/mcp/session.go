package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// InfoJSON is a session's description as list_sessions and show_session
// give it: trails-admin sessions --json's fields.
type InfoJSON struct {
	ID        string    `json:"id"`
	Principal string    `json:"principal"`
	Parent    string    `json:"parent"`
	ForkedAt  int       `json:"forked_at"`
	Branch    string    `json:"branch"`
	Kind      string    `json:"kind" jsonschema:"main, branch or worker"`
	OwnTurns  int       `json:"own_turns"`
	Turns     int       `json:"turns"`
	Created   time.Time `json:"created"`
	Tags      []string  `json:"tags"`
	Cycle     bool      `json:"cycle,omitempty" jsonschema:"set on a session on a parent cycle: its own ancestor"`
}

func toInfoJSON(in session.Info) InfoJSON {
	tags := in.Tags
	if tags == nil {
		tags = []string{}
	}
	return InfoJSON{ID: in.ID, Principal: in.Principal, Parent: in.ParentID, ForkedAt: in.ForkedAt, Branch: in.Branch,
		Kind: string(in.Kind), OwnTurns: in.OwnTurns, Turns: in.Turns, Created: in.Created, Tags: tags, Cycle: in.Cycle}
}

// ListInput is the input of list_sessions.
type ListInput struct {
	Principal string   `json:"principal,omitempty" jsonschema:"only the sessions of this principal"`
	Roots     bool     `json:"roots,omitempty" jsonschema:"only root sessions, those with no parent"`
	Tags      []string `json:"tags,omitempty" jsonschema:"only the sessions that have every one of these tags"`
	Limit     int      `json:"limit,omitempty" jsonschema:"the most sessions to return, newest first (default 100, at most 1000)"`
}

// ListOutput is the result of list_sessions.
type ListOutput struct {
	Sessions []InfoJSON `json:"sessions" jsonschema:"the sessions, newest first"`
	Total    int        `json:"total" jsonschema:"how many sessions match, more than returned when limit cut the list"`
}

// Limits of list_sessions.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

// ShowInput is the input of show_session.
type ShowInput struct {
	ID   string `json:"id" jsonschema:"the session's id"`
	Last int    `json:"last,omitempty" jsonschema:"only the last N turns of the history (N >= 1), read without the turns before them"`
}

// ShowOutput is the result of show_session: trails-admin show --json's
// fields.
type ShowOutput struct {
	Session InfoJSON                   `json:"session"`
	App     string                     `json:"app,omitempty"`
	Values  map[string]json.RawMessage `json:"values,omitempty" jsonschema:"the session's state as of its last turn"`
	Fork    *ForkRecordJSON            `json:"fork" jsonschema:"how PROV records the fork that made the session; null for a root"`
	Anchors []AnchorJSON               `json:"anchors"`
	Merges  []MergeJSON                `json:"merges" jsonschema:"the merge turns the session holds"`
	From    int                        `json:"from,omitempty" jsonschema:"with last: the index of the first turn given"`
	Turns   []TurnJSON                 `json:"turns"`
}

// ForkRecordJSON is how PROV records the fork that made a session
// (trails-admin show --json's fork).
type ForkRecordJSON struct {
	Type           string `json:"type"`
	CreatedBy      string `json:"created_by"`
	Reason         string `json:"reason"`
	NextSteps      string `json:"next_steps"`
	ContextSummary string `json:"context_summary"`
	Anchor         string `json:"anchor" jsonschema:"the anchor's IRI when forked at an anchor"`
	Turn           string `json:"turn" jsonschema:"the turn's IRI when forked before a turn"`
}

// AnchorJSON is a named position of a history.
type AnchorJSON struct {
	Name    string            `json:"name"`
	Index   int               `json:"index"`
	Session string            `json:"session" jsonschema:"the session that named it"`
	State   map[string]string `json:"state"`
	Created time.Time         `json:"created"`
}

// MergeJSON is a merge turn: a fork's result merged into the session.
type MergeJSON struct {
	Turn      int            `json:"turn"`
	Child     string         `json:"child"`
	Status    string         `json:"status"`
	First     int            `json:"first"`
	Last      int            `json:"last"`
	Artifacts []ArtifactJSON `json:"artifacts"`
}

// ArtifactJSON is an artifact of a merged result: one of iri and text.
type ArtifactJSON struct {
	IRI  string `json:"iri,omitempty"`
	Text string `json:"text,omitempty"`
}

func (t *tools) addSessionTools(srv *sdk.Server) {
	addTool(srv, &sdk.Tool{Name: ToolListSessions, Annotations: readOnly,
		Description: "List stored sessions, newest first: id, principal, parent and fork point, branch, kind (main, branch, worker), own and total turns, creation time, tags."},
		t.list)
	addTool(srv, &sdk.Tool{Name: ToolShowSession, Annotations: readOnly,
		Description: "Show one session: its description, the PROV record of the fork that made it, anchors, merges, state values, and its effective history " +
			"(inherited turns included), each turn with its branch and, for an agent's structured turn, its parts (text, reasoning, tool calls and results, data), model and usage."},
		t.show)
}

func (t *tools) list(ctx context.Context, in ListInput) (ListOutput, string, error) {
	limit := in.Limit
	switch {
	case limit == 0:
		limit = defaultLimit
	case limit < 0 || limit > maxLimit:
		return ListOutput{}, "", fmt.Errorf("limit %d: want 1 to %d", in.Limit, maxLimit)
	}
	var opts []session.ListOption
	if in.Principal != "" {
		opts = append(opts, session.ByPrincipal(in.Principal))
	}
	if in.Roots {
		opts = append(opts, session.Roots())
	}
	for _, tag := range in.Tags {
		opts = append(opts, session.ByTag(tag))
	}
	infos, err := t.st.List(ctx, opts...)
	if err != nil {
		return ListOutput{}, "", err
	}
	out := ListOutput{Sessions: []InfoJSON{}, Total: len(infos)}
	for _, info := range infos[:min(limit, len(infos))] {
		out.Sessions = append(out.Sessions, toInfoJSON(info))
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPRINCIPAL\tPARENT\tFORK\tBRANCH\tKIND\tOWN\tTOTAL\tCREATED\tTAGS")
	for _, s := range out.Sessions {
		parent, fork, tags := "-", "-", "-"
		if s.Parent != "" {
			parent, fork = termsafe.String(s.Parent), fmt.Sprint(s.ForkedAt)
		}
		if s.Cycle {
			parent += " (cycle)"
		}
		if len(s.Tags) > 0 {
			tags = termsafe.String(strings.Join(s.Tags, ","))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", termsafe.String(s.ID), termsafe.String(s.Principal), parent, fork,
			termsafe.String(s.Branch), termsafe.String(s.Kind), s.OwnTurns, s.Turns, s.Created.Format(time.RFC3339), tags)
	}
	tw.Flush()
	if len(out.Sessions) < out.Total {
		fmt.Fprintf(&b, "(%d of %d sessions: give a larger limit, or a principal or tags, for the others)\n", len(out.Sessions), out.Total)
	}
	if out.Total == 0 {
		b.Reset()
		b.WriteString("no sessions\n")
	}
	return out, b.String(), nil
}

func (t *tools) show(ctx context.Context, in ShowInput) (ShowOutput, string, error) {
	if in.Last < 0 {
		return ShowOutput{}, "", fmt.Errorf("last %d: want a whole number >= 1, or none for the whole history", in.Last)
	}
	info, err := t.st.Info(ctx, in.ID)
	if err != nil {
		return ShowOutput{}, "", err
	}
	var s *session.Session
	if in.Last > 0 {
		s, err = t.st.LoadTail(ctx, in.ID, session.Tail{Last: in.Last})
	} else {
		s, err = t.st.Load(ctx, in.ID)
	}
	if err != nil {
		return ShowOutput{}, "", err
	}
	rec, err := t.forkRecord(ctx, info.ID)
	if err != nil {
		return ShowOutput{}, "", err
	}
	merges, err := t.st.Merges(ctx, info.ID)
	if err != nil {
		return ShowOutput{}, "", err
	}
	out := ShowOutput{Session: toInfoJSON(info), App: s.App, Values: s.Values, Fork: rec, Anchors: toAnchorsJSON(s.Anchors),
		Merges: toMergesJSON(merges), From: s.From, Turns: toTurnsJSON(s.Turns)}
	return out, showText(out, s), nil
}

// forkRecord returns what PROV records of the fork that made session id,
// nil for a root.
func (t *tools) forkRecord(ctx context.Context, id string) (*ForkRecordJSON, error) {
	rec, err := t.pr.ForkRecord(ctx, id)
	if errors.Is(err, prov.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &ForkRecordJSON{Type: rec.Type, CreatedBy: rec.CreatedBy, Reason: rec.Reason, NextSteps: rec.NextSteps,
		ContextSummary: rec.ContextSummary, Anchor: rec.Anchor, Turn: rec.Turn}, nil
}

func toAnchorsJSON(m map[string]session.Anchor) []AnchorJSON {
	out := make([]AnchorJSON, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		an := m[name]
		state := an.State
		if state == nil {
			state = map[string]string{}
		}
		out = append(out, AnchorJSON{Name: an.Name, Index: an.Index, Session: an.Session, State: state, Created: an.Created})
	}
	slices.SortStableFunc(out, func(x, y AnchorJSON) int { return x.Index - y.Index })
	return out
}

func toMergesJSON(recs []session.MergeRecord) []MergeJSON {
	out := make([]MergeJSON, len(recs))
	for k, r := range recs {
		arts := make([]ArtifactJSON, len(r.Artifacts))
		for i, x := range r.Artifacts {
			arts[i] = ArtifactJSON{IRI: x.IRI, Text: x.Text}
		}
		out[k] = MergeJSON{Turn: r.Index, Child: r.Child, Status: string(r.Status), First: r.First, Last: r.Last, Artifacts: arts}
	}
	return out
}

// showText renders a shown session as trails-admin show prints it: a
// header of labelled lines, then the turns; every stored value escaped.
func showText(out ShowOutput, s *session.Session) string {
	var b strings.Builder
	field := func(label, value string) {
		if value == "" {
			return
		}
		for i, l := range termsafe.Lines(value) {
			if i > 0 {
				label = ""
			}
			fmt.Fprintf(&b, "%-9s %s\n", label, l)
		}
	}
	in := out.Session
	field("session", in.ID)
	field("principal", in.Principal)
	field("app", out.App)
	field("branch", in.Branch)
	field("kind", in.Kind)
	if in.Parent != "" {
		fmt.Fprintf(&b, "%-9s %s (forked at %d, %s)\n", "parent", termsafe.String(in.Parent), in.ForkedAt, plural(s.Depth(), "ancestor"))
	}
	if r := out.Fork; r != nil {
		field("fork", fmt.Sprintf("%s, created by %s", r.Type, r.CreatedBy))
		field("anchor", r.Anchor)
		field("before", r.Turn)
		field("reason", r.Reason)
		field("intention", r.NextSteps)
		field("context", r.ContextSummary)
	}
	fmt.Fprintf(&b, "%-9s %d (%d own)\n%-9s %s\n", "turns", in.Turns, in.OwnTurns, "created", in.Created.Format(time.RFC3339))
	if len(in.Tags) > 0 {
		field("tags", strings.Join(in.Tags, ", "))
	}
	for _, an := range out.Anchors {
		fmt.Fprintf(&b, "%-9s %s at %d\n", "anchor", termsafe.String(an.Name), an.Index)
	}
	for _, m := range out.Merges {
		fmt.Fprintf(&b, "%-9s turn %d: %s %s, its turns %d-%d\n", "merge", m.Turn, termsafe.String(m.Child), termsafe.String(m.Status), m.First, m.Last)
	}
	for _, k := range slices.Sorted(maps.Keys(out.Values)) {
		fmt.Fprintf(&b, "%-9s %s\n", "values", clip(k+" = "+compactJSON(out.Values[k]), lineWidth))
	}
	if out.From > 0 {
		fmt.Fprintf(&b, "%-9s the last %s, from turn %d\n", "tail", plural(len(out.Turns), "turn"), out.From)
	}
	b.WriteString("\n")
	writeTurns(&b, s.Turns)
	return b.String()
}
