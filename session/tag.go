package session

import (
	"context"
	"fmt"
	"slices"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
)

// The queries of tags, read once.
var (
	uTag       = query("tag.ru")
	uUntag     = query("untag.ru")
	qListByTag = query("list-by-tag.rq")
)

// Tag adds tags to stored session id, in its graph (trails:tag). Adding a
// tag the session has changes nothing.
//
// It returns ErrInvalid for a bad id or a tag that is empty, longer than
// 128 characters or holds white space, control characters (C0, DEL, C1) or
// bidi controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C),
// which could make it print as another text (nothing is sent), ErrNotFound when the session is not stored (or not visible to a
// Store scoped to a principal), or a store error wrapping the kg error.
func (st *Store) Tag(ctx context.Context, id string, tags ...string) (err error) {
	ctx, call := telemetry.Start(ctx, "session.Tag", id)
	defer func() { call.End(err) }()
	if err := st.tag(ctx, uTag, id, tags); err != nil {
		return fmt.Errorf("tag %s: %w", shownID(id), err)
	}
	return nil
}

// Untag removes tags from stored session id. Removing a tag the session
// does not have changes nothing.
//
// It returns the errors of Tag.
func (st *Store) Untag(ctx context.Context, id string, tags ...string) (err error) {
	ctx, call := telemetry.Start(ctx, "session.Untag", id)
	defer func() { call.End(err) }()
	if err := st.tag(ctx, uUntag, id, tags); err != nil {
		return fmt.Errorf("untag %s: %w", shownID(id), err)
	}
	return nil
}

// tag runs update u (tag.ru or untag.ru) for session id and tags.
func (st *Store) tag(ctx context.Context, u, id string, tags []string) error {
	if err := checkID(id); err != nil {
		return err
	}
	rows := make([][]rdf.Term, 0, len(tags))
	for _, t := range tags {
		if err := checkLabel("tag", t); err != nil {
			return err
		}
		rows = append(rows, []rdf.Term{kg.String(t)})
	}
	if _, err := st.Info(ctx, id); err != nil {
		return err // ErrNotFound, also for another principal's session
	}
	if len(tags) == 0 {
		return nil
	}
	up, err := kg.BindTables(u, kg.Params{"s": sessionIRI(id)}, map[string]kg.Table{"tags": {Vars: []string{"tag"}, Rows: rows}})
	if err != nil {
		return err
	}
	return st.c.Update(ctx, up, kg.Idempotent())
}

// listByTag returns the sessions with every tag of tags (at least one),
// narrowed to principal p unless p is "", newest first.
func (st *Store) listByTag(ctx context.Context, tags []string, p string) ([]Info, error) {
	for _, t := range tags {
		if err := checkLabel("tag", t); err != nil {
			return nil, err
		}
	}
	q, err := bind("list-by-tag", qListByTag, kg.Params{"tag": kg.String(tags[0])})
	if err != nil {
		return nil, err
	}
	infos, err := st.infos(ctx, q)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(infos, func(in Info) bool {
		if p != "" && in.Principal != p {
			return true
		}
		for _, t := range tags[1:] {
			if !slices.Contains(in.Tags, t) {
				return true
			}
		}
		return false
	}), nil
}
