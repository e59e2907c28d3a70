package ontology

// NS is the Trails vocabulary namespace; every term defined in trails.ttl
// starts with it.
const NS = "https://w3id.org/trails/ns#"

// Ontology is the IRI of the Trails vocabulary as an owl:Ontology; terms
// point to it with rdfs:isDefinedBy.
const Ontology = "https://w3id.org/trails/ns"

// ShapesNS is the namespace of the SHACL shapes in shapes.ttl; a validation
// result's sh:sourceShape starts with it.
const ShapesNS = "https://w3id.org/trails/shapes#"

// Classes of the Trails vocabulary.
const (
	// Session is one conversation, a root or a fork (trails:Session).
	Session = NS + "Session"
	// Turn is one turn, written by the session that owns it (trails:Turn).
	Turn = NS + "Turn"
	// Fork is the activity of forking a session at a turn index
	// (trails:Fork).
	Fork = NS + "Fork"
	// Detach is the activity of materializing a fork's inherited prefix and
	// cutting its parent link (trails:Detach).
	Detach = NS + "Detach"
	// Deletion is the activity of deleting a session; its PROV records stay
	// (trails:Deletion).
	Deletion = NS + "Deletion"
)

// Properties of the Trails vocabulary.
const (
	// ParentSession links a fork to the session it was forked from
	// (trails:parentSession).
	ParentSession = NS + "parentSession"
	// ForkedAtIndex is the index from which a fork owns its turns
	// (trails:forkedAtIndex).
	ForkedAtIndex = NS + "forkedAtIndex"
	// Branch is the branch label of a session and its turns: "main" or
	// "fork-" and 8 lowercase hex digits (trails:branch).
	Branch = NS + "branch"
	// TurnSession links a turn to the session that wrote it
	// (trails:session).
	TurnSession = NS + "session"
	// Index is a turn's position in the effective history, from 0
	// (trails:index).
	Index = NS + "index"
	// Role is who speaks in a turn: "user", "assistant", ... (trails:role).
	Role = NS + "role"
	// Content is the text of a turn (trails:content).
	Content = NS + "content"
	// StagedContent holds, in a staging graph, a turn's content sent ahead
	// of the update that stores the turn (trails:stagedContent).
	StagedContent = NS + "stagedContent"
	// Created is when a session or turn was created (trails:created).
	Created = NS + "created"
	// Principal links a session to the agent acting in it
	// (trails:principal).
	Principal = NS + "principal"
	// ForkPoint is the fork index recorded on a Fork activity
	// (trails:forkPoint).
	ForkPoint = NS + "forkPoint"
	// CopiedFrom links a turn materialized by Detach to the ancestor turn
	// it copies (trails:copiedFrom).
	CopiedFrom = NS + "copiedFrom"
	// OwnTurns is how many turns a session holds in its own graph
	// (trails:ownTurns).
	OwnTurns = NS + "ownTurns"
	// HeadDigest is the digest of a session's own turns, its version for
	// compare-and-swap appends (trails:headDigest).
	HeadDigest = NS + "headDigest"
	// Digest is a turn's link in its session's hash chain: SHA-256 over
	// the digest of the turn before it and the turn's own fields
	// (trails:digest; session/chain.go has the recipe).
	Digest = NS + "digest"
	// Detached links a Detach activity to the fork it made a root
	// (trails:detached).
	Detached = NS + "detached"
	// AcrossPrincipals marks a Fork of another principal's session made
	// with explicit permission (trails:acrossPrincipals).
	AcrossPrincipals = NS + "acrossPrincipals"
)

// Anchors, tags and fork metadata (design notes 001 and 003).
const (
	// Anchor is a named position in a session's effective history
	// (trails:Anchor).
	Anchor = NS + "Anchor"
	// AnchorOf links an anchor to the session that named it
	// (trails:anchorOf).
	AnchorOf = NS + "anchorOf"
	// AnchorName is an anchor's name, unique per session
	// (trails:anchorName).
	AnchorName = NS + "anchorName"
	// AnchorIndex is the position an anchor names: the length of the
	// session's effective history when it was anchored (trails:anchorIndex).
	AnchorIndex = NS + "anchorIndex"
	// AnchorState is the state recorded with an anchor, a JSON object of
	// strings (trails:anchorState).
	AnchorState = NS + "anchorState"
	// Tag is a label on a session, for organizing sessions (trails:tag).
	Tag = NS + "tag"
	// ForkType is how a fork came about: "auto-edit" or "auto-regenerate";
	// absent means "explicit" (trails:forkType).
	ForkType = NS + "forkType"
	// CreatedBy says who initiated a fork: "system"; absent means "user"
	// (trails:createdBy).
	CreatedBy = NS + "createdBy"
	// Reason is why a fork was made, in words (trails:reason).
	Reason = NS + "reason"
	// NextSteps is what a fork is meant to do next, the intention of
	// design note 001 (trails:nextSteps).
	NextSteps = NS + "nextSteps"
	// ContextSummary summarizes the context a fork starts from
	// (trails:contextSummary).
	ContextSummary = NS + "contextSummary"
	// FromAnchor links a Fork activity to the anchor it forked at
	// (trails:fromAnchor).
	FromAnchor = NS + "fromAnchor"
	// BeforeTurn links a Fork activity to the turn it forked before: the
	// first turn the child does not inherit (trails:beforeTurn).
	BeforeTurn = NS + "beforeTurn"
)

// Merge-back of a child's result into its parent (design notes 001 and 002).
const (
	// Merge is the activity of appending a child session's result to its
	// parent as one turn (trails:Merge).
	Merge = NS + "Merge"
	// MergedInto links a Merge activity to the parent session it appended
	// the turn to (trails:mergedInto).
	MergedInto = NS + "mergedInto"
	// MergeOf links a merge turn to the child session whose result it
	// carries (trails:mergeOf).
	MergeOf = NS + "mergeOf"
	// MergeStatus is the child's result status, "completed" or "failed",
	// on a merge turn and its Merge activity (trails:mergeStatus).
	MergeStatus = NS + "mergeStatus"
	// MergeFirst is the index of the first of the child's own turns a
	// merge turn refers to (trails:mergeFirst).
	MergeFirst = NS + "mergeFirst"
	// MergeLast is the index of the last of the child's own turns a merge
	// turn refers to (trails:mergeLast).
	MergeLast = NS + "mergeLast"
	// Artifact is an artifact of a child's result on a merge turn, named
	// by its IRI (trails:artifact).
	Artifact = NS + "artifact"
	// ArtifactText is an artifact of a child's result on a merge turn,
	// given as text (trails:artifactText).
	ArtifactText = NS + "artifactText"
)

// Session lifecycle: states, expiry and cancellation flags (design note 002).
const (
	// StateChange is the activity of moving a session from one lifecycle
	// state to another (trails:StateChange).
	StateChange = NS + "StateChange"
	// State is a session's lifecycle state: "suspended", "completed",
	// "failed" or "expired"; absent means "active" (trails:state).
	State = NS + "state"
	// ExpiresAt is when a session's TTL ends; trails-admin expire marks it
	// expired after that (trails:expiresAt).
	ExpiresAt = NS + "expiresAt"
	// CancelRequested is true on a session whose ancestor ended (completed,
	// failed or expired) while it was active or suspended
	// (trails:cancelRequested).
	CancelRequested = NS + "cancelRequested"
	// CancelRequestedBy links a session flagged for cancellation to the
	// StateChange that flagged it (trails:cancelRequestedBy).
	CancelRequestedBy = NS + "cancelRequestedBy"
	// Flagged names, in the PROV graph, a session a StateChange flagged for
	// cancellation; it outlives the session (trails:flagged).
	Flagged = NS + "flagged"
	// FromState is the state a StateChange left (trails:fromState).
	FromState = NS + "fromState"
	// ToState is the state a StateChange entered (trails:toState).
	ToState = NS + "toState"
)

// Session kinds (design note 002).
const (
	// Kind is the kind of a session, fixed when it is created: "main" (a
	// root), "branch" (a fork) or "worker" (a fork that cannot be forked);
	// a session stored without it is main if a root and branch if a fork
	// (trails:kind).
	Kind = NS + "kind"
)

// Rewind without loss (design note 004).
const (
	// Rewind is the activity of making a session continue from an earlier
	// point, its abandoned turns moved, untouched, into an archive session
	// (trails:Rewind).
	Rewind = NS + "Rewind"
	// Rewinds is how many times a session was rewound, its generation: the
	// turns it writes after the k-th rewind have IRIs ending in "/r" and k
	// (trails:rewinds).
	Rewinds = NS + "rewinds"
	// RewoundFrom links an archive session made by a Rewind to the session
	// it holds the abandoned turns of (trails:rewoundFrom).
	RewoundFrom = NS + "rewoundFrom"
	// RewoundTo is the index a Rewind activity rewound its session to: the
	// new length of its history (trails:rewoundTo).
	RewoundTo = NS + "rewoundTo"
	// Reparented links a Rewind activity to a fork it moved from the
	// rewound session to the archive (trails:reparented).
	Reparented = NS + "reparented"
)

// Structured turns (issue 13): what an agent framework's event holds
// besides its text. Terms follow the OpenTelemetry GenAI semantic
// conventions where one exists (trails.ttl names each).
const (
	// StructuredTurns marks a session holding at least one turn with
	// structured fields, so that Load reads them (trails:structuredTurns).
	StructuredTurns = NS + "structuredTurns"
	// Author is the name of the agent that wrote a turn (trails:author).
	Author = NS + "author"
	// InvocationID is the id of the agent invocation a turn belongs to
	// (trails:invocationId).
	InvocationID = NS + "invocationId"
	// EventID is the framework's id of the event a turn stores (ADK's
	// Event.ID) (trails:eventId).
	EventID = NS + "eventId"
	// Metadata is a turn's metadata, a JSON object (trails:metadata).
	Metadata = NS + "metadata"
	// RawFormat names the format of a turn's raw copy (trails:rawFormat).
	RawFormat = NS + "rawFormat"
	// Raw is the framework's own bytes of a turn (trails:raw).
	Raw = NS + "raw"
	// ModelInvocation is a model call that generated a turn
	// (trails:ModelInvocation).
	ModelInvocation = NS + "ModelInvocation"
	// Model is the model that answered (trails:model).
	Model = NS + "model"
	// FinishReason is why the model stopped (trails:finishReason).
	FinishReason = NS + "finishReason"
	// InputTokens is the number of input tokens (trails:inputTokens).
	InputTokens = NS + "inputTokens"
	// OutputTokens is the number of output tokens (trails:outputTokens).
	OutputTokens = NS + "outputTokens"
	// CachedInputTokens is the number of input tokens read from a cache
	// (trails:cachedInputTokens).
	CachedInputTokens = NS + "cachedInputTokens"
	// ReasoningTokens is the number of reasoning tokens
	// (trails:reasoningTokens).
	ReasoningTokens = NS + "reasoningTokens"
	// TotalTokens is the total number of tokens (trails:totalTokens).
	TotalTokens = NS + "totalTokens"
	// Part is one part of a turn's content (trails:Part).
	Part = NS + "Part"
	// TextPart is a part holding text (trails:TextPart).
	TextPart = NS + "TextPart"
	// ReasoningPart is a part holding a model's reasoning
	// (trails:ReasoningPart).
	ReasoningPart = NS + "ReasoningPart"
	// ToolCallPart is a part holding a tool call request
	// (trails:ToolCallPart).
	ToolCallPart = NS + "ToolCallPart"
	// ToolResultPart is a part holding a tool's result
	// (trails:ToolResultPart).
	ToolResultPart = NS + "ToolResultPart"
	// DataPart is a part holding bytes or a file's IRI (trails:DataPart).
	DataPart = NS + "DataPart"
	// PartOf links a part to its turn (trails:partOf).
	PartOf = NS + "partOf"
	// PartIndex is a part's position in its turn, from 0
	// (trails:partIndex).
	PartIndex = NS + "partIndex"
	// Text is the text of a text or reasoning part (trails:text).
	Text = NS + "text"
	// ToolCall is the activity of calling a tool (trails:ToolCall).
	ToolCall = NS + "ToolCall"
	// ToolCallID is the id of a tool call (trails:toolCallId).
	ToolCallID = NS + "toolCallId"
	// ToolName is the name of the tool called (trails:toolName).
	ToolName = NS + "toolName"
	// Arguments is a tool call's arguments, JSON (trails:arguments).
	Arguments = NS + "arguments"
	// Result is a tool's result, JSON (trails:result).
	Result = NS + "result"
	// IsError marks a tool result that is an error (trails:isError).
	IsError = NS + "isError"
	// MIMEType is a data part's media type (trails:mimeType).
	MIMEType = NS + "mimeType"
	// Data is a data part's bytes (trails:data).
	Data = NS + "data"
	// DataIRI is the IRI of a data part's file (trails:dataIri).
	DataIRI = NS + "dataIri"
)

// Session state (issue 13): key/value state that turns change with a
// delta, in the scopes agents use (the session's own, its principal's,
// its app's).
const (
	// App links a session to the app it belongs to (trails:app).
	App = NS + "app"
	// AppClass is an application whose sessions share app-scoped values
	// (trails:App).
	AppClass = NS + "App"
	// Changes links a turn (or a session, for the values it starts with)
	// to a change of a value it makes (trails:changes).
	Changes = NS + "changes"
	// ValueChange is the setting or removal of one key (trails:ValueChange).
	ValueChange = NS + "ValueChange"
	// Key is the key a change sets or removes, with its scope's prefix
	// (trails:key).
	Key = NS + "key"
	// Scope is the scope of a change's key (trails:scope): ScopeSession,
	// ScopePrincipal or ScopeApp.
	Scope = NS + "scope"
	// The values of Scope.
	ScopeSession   = "session"
	ScopePrincipal = "principal"
	ScopeApp       = "app"
	// Value is the JSON value a change sets, or a shared value holds
	// (trails:value).
	Value = NS + "value"
	// AtIndex places a change of the values a session starts with before
	// the turn at that index, when not at the session's fork point
	// (trails:atIndex; Detach writes it).
	AtIndex = NS + "atIndex"
	// Removed marks a change that removes its key (trails:removed).
	Removed = NS + "removed"
	// SharedValue is the current value of a principal's or an app's key
	// (trails:SharedValue), in ValuesGraph.
	SharedValue = NS + "SharedValue"
	// ValueOf links a shared value to the principal's agent or the app
	// that holds it (trails:valueOf).
	ValueOf = NS + "valueOf"
	// ChangedAt is when the store applied the change a shared value holds
	// (trails:changedAt): the store's clock, not a turn's creation time.
	ChangedAt = NS + "changedAt"
	// SharedAt marks, in ValuesGraph, a trails:ValueChange the store has
	// applied to its shared value, with the store's time (trails:sharedAt):
	// a change is applied at most once.
	SharedAt = NS + "sharedAt"
	// FencedAt, in FencesGraph, says that the request whose gate graph is
	// its subject may no longer apply, and since when (trails:fencedAt).
	FencedAt = NS + "fencedAt"
	// Applied, in a receipt graph (StagingBase and a uuid) of a group
	// commit request, says that the request applied the write whose ack
	// graph is its object (trails:applied): what that write learns its
	// outcome from.
	Applied = NS + "applied"
	// AppliedOffset, in ReplicaGraph, is the offset of the last record of
	// a log partition (its subject, LogIRI) that a replica applied
	// (trails:appliedOffset), written in the same transaction as the
	// records it counts.
	AppliedOffset = NS + "appliedOffset"
	// RefusedIn, in ReplicaGraph, links a refusal marker (RefusalIRI) to
	// the log partition whose record the replica refused
	// (trails:refusedIn). The applier writes a marker in the transaction
	// that moves its AppliedOffset past the refused record, and in no
	// other: the dataset alone says whether a record it passed applied.
	RefusedIn = NS + "refusedIn"
	// RefusedOffset is the offset of the refused record
	// (trails:refusedOffset).
	RefusedOffset = NS + "refusedOffset"
	// RefusalStatus is the HTTP status the replica's store answered to the
	// record (trails:refusalStatus).
	RefusalStatus = NS + "refusalStatus"
	// RefusalMessage is the store's answer to the record, at most 2 KB
	// (trails:refusalMessage).
	RefusalMessage = NS + "refusalMessage"
	// Group, in ReplicaGraph, is the replica group (0, 1, …) of a sharded
	// cluster (cluster.Sharded) whose log holds the session that is its
	// subject (trails:group): fixed when the session's tree was created,
	// the same for every session of a tree.
	Group = NS + "group"
	// PendingShare, in ReplicaGraph, is an outbox entry of a sharded
	// cluster (cluster.Sharded): its subject is a value change (of an
	// app: or user: key) a session of a group other than the group of
	// shared values stored, its value the marked share-value operation
	// that sets the shared value from it in the group of shared values
	// (trails:pendingShare). Written with the change, removed once that
	// operation applied.
	PendingShare = NS + "pendingShare"
	// SealedIn, in ReplicaGraph, links a seal (SealIRI) to the log
	// partition whose appliers refuse every later record naming its
	// session (trails:sealedIn): cluster.MoveTree seals a tree before it
	// copies the tree to another replica group.
	SealedIn = NS + "sealedIn"
	// SealedSession is the session a seal is about (trails:sealedSession).
	SealedSession = NS + "sealedSession"
	// MovedTo is the replica group a sealed session's tree moved to
	// (trails:movedTo), which a refusal names so that writers re-send
	// there.
	MovedTo = NS + "movedTo"

	// VerifiedTurns, in VerifiedGraph, is the own turn count of the head
	// a session last verified at (trails:verifiedTurns).
	VerifiedTurns = NS + "verifiedTurns"
	// VerifiedHead is that head's digest (trails:verifiedHead).
	VerifiedHead = NS + "verifiedHead"
	// VerifiedChain is that head's chain digest (trails:verifiedChain).
	VerifiedChain = NS + "verifiedChain"
	// VerifiedEntry names the witness entry that signed that head,
	// "origin/index" (trails:verifiedEntry).
	VerifiedEntry = NS + "verifiedEntry"
	// VerifiedAt is when verify found the session at that head
	// (trails:verifiedAt).
	VerifiedAt = NS + "verifiedAt"
)

// Terms returns the IRIs of all classes and properties defined in trails.ttl,
// in a new slice on each call.
func Terms() []string {
	return []string{
		Session, Turn, Fork, Detach, Deletion,
		ParentSession, ForkedAtIndex, Branch, TurnSession, Index, Role,
		Content, StagedContent, Created, Principal, ForkPoint, CopiedFrom, OwnTurns, HeadDigest, Digest, Detached, AcrossPrincipals,
		Anchor, AnchorOf, AnchorName, AnchorIndex, AnchorState, Tag,
		ForkType, CreatedBy, Reason, NextSteps, ContextSummary, FromAnchor, BeforeTurn,
		Kind,
		Merge, MergedInto, MergeOf, MergeStatus, MergeFirst, MergeLast, Artifact, ArtifactText,
		StateChange, State, ExpiresAt, CancelRequested, CancelRequestedBy, Flagged, FromState, ToState,
		Rewind, Rewinds, RewoundFrom, RewoundTo, Reparented,
		StructuredTurns, Author, InvocationID, EventID, Metadata, RawFormat, Raw,
		ModelInvocation, Model, FinishReason, InputTokens, OutputTokens, CachedInputTokens, ReasoningTokens, TotalTokens,
		Part, TextPart, ReasoningPart, ToolCallPart, ToolResultPart, DataPart, PartOf, PartIndex, Text,
		ToolCall, ToolCallID, ToolName, Arguments, Result, IsError, MIMEType, Data, DataIRI,
		App, AppClass, Changes, ValueChange, Key, Scope, Value, Removed, AtIndex,
		SharedValue, ValueOf, ChangedAt, SharedAt, FencedAt, Applied, AppliedOffset,
		RefusedIn, RefusedOffset, RefusalStatus, RefusalMessage, Group, PendingShare,
		SealedIn, SealedSession, MovedTo,
		VerifiedTurns, VerifiedHead, VerifiedChain, VerifiedEntry, VerifiedAt,
	}
}

// Named graphs Trails writes besides one graph per session (whose IRI is the
// session IRI).
const (
	// ProvGraph holds the PROV records of forks, detaches and deletions.
	ProvGraph = "https://w3id.org/trails/graph/prov"
	// OntologyGraph holds the vocabulary and the SHACL shapes.
	OntologyGraph = "https://w3id.org/trails/graph/ontology"
	// ValuesGraph holds the current values of principals' and apps' keys
	// (trails:SharedValue).
	ValuesGraph = "https://w3id.org/trails/graph/values"
	// FencesGraph holds the fences of writes whose answer was lost
	// (trails:fencedAt): a gate graph IRI (under StagingBase) and the time
	// a writer fenced it, so that the request carrying that gate fails if
	// it reaches the store later. Entries appear only after lost answers;
	// one older than the longest time a request can take (the kg client's
	// Timeout times its MaxAttempts, and the store's own timeout) fences
	// nothing any more and may be removed. It is no session's graph:
	// export, check and list leave it alone.
	FencesGraph = "https://w3id.org/trails/graph/fences"
	// ReplicaGraph holds, in a replica of a replicated log (package
	// cluster), how far it applied each log partition
	// (trails:appliedOffset) and which records it refused (RefusedIn). It
	// is no session's graph: export, check and
	// list leave it alone.
	ReplicaGraph = "https://w3id.org/trails/graph/replica"
	// VerifiedGraph holds the marks trails-admin verify --mark writes
	// (admin.Verify): per session, the head it last verified against the
	// witness (trails:verifiedTurns, trails:verifiedHead, ...). A mark is
	// a convenience for SPARQL auditors, not a proof: anyone with the
	// store's credentials can write it. It is no session's graph: export,
	// check and list leave it alone.
	VerifiedGraph = "https://w3id.org/trails/graph/verified"
)

// Bases of the resource IRIs Trails mints.
const (
	// SessionBase followed by a uuid is a session IRI, which is also the
	// IRI of the session's named graph.
	SessionBase = "https://w3id.org/trails/id/session/"
	// TurnPath joins a session IRI and a turn index into a turn IRI:
	// session IRI + TurnPath + index.
	TurnPath = "/turn/"
	// RewindSuffix and a generation k follow the turn IRI of a turn written
	// after its session's k-th rewind (TurnIRIGen).
	RewindSuffix = "/r"
	// AnchorPath joins a session IRI and a percent-encoded anchor name into
	// an anchor IRI: session IRI + AnchorPath + name.
	AnchorPath = "/anchor/"
	// AgentBase followed by the percent-encoded principal is an agent IRI.
	AgentBase = "https://w3id.org/trails/id/agent/"
	// AppBase followed by the percent-encoded app name is an app IRI.
	AppBase = "https://w3id.org/trails/id/app/"
	// LogBase followed by a percent-encoded topic, "/" and a partition
	// number is the IRI of a log partition (LogIRI).
	LogBase = "https://w3id.org/trails/id/log/"
	// SharedValueBase is where the IRIs of shared values begin
	// (SharedValueIRI).
	SharedValueBase = "https://w3id.org/trails/id/value/"
	// StagingBase followed by a uuid (version 7: it holds the time the
	// graph was made) is the IRI of a staging graph: large turn contents
	// Persist sends through the Graph Store Protocol ahead of the update
	// that copies them into a session graph and drops the staging graph
	// (trails:stagedContent).
	StagingBase = "https://w3id.org/trails/id/staging/"
	// ActivityBase followed by a kind and a uuid is the IRI of a Fork,
	// Detach, Deletion, Merge or StateChange activity (ActivityIRI).
	ActivityBase = "https://w3id.org/trails/id/activity/"
)

// RDF, RDFS and Dublin Core terms.
const (
	// RDFType is rdf:type.
	RDFType = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
	// RDFSLabel is rdfs:label.
	RDFSLabel = "http://www.w3.org/2000/01/rdf-schema#label"
	// RDFSComment is rdfs:comment.
	RDFSComment = "http://www.w3.org/2000/01/rdf-schema#comment"
	// DCTIdentifier is dcterms:identifier, the plain id string of a
	// session or an agent.
	DCTIdentifier = "http://purl.org/dc/terms/identifier"
)

// XML Schema datatypes of the literals Trails writes.
const (
	// XSDString is xsd:string.
	XSDString = "http://www.w3.org/2001/XMLSchema#string"
	// XSDInteger is xsd:integer.
	XSDInteger = "http://www.w3.org/2001/XMLSchema#integer"
	// XSDDateTime is xsd:dateTime.
	XSDDateTime = "http://www.w3.org/2001/XMLSchema#dateTime"
	// XSDBase64Binary is xsd:base64Binary, the datatype of bytes.
	XSDBase64Binary = "http://www.w3.org/2001/XMLSchema#base64Binary"
	// XSDBoolean is xsd:boolean.
	XSDBoolean = "http://www.w3.org/2001/XMLSchema#boolean"
	// RDFJSON is rdf:JSON, the datatype of JSON values (RDF 1.2).
	RDFJSON = "http://www.w3.org/1999/02/22-rdf-syntax-ns#JSON"
)

// PROV-O terms of the records Trails writes in ProvGraph.
const (
	// ProvNS is the PROV-O namespace.
	ProvNS = "http://www.w3.org/ns/prov#"
	// ProvEntity is prov:Entity.
	ProvEntity = ProvNS + "Entity"
	// ProvActivity is prov:Activity.
	ProvActivity = ProvNS + "Activity"
	// ProvAgent is prov:Agent.
	ProvAgent = ProvNS + "Agent"
	// ProvWasDerivedFrom is prov:wasDerivedFrom (fork to parent).
	ProvWasDerivedFrom = ProvNS + "wasDerivedFrom"
	// ProvGenerated is prov:generated (a Rewind activity to the archive
	// session it made).
	ProvGenerated = ProvNS + "generated"
	// ProvWasGeneratedBy is prov:wasGeneratedBy (fork to its Fork
	// activity, copied turn to its Detach activity).
	ProvWasGeneratedBy = ProvNS + "wasGeneratedBy"
	// ProvWasAttributedTo is prov:wasAttributedTo.
	ProvWasAttributedTo = ProvNS + "wasAttributedTo"
	// ProvUsed is prov:used (activity to the session it read).
	ProvUsed = ProvNS + "used"
	// ProvInvalidated is prov:invalidated (Deletion to the deleted session).
	ProvInvalidated = ProvNS + "invalidated"
	// ProvWasAssociatedWith is prov:wasAssociatedWith (activity to agent).
	ProvWasAssociatedWith = ProvNS + "wasAssociatedWith"
	// ProvStartedAtTime is prov:startedAtTime.
	ProvStartedAtTime = ProvNS + "startedAtTime"
	// ProvEndedAtTime is prov:endedAtTime.
	ProvEndedAtTime = ProvNS + "endedAtTime"
)

// SHACL terms of the validation reports Fuseki returns.
const (
	// SHNS is the SHACL namespace.
	SHNS = "http://www.w3.org/ns/shacl#"
	// SHValidationReport is sh:ValidationReport.
	SHValidationReport = SHNS + "ValidationReport"
	// SHConforms is sh:conforms (xsd:boolean on the report).
	SHConforms = SHNS + "conforms"
	// SHResult is sh:result (report to each sh:ValidationResult).
	SHResult = SHNS + "result"
	// SHFocusNode is sh:focusNode, the resource that failed.
	SHFocusNode = SHNS + "focusNode"
	// SHResultPath is sh:resultPath, the property that failed.
	SHResultPath = SHNS + "resultPath"
	// SHValue is sh:value, the offending value, if any.
	SHValue = SHNS + "value"
	// SHResultMessage is sh:resultMessage, the message for an operator.
	SHResultMessage = SHNS + "resultMessage"
	// SHResultSeverity is sh:resultSeverity.
	SHResultSeverity = SHNS + "resultSeverity"
	// SHSourceShape is sh:sourceShape, the shape that failed.
	SHSourceShape = SHNS + "sourceShape"
)
