package ontology

import (
	"net/url"
	"strconv"
)

// SessionIRI returns the IRI of the session with the given id, which is also
// the IRI of the session's named graph.
func SessionIRI(id string) string { return SessionBase + url.PathEscape(id) }

// TurnIRI returns the IRI of the turn at index i in the graph of the session
// with IRI session.
func TurnIRI(session string, i int) string { return session + TurnPath + strconv.Itoa(i) }

// AnchorIRI returns the IRI of the anchor named name in the graph of the
// session with IRI session; the name is percent-encoded, so the IRI is
// always valid.
func AnchorIRI(session, name string) string { return session + AnchorPath + url.PathEscape(name) }

// AgentIRI returns the IRI of the agent acting as principal.
func AgentIRI(principal string) string { return AgentBase + url.PathEscape(principal) }

// ActivityIRI returns the IRI of an activity of the given kind ("fork",
// "detach", "deletion") with the given id.
func ActivityIRI(kind, id string) string { return ActivityBase + kind + "/" + url.PathEscape(id) }
