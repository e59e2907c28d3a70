package cluster

import (
	"net/url"
	"regexp"
	"slices"

	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// ownRe matches a session's own IRI in a request's text (not an IRI
// under it): as a graph name, a subject or an object.
var ownRe = regexp.MustCompile(`<` + regexp.QuoteMeta(ontology.SessionBase) + `([^/>#]+)>`)

// routed returns the sessions of ids (those update names, sessionIDs)
// that route it: all but the references opts name (kg.References) that
// update names only through IRIs under them (a turn's, a part's, a tool
// call's). A reference named by its own IRI routes as any session does:
// as a graph it would be read or written, and as a subject or an object
// it would make the group the update goes to seem to hold it (Group).
// When no session is left, it returns ids: every session named is a
// reference, and the update routes as it would without them.
func routed(update string, ids []string, opts []kg.UpdateOption) []string {
	refs := kg.ReferencesOf(opts...)
	if len(refs) == 0 {
		return ids
	}
	own := map[string]bool{}
	for _, m := range ownRe.FindAllStringSubmatch(update, -1) {
		if id, err := url.PathUnescape(m[1]); err == nil {
			own[id] = true
		}
	}
	var out []string
	for _, id := range ids {
		if !slices.Contains(refs, id) || own[id] {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return ids
	}
	return out
}
