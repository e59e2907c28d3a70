package ontology

import (
	"net/url"
	"strconv"
	"strings"
)

// SessionIRI returns the IRI of the session with the given id, which is also
// the IRI of the session's named graph.
func SessionIRI(id string) string { return SessionBase + url.PathEscape(id) }

// SessionID returns the id of the session whose IRI is iri (the inverse
// of SessionIRI), or iri itself when it is not a session IRI.
func SessionID(iri string) string {
	if rest, ok := strings.CutPrefix(iri, SessionBase); ok {
		if id, err := url.PathUnescape(rest); err == nil {
			return id
		}
	}
	return iri
}

// TurnIRI returns the IRI of the turn at index i in the graph of the session
// with IRI session.
func TurnIRI(session string, i int) string { return session + TurnPath + strconv.Itoa(i) }

// TurnIRIGen returns the IRI of the turn at index i that the session with
// IRI session writes in generation gen, its number of rewinds so far
// (trails:rewinds): TurnIRI for generation 0, TurnIRI followed by
// RewindSuffix and gen after the gen-th rewind, so that a turn written after
// a rewind never takes the IRI of an abandoned turn, which keeps its own in
// the archive session.
func TurnIRIGen(session string, i, gen int) string {
	if gen <= 0 {
		return TurnIRI(session, i)
	}
	return TurnIRI(session, i) + RewindSuffix + strconv.Itoa(gen)
}

// AnchorIRI returns the IRI of the anchor named name in the graph of the
// session with IRI session; the name is percent-encoded, so the IRI is
// always valid.
func AnchorIRI(session, name string) string { return session + AnchorPath + url.PathEscape(name) }

// AgentIRI returns the IRI of the agent acting as principal.
func AgentIRI(principal string) string { return AgentBase + url.PathEscape(principal) }

// ActivityIRI returns the IRI of an activity of the given kind ("fork",
// "detach", "deletion") with the given id.
func ActivityIRI(kind, id string) string { return ActivityBase + kind + "/" + url.PathEscape(id) }

// PartPath joins a turn IRI and a part index into a part IRI.
const PartPath = "/part/"

// PartIRI returns the IRI of part k of the turn with IRI turn.
func PartIRI(turn string, k int) string { return turn + PartPath + strconv.Itoa(k) }

// ToolCallIRI returns the IRI of the trails:ToolCall activity that the
// tool call part k of the turn with IRI turn requests.
func ToolCallIRI(turn string, k int) string { return PartIRI(turn, k) + "/call" }

// InvocationIRI returns the IRI of the trails:ModelInvocation that
// generated the turn with IRI turn.
func InvocationIRI(turn string) string { return turn + "/invocation" }

// AppIRI returns the IRI of the app named name.
func AppIRI(name string) string { return AppBase + url.PathEscape(name) }

// ValuePath joins a turn (or session) IRI and a change's position into the
// IRI of a trails:ValueChange.
const ValuePath = "/value/"

// ValueChangeIRI returns the IRI of change k (in key order) that the turn
// or session with IRI owner makes.
func ValueChangeIRI(owner string, k int) string { return owner + ValuePath + strconv.Itoa(k) }

// SharedValueIRI returns the IRI of the current value of key held by
// holder (an agent or app IRI): "principal/" or "app/", the holder's and
// the key's percent-encoded names.
func SharedValueIRI(holder, key string) string {
	kind, name := "app/", strings.TrimPrefix(holder, AppBase)
	if rest, ok := strings.CutPrefix(holder, AgentBase); ok {
		kind, name = "principal/", rest
	}
	return SharedValueBase + kind + name + "/" + url.PathEscape(key)
}

// LogIRI is the IRI of partition p of the log topic a replica applies
// (package cluster), the subject of its trails:appliedOffset.
func LogIRI(topic string, p int32) string {
	return LogBase + url.PathEscape(topic) + "/" + strconv.Itoa(int(p))
}

// RefusalIRI is the IRI of the marker a replica writes for the record at
// offset off of partition p of the log topic when it refuses it
// (trails:refusedIn, trails:refusedOffset): LogIRI, "/refused/" and the
// offset.
func RefusalIRI(topic string, p int32, off int64) string {
	return LogIRI(topic, p) + "/refused/" + strconv.FormatInt(off, 10)
}

// SealIRI is the IRI of the seal a replica of partition p of the log
// topic writes when a tree moves out of that log (cluster.MoveTree):
// LogIRI, "/sealed/" and the session's id as its IRI has it.
func SealIRI(topic string, p int32, session string) string {
	return LogIRI(topic, p) + "/sealed/" + url.PathEscape(session)
}
