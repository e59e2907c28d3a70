package render

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
)

// Info is the JSON form of a session's description (session.Info), with
// stable names: trails-admin sessions --json's rows.
type Info struct {
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

// NewInfo returns the JSON form of in.
func NewInfo(in session.Info) Info {
	return Info{ID: in.ID, Principal: in.Principal, Parent: in.ParentID, ForkedAt: in.ForkedAt,
		Branch: in.Branch, Kind: string(in.Kind), OwnTurns: in.OwnTurns, Turns: in.Turns, Created: in.Created, Tags: Tags(in.Tags),
		Cycle: in.Cycle}
}

// Tags returns tags, or an empty slice for nil, so that JSON shows [].
func Tags(tags []string) []string {
	if tags == nil {
		return []string{}
	}
	return tags
}

// Table returns a tabwriter on w with the columns every table of the
// text forms uses; the caller flushes it.
func Table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// Sessions writes infos as a table, one session a line: id, principal,
// parent and fork point ("-" for a root), branch, kind, own and total
// turns, creation time, and a TAGS column only when a session listed
// has tags (so that the listing of an untagged dataset reads as it
// always did). Every stored value is escaped. It is the zero Form's
// Sessions.
func Sessions(w io.Writer, infos []session.Info) error { return Form{}.Sessions(w, infos) }

// Sessions writes infos as Sessions does, with a TAGS column always when
// f.TagsColumn is set.
func (f Form) Sessions(w io.Writer, infos []session.Info) error {
	tagged := f.TagsColumn || slices.ContainsFunc(infos, func(in session.Info) bool { return len(in.Tags) > 0 })
	tw := Table(w)
	fmt.Fprint(tw, "ID\tPRINCIPAL\tPARENT\tFORK\tBRANCH\tKIND\tOWN\tTOTAL\tCREATED")
	if tagged {
		fmt.Fprint(tw, "\tTAGS")
	}
	fmt.Fprintln(tw)
	for _, in := range infos {
		parent, fork := "-", "-"
		if in.ParentID != "" {
			parent, fork = in.ParentID, fmt.Sprint(in.ForkedAt)
		}
		parent = termsafe.String(parent)
		if in.Cycle {
			parent += " (cycle)"
		}
		fmt.Fprintf(tw, "%s	%s	%s	%s	%s	%s	%d	%d	%s", termsafe.String(in.ID), termsafe.String(in.Principal), parent, fork,
			termsafe.String(in.Branch), termsafe.String(string(in.Kind)), in.OwnTurns, in.Turns, in.Created.Format(time.RFC3339))
		if tagged {
			tags := "-"
			if len(in.Tags) > 0 {
				tags = strings.Join(in.Tags, ",")
			}
			fmt.Fprintf(tw, "\t%s", termsafe.String(tags))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
