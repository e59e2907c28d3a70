package render

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// The header of a shown session: its fork record, tags, anchors, merges
// and state, as labelled lines ("label     value"), and their JSON forms.

// ForkRecord is the JSON form of the metadata PROV records of the fork
// that made a session (prov.ForkRecord), with stable names.
type ForkRecord struct {
	Type           string `json:"type"`
	CreatedBy      string `json:"created_by"`
	Reason         string `json:"reason"`
	NextSteps      string `json:"next_steps"`
	ContextSummary string `json:"context_summary"`
	Anchor         string `json:"anchor" jsonschema:"the anchor's IRI when forked at an anchor"` // "" when not forked at an anchor
	Turn           string `json:"turn" jsonschema:"the turn's IRI when forked before a turn"`    // "" when not forked before a turn
}

// NewForkRecord returns the JSON form of rec.
func NewForkRecord(rec prov.ForkRecord) *ForkRecord {
	return &ForkRecord{Type: rec.Type, CreatedBy: rec.CreatedBy, Reason: rec.Reason, NextSteps: rec.NextSteps,
		ContextSummary: rec.ContextSummary, Anchor: rec.Anchor, Turn: rec.Turn}
}

// Field writes "label     value", continuation lines indented under the
// value, each escaped (termsafe.Lines); nothing for an empty value.
func Field(w io.Writer, label, value string) {
	if value == "" {
		return
	}
	for i, l := range termsafe.Lines(value) {
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "%-9s %s\n", label, l)
	}
}

// ForkRecordText writes how a session was forked when PROV records more
// than the defaults (an explicit fork by a user at an index): the fork's
// type and creator, the anchor or turn it was forked at, its reason,
// intention and context. Nothing for nil (a root) or the defaults.
func ForkRecordText(w io.Writer, rec *ForkRecord) {
	if rec == nil || *rec == (ForkRecord{Type: prov.DefaultForkType, CreatedBy: prov.DefaultCreatedBy}) {
		return
	}
	how := fmt.Sprintf("%s, created by %s", termsafe.String(rec.Type), termsafe.String(rec.CreatedBy))
	switch {
	case rec.Anchor != "":
		name := rec.Anchor[strings.LastIndex(rec.Anchor, ontology.AnchorPath)+len(ontology.AnchorPath):]
		if n, err := url.PathUnescape(name); err == nil {
			name = n
		}
		how += ", at anchor " + termsafe.String(name)
	case rec.Turn != "":
		how += ", before turn " + termsafe.String(rec.Turn)
	}
	Field(w, "fork", how)
	Field(w, "reason", rec.Reason)
	Field(w, "intention", rec.NextSteps)
	Field(w, "context", rec.ContextSummary)
}

// Anchor is the JSON form of an anchor (session.Anchor), with stable
// names.
type Anchor struct {
	Name    string            `json:"name"`
	Index   int               `json:"index"`
	Session string            `json:"session" jsonschema:"the session that named it"` // the session that named it
	State   map[string]string `json:"state"`
	Created time.Time         `json:"created"`
}

// NewAnchor returns the JSON form of an.
func NewAnchor(an session.Anchor) Anchor {
	state := an.State
	if state == nil {
		state = map[string]string{}
	}
	return Anchor{Name: an.Name, Index: an.Index, Session: an.Session, State: state, Created: an.Created}
}

// NewAnchors returns the JSON forms of the anchors of m ordered by index,
// then name.
func NewAnchors(m map[string]session.Anchor) []Anchor {
	out := make([]Anchor, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, NewAnchor(m[name]))
	}
	slices.SortStableFunc(out, func(x, y Anchor) int { return x.Index - y.Index })
	return out
}

// TagsAndAnchors writes the tags of session info and the anchors of the
// history of s, one line each, escaped; nothing when it has none.
//
// Each line says "(not signed)": a writer's signed statements cover no
// tag or anchor, so they are the store's word (docs/verify.md, "Who can
// change what unseen").
func TagsAndAnchors(w io.Writer, info session.Info, s *session.Session) {
	if len(info.Tags) > 0 {
		fmt.Fprintf(w, "tags      %s (not signed)\n", termsafe.String(strings.Join(info.Tags, ", ")))
	}
	for _, an := range NewAnchors(s.Anchors) {
		fmt.Fprintf(w, "anchor    %s at %d", termsafe.String(an.Name), an.Index)
		if an.Session != s.ID {
			fmt.Fprintf(w, ", named by %s", termsafe.String(an.Session))
		}
		if len(an.State) > 0 {
			b, _ := json.Marshal(an.State) // keys sorted
			fmt.Fprintf(w, " %s", termsafe.String(string(b)))
		}
		fmt.Fprintln(w, " (not signed)")
	}
}

// Merge is the JSON form of a merge turn a session holds
// (session.MergeRecord), with stable names.
type Merge struct {
	Turn      int        `json:"turn"`
	Child     string     `json:"child"`
	Status    string     `json:"status"`
	First     int        `json:"first"`
	Last      int        `json:"last"`
	Artifacts []Artifact `json:"artifacts"`
}

// Artifact is the JSON form of an artifact of a merged result: one of
// IRI and Text is set.
type Artifact struct {
	IRI  string `json:"iri,omitempty"`
	Text string `json:"text,omitempty"`
}

// NewArtifacts returns the JSON forms of arts.
func NewArtifacts(arts []session.Artifact) []Artifact {
	out := make([]Artifact, len(arts))
	for i, x := range arts {
		out[i] = Artifact{IRI: x.IRI, Text: x.Text}
	}
	return out
}

// NewMerges returns the JSON forms of recs.
func NewMerges(recs []session.MergeRecord) []Merge {
	out := make([]Merge, len(recs))
	for k, r := range recs {
		out[k] = Merge{Turn: r.Index, Child: r.Child, Status: string(r.Status), First: r.First, Last: r.Last, Artifacts: NewArtifacts(r.Artifacts)}
	}
	return out
}

// Merges writes the merge turns a session holds, one line each: the
// turn, the fork's result and its artifacts (a text one quoted, with
// Go's escapes).
func Merges(w io.Writer, recs []session.MergeRecord) {
	for _, r := range recs {
		fmt.Fprintf(w, "merge     turn %d: %s, fork %s turns %d-%d", r.Index, termsafe.String(string(r.Status)), termsafe.String(r.Child), r.First, r.Last)
		for _, x := range r.Artifacts {
			if x.IRI != "" {
				fmt.Fprintf(w, ", <%s>", termsafe.String(x.IRI))
			} else {
				fmt.Fprintf(w, ", %s", strconv.Quote(x.Text)) // escapes every control and bidi character
			}
		}
		fmt.Fprintln(w)
	}
}

// Values writes a session's state (Session.Values): one
// "values    key = value" line each, by key, escaped and cut to a line.
func Values(w io.Writer, values map[string]json.RawMessage) {
	for _, k := range slices.Sorted(maps.Keys(values)) {
		fmt.Fprintf(w, "values    %s\n", Clip(k+" = "+CompactJSON(values[k]), LineWidth))
	}
}

// Shown is a session as a front end shows it: its description, its
// history as loaded, the fork record PROV holds of it (nil for a root),
// the merge turns it holds, and whether only the last turns of its
// history were loaded (Tail).
type Shown struct {
	Info    session.Info
	Session *session.Session
	Fork    *ForkRecord
	Merges  []session.MergeRecord
	Tail    bool
}

// Show writes a shown session: a header of labelled lines (id,
// principal, app, branch, kind, parent, the fork record, turns, creation
// time, tags, anchors, merges, state values, the tail loaded), an empty
// line, then its turns (f.Turns). The header is trails-admin show's, or
// with f.Brief trails-mcp's show_session's. Every stored value is
// escaped.
func (f Form) Show(w io.Writer, s Shown) error {
	info, ss := s.Info, s.Session
	if f.Brief {
		Field(w, "session", info.ID)
		Field(w, "principal", info.Principal)
		Field(w, "app", ss.App)
		Field(w, "branch", info.Branch)
		Field(w, "kind", string(info.Kind))
	} else {
		fmt.Fprintf(w, "session   %s\nprincipal %s\n", termsafe.String(info.ID), termsafe.String(info.Principal))
		if ss.App != "" {
			fmt.Fprintf(w, "app       %s\n", termsafe.String(ss.App))
		}
		fmt.Fprintf(w, "branch    %s\nkind      %s\n", termsafe.String(info.Branch), termsafe.String(string(info.Kind)))
	}
	if info.ParentID != "" {
		fmt.Fprintf(w, "parent    %s (forked at %d, %s)\n", termsafe.String(info.ParentID), info.ForkedAt, Plural(ss.Depth(), "ancestor"))
	}
	if f.Brief {
		briefForkRecord(w, s.Fork)
	} else {
		ForkRecordText(w, s.Fork)
	}
	fmt.Fprintf(w, "turns     %d (%d own)\ncreated   %s\n", info.Turns, info.OwnTurns, info.Created.Format(time.RFC3339))
	if f.Brief {
		briefTagsAnchorsMerges(w, info, ss, s.Merges)
	} else {
		TagsAndAnchors(w, info, ss)
		Merges(w, s.Merges)
	}
	Values(w, ss.Values)
	if s.Tail {
		fmt.Fprintf(w, "tail      the last %s, from turn %d\n", Plural(len(ss.Turns), "turn"), ss.From)
	}
	fmt.Fprintln(w)
	return f.Turns(w, ss.Turns)
}

// briefForkRecord writes rec whole, one Field a value: the fork's type
// and creator, the anchor's and the turn's IRIs, its reason, intention
// and context. Nothing for nil (a root).
func briefForkRecord(w io.Writer, rec *ForkRecord) {
	if rec == nil {
		return
	}
	Field(w, "fork", fmt.Sprintf("%s, created by %s", rec.Type, rec.CreatedBy))
	Field(w, "anchor", rec.Anchor)
	Field(w, "before", rec.Turn)
	Field(w, "reason", rec.Reason)
	Field(w, "intention", rec.NextSteps)
	Field(w, "context", rec.ContextSummary)
}

// briefTagsAnchorsMerges writes the tags of info, the anchors of the
// history of s (name and index) and the merge turns recs, one short line
// each, escaped.
func briefTagsAnchorsMerges(w io.Writer, info session.Info, s *session.Session, recs []session.MergeRecord) {
	if len(info.Tags) > 0 {
		Field(w, "tags", strings.Join(info.Tags, ", "))
	}
	for _, an := range NewAnchors(s.Anchors) {
		fmt.Fprintf(w, "anchor    %s at %d\n", termsafe.String(an.Name), an.Index)
	}
	for _, r := range recs {
		fmt.Fprintf(w, "merge     turn %d: %s %s, its turns %d-%d\n", r.Index, termsafe.String(r.Child), termsafe.String(string(r.Status)), r.First, r.Last)
	}
}
