package adk

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/knakk/rdf"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/genai"

	"github.com/trails-kg/trails/integrations/adk/adkcore"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	trails "github.com/trails-kg/trails/session"
)

// How artifacts are kept. ADK keys an artifact by app name, user id,
// session id and file name (a name starting "user:" by app name and user
// id alone, shared by the user's sessions), and numbers its versions.
// Each session's artifacts are an artifact log: a Trails session of the
// user in the app, apart from the ADK session (whose history a save would
// otherwise move under the runner, which appends to the value it holds
// with a compare and swap; and ADK saves artifacts of sessions it never
// created, and user-scoped ones of none). A save is a turn of the log
// with the artifact as a data part (or a text part), its version and
// MIME type in the turn's metadata (key "adk.artifact"), the agent as
// author, the invocation, the genai part's other fields as a raw copy;
// in PROV, the turn is a prov:Entity that prov:wasRevisionOf the file's
// version before it and, when a tool saved it, prov:wasGeneratedBy that
// tool's call (the trails:ToolCall of the ADK session's event that
// called it). A delete is a turn too, naming the versions it hides: the
// bytes stay in the log, as every turn of Trails does (deleting the log's
// Trails session removes them, and with them the session's artifacts for
// good: Trails does not take a deleted id again). A version number is
// never given twice.

// Artifact log keys and formats.
const (
	// ArtifactRawFormat is the format of a saved version's raw copy: the
	// genai part's JSON without the bytes and text its parts hold.
	ArtifactRawFormat = "adk.artifact/v2"
	// tagArtifacts marks the artifact logs.
	tagArtifacts = "adk.artifacts"
	// metaArtifact is the metadata key of a log turn.
	metaArtifact = "adk.artifact"
	// roleArtifact is the role of a log turn.
	roleArtifact = "artifact"
	// userScope starts the names of user-scoped artifacts (ADK's rule).
	userScope = "user:"
)

// artifactSpace is the UUIDv5 namespace of artifact log ids.
var artifactSpace = uuid.MustParse("3a7e0c55-94d1-4e0b-b7a2-6c1f0d8e2b49")

var (
	//go:embed queries/artifacts.rq
	qArtifacts string
	//go:embed queries/artifact-call.rq
	qArtifactCall string
	//go:embed queries/artifact-prov.ru
	uArtifactProv string
)

// ArtifactService is an ADK artifact.Service over a Trails store: each
// session's artifacts (and each user's user-scoped ones) are the turns of
// an artifact log, a Trails session of the user, each saved version a
// data part, recorded in PROV. It holds no state and is safe for
// concurrent use; saves racing on one log are each retried, as ADK
// allows, and each gets its own version.
type ArtifactService struct {
	c  trails.Querier
	st *trails.Store
}

var _ artifact.Service = (*ArtifactService)(nil)

// ArtifactOption configures an ArtifactService.
type ArtifactOption func(*artifactConfig)

type artifactConfig struct{ storeOpts []trails.StoreOption }

// WithArtifactStoreOptions passes opts to session.NewStore, the store of
// the artifact logs: session.WithSigning makes it sign the head of each
// log a save or a delete appends to, so that the logs verify
// (docs/verify.md). The PROV record of a version (prov:wasRevisionOf,
// prov:wasGeneratedBy), written beside its turn after it, is in no
// statement.
func WithArtifactStoreOptions(opts ...trails.StoreOption) ArtifactOption {
	return func(c *artifactConfig) { c.storeOpts = append(c.storeOpts, opts...) }
}

// NewArtifactService returns an ArtifactService over the dataset c
// reaches (a *kg.Client), configured by opts.
func NewArtifactService(c trails.Querier, opts ...ArtifactOption) *ArtifactService {
	var cfg artifactConfig
	for _, o := range opts {
		o(&cfg)
	}
	return &ArtifactService{c: c, st: trails.NewStore(c, cfg.storeOpts...)}
}

// logKey names an artifact log: the user's in app for one session, or for
// the user-scoped artifacts when session is empty.
type logKey struct{ app, user, session string }

// keyOf returns the log of file name of session in app of user.
func keyOf(app, user, session, name string) logKey {
	if strings.HasPrefix(name, userScope) {
		session = ""
	}
	return logKey{app, user, session}
}

// id returns the Trails id of log k.
func (k logKey) id() string {
	name, _ := json.Marshal([]string{"adk.artifacts", k.app, k.user, k.session}) // unambiguous
	return uuid.NewSHA1(artifactSpace, name).String()
}

// record is what a log turn's metadata says: a version of a file saved,
// or versions of it deleted.
type record struct {
	File     string  `json:"file"`
	Version  int64   `json:"version,omitempty"`
	MIMEType string  `json:"mimeType,omitempty"`
	Session  string  `json:"session,omitempty"` // the ADK session saving it
	CallID   string  `json:"functionCallId,omitempty"`
	Deleted  []int64 `json:"deleted,omitempty"`
}

// version is a saved version as the log records it.
type version struct {
	record
	turn    string // the turn's IRI
	created time.Time
}

// file is what a log holds of one file: its versions not deleted, oldest
// first, the highest version ever saved and its turn's IRI.
type file struct {
	live     []version
	last     int64
	lastTurn string
}

// find returns version v of f (the latest when v is 0).
func (f file) find(v int64) (version, bool) {
	for i := len(f.live) - 1; i >= 0; i-- {
		if v == 0 || f.live[i].Version == v {
			return f.live[i], true
		}
	}
	return version{}, false
}

// logState is what the logs read hold: files by name, and each log's
// turn count.
type logState struct {
	files map[string]*file
	turns map[string]int // log id → number of turns
}

// read returns what logs hold.
func (a *ArtifactService) read(ctx context.Context, logs ...logKey) (*logState, error) {
	rows := make([][]rdf.Term, len(logs))
	for i, k := range logs {
		rows[i] = []rdf.Term{kg.MustIRI(ontology.SessionIRI(k.id()))}
	}
	q, err := kg.BindTables(qArtifacts, nil, map[string]kg.Table{"logs": {Vars: []string{"log"}, Rows: rows}})
	if err != nil {
		return nil, err
	}
	res, err := a.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	ls := &logState{files: map[string]*file{}, turns: map[string]int{}}
	for _, row := range res.Solutions {
		i, err := row.Int("i")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", trails.ErrCorrupt, err)
		}
		created, err := row.Time("created")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", trails.ErrCorrupt, err)
		}
		log := ontology.SessionID(row.String("log"))
		ls.turns[log] = max(ls.turns[log], i+1)
		m, ok := row.Literal("meta")
		if !ok {
			continue // a turn another client wrote
		}
		var meta map[string]json.RawMessage
		var r record
		if err := json.Unmarshal([]byte(m), &meta); err != nil {
			return nil, fmt.Errorf("%w: metadata of %s: %v", trails.ErrCorrupt, row.String("turn"), err)
		}
		if m, ok := meta[metaArtifact]; !ok {
			continue // a turn another client wrote
		} else if err := json.Unmarshal(m, &r); err != nil || r.File == "" {
			return nil, fmt.Errorf("%w: artifact record of %s: %v", trails.ErrCorrupt, row.String("turn"), err)
		}
		f := ls.files[r.File]
		if f == nil {
			f = &file{}
			ls.files[r.File] = f
		}
		if r.Deleted != nil {
			f.live = slices.DeleteFunc(f.live, func(v version) bool { return slices.Contains(r.Deleted, v.Version) })
			continue
		}
		f.live = append(f.live, version{record: r, turn: row.String("turn"), created: created})
		if r.Version > f.last {
			f.last, f.lastTurn = r.Version, row.String("turn")
		}
	}
	return ls, nil
}

// checkRequest returns ErrInvalid for a request that is nil or that
// ADK's own validation (validate, called only when it is not nil)
// refuses.
func checkRequest(op string, isNil bool, validate func() error) error {
	if isNil {
		return fmt.Errorf("%s: %w: nil request", op, ErrInvalid)
	}
	if err := validate(); err != nil {
		return fmt.Errorf("%s: %w: %v", op, ErrInvalid, err)
	}
	return nil
}

// Save stores req.Part as the next version of the file (req.Version when
// set: a version above every version the file ever had) and returns its
// version, 1 for a file's first. A tool's save (ctx is ADK's tool
// context) records the invocation, the agent and the function call, and
// links the version in PROV to that call; each version is linked to the
// one before it (prov:wasRevisionOf). The log is created with the first
// save: the session need not be stored.
//
// It returns ErrInvalid for a request ADK's validation refuses, a
// negative version, or a part or user id Trails cannot store (nothing is
// stored), ErrVersionTaken when
// req.Version is not above every version of the file, session.ErrConflict
// of Trails when other saves kept winning the race for the next version
// (retry), or a store error.
func (a *ArtifactService) Save(ctx context.Context, req *artifact.SaveRequest) (_ *artifact.SaveResponse, err error) {
	adkCtx := ctx // ADK's own context (agent, invocation, tool call): the span's wraps it
	ctx, call := telemetry.Start(ctx, "adk.ArtifactService.Save", "")
	defer func() { call.End(err) }()
	if req != nil {
		call.SetSession(req.SessionID)
	}
	if err := checkRequest("save artifact", req == nil, func() error { return req.Validate() }); err != nil {
		return nil, err
	}
	if req.Version < 0 {
		return nil, fmt.Errorf("save artifact %s: %w: version %d", req.FileName, ErrInvalid, req.Version)
	}
	k := keyOf(req.AppName, req.UserID, req.SessionID, req.FileName)
	r := record{File: req.FileName, Session: req.SessionID, MIMEType: mimeOf(req.Part)}
	turn, err := artifactTurn(adkCtx, r, req.Part)
	if err != nil {
		return nil, fmt.Errorf("save artifact %s: %w", req.FileName, err)
	}
	for range 5 {
		var v version
		var prev string
		v, prev, err = a.save(ctx, k, req.Version, turn)
		if err == nil {
			if err := a.prov(ctx, k, v, prev); err != nil {
				return nil, fmt.Errorf("save artifact %s: version %d saved, its provenance not: %w", req.FileName, v.Version, err)
			}
			return &artifact.SaveResponse{Version: v.Version}, nil
		}
		if !errors.Is(err, trails.ErrConflict) && !errors.Is(err, trails.ErrExists) {
			break
		}
	}
	if errors.Is(err, trails.ErrInvalid) { // a user id Trails cannot take as a principal: nothing sent
		err = fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil, fmt.Errorf("save artifact %s: %w", req.FileName, err)
}

// save appends turn to log k as the next version of its file (want when
// not 0) and returns the version with its turn's IRI, and the IRI of the
// turn of the version before it ("" for none); ErrConflict or ErrExists
// of Trails when another writer changed the log meanwhile.
func (a *ArtifactService) save(ctx context.Context, k logKey, want int64, turn trails.Turn) (version, string, error) {
	id := k.id()
	ts, err := a.st.LoadTail(ctx, id, trails.Tail{Last: 1})
	switch {
	case errors.Is(err, trails.ErrNotFound):
		ts = nil
	case err != nil:
		return version{}, "", err
	case ts.Principal != k.user || ts.App != k.app:
		return version{}, "", fmt.Errorf("%w: artifact log %s is not %s's of %s", trails.ErrCorrupt, id, k.user, k.app)
	}
	ls, err := a.read(ctx, k)
	if err != nil {
		return version{}, "", err
	}
	if ts != nil && ls.turns[id] != ts.From+len(ts.Turns) {
		return version{}, "", fmt.Errorf("%w: the log changed while it was read", trails.ErrConflict)
	}
	x := *turn.Structure
	var r record
	_ = json.Unmarshal(x.Metadata[metaArtifact], &r) // artifactTurn wrote it
	f := ls.files[r.File]
	if f == nil {
		f = &file{}
	}
	r.Version = f.last + 1
	if want != 0 {
		if want <= f.last {
			return version{}, "", fmt.Errorf("%w: version %d of %s, which had versions up to %d", ErrVersionTaken, want, r.File, f.last)
		}
		r.Version = want
	}
	b, _ := json.Marshal(r) // plain fields: always marshals
	x.Metadata = map[string]json.RawMessage{metaArtifact: b}
	turn.Structure = &x
	if ts == nil {
		ts = trails.New(k.user)
		ts.ID, ts.App = id, k.app
		ts.AppendTurn(turn)
		if err := a.st.Create(ctx, ts); err != nil {
			return version{}, "", err
		}
		if err := a.st.Tag(ctx, id, tagArtifacts); err != nil {
			return version{}, "", err
		}
	} else {
		ts.AppendTurn(turn)
		if err := a.st.Persist(ctx, ts); err != nil {
			return version{}, "", err
		}
	}
	last := ts.Turns[len(ts.Turns)-1]
	return version{record: r, turn: last.ID, created: last.Created}, f.lastTurn, nil
}

// prov records in the graph of log k that version v prov:wasRevisionOf
// the turn prev (none when "") and prov:wasGeneratedBy the tool call that
// saved it, if any, in the ADK session the log belongs to. It reads the
// call first, from the session, and writes it as a term, naming the
// session as a reference (kg.References): the log and the session may be
// in two replica groups (cluster.Sharded).
func (a *ArtifactService) prov(ctx context.Context, k logKey, v version, prev string) error {
	var prevRows, callRows [][]rdf.Term
	if prev != "" {
		prevRows = [][]rdf.Term{{kg.MustIRI(prev)}}
	}
	// The session the version was saved from: a user-scoped file's log
	// serves all the user's sessions, its record says which one.
	sess := adkcore.TrailsID(k.app, k.user, v.Session)
	refs := []string{sess}
	if v.CallID != "" {
		q, err := kg.Bind(qArtifactCall, kg.Params{
			"session": kg.MustIRI(ontology.SessionIRI(sess)),
			"callId":  kg.String(v.CallID),
		})
		if err != nil {
			return err
		}
		res, err := a.c.Select(ctx, q)
		if err != nil {
			return err
		}
		for _, row := range res.Solutions {
			call, ok := row["call"].(rdf.IRI)
			if !ok {
				return fmt.Errorf("%w: tool call %s of session %s is not an IRI", trails.ErrCorrupt, v.CallID, sess)
			}
			callRows = append(callRows, []rdf.Term{call})
			refs = append(refs, ontology.SessionID(row.String("s"))) // an ancestor's call is under the ancestor's IRI
		}
	}
	u, err := kg.BindTables(uArtifactProv, kg.Params{
		"log":     kg.MustIRI(ontology.SessionIRI(k.id())),
		"version": kg.MustIRI(v.turn),
	}, map[string]kg.Table{
		"previous": {Vars: []string{"previous"}, Rows: prevRows},
		"calls":    {Vars: []string{"call"}, Rows: callRows},
	})
	if err != nil {
		return err
	}
	return a.c.Update(ctx, u, kg.Idempotent(), kg.References(refs...))
}

// invocationOf returns the invocation id ctx tells when it is ADK's
// context of an agent or a tool, else "".
func invocationOf(ctx context.Context) string {
	if c, ok := ctx.(interface{ InvocationID() string }); ok && adkcore.Short(c.InvocationID()) {
		return c.InvocationID()
	}
	return ""
}

// toolWrapper is the type of the context ADK gives a tool (agent's
// toolContextWrapper): the only one whose FunctionCallID answers; a
// callback's context logs a complaint when asked.
const toolWrapper = "*agent.toolContextWrapper"

// artifactTurn returns the log turn that saves part p as record r says,
// with what ctx tells when it is ADK's context of an agent or a tool: the
// agent as author, the invocation, the function call. The version is set
// when the log is read (save).
func artifactTurn(ctx context.Context, r record, p *genai.Part) (trails.Turn, error) {
	x := &trails.Structure{}
	if c, ok := ctx.(interface{ AgentName() string }); ok && adkcore.Short(c.AgentName()) {
		x.Author = c.AgentName()
	}
	x.InvocationID = invocationOf(ctx)
	if c, ok := ctx.(interface{ FunctionCallID() string }); ok && fmt.Sprintf("%T", ctx) == toolWrapper && adkcore.Short(c.FunctionCallID()) {
		r.CallID = c.FunctionCallID()
	}
	rest := *p // the raw copy: the part without what its parts hold
	if p.Text != "" {
		x.Parts = append(x.Parts, trails.Part{Kind: trails.PartText, Text: p.Text})
		rest.Text = ""
	}
	if d := p.InlineData; d != nil && len(d.Data) > 0 && d.MIMEType != "" && adkcore.Short(d.MIMEType) {
		x.Parts = append(x.Parts, trails.Part{Kind: trails.PartData, MIMEType: d.MIMEType, Data: d.Data})
		blob := *d
		blob.Data = nil
		rest.InlineData = &blob
	}
	raw, err := json.Marshal(&rest)
	if err != nil {
		return trails.Turn{}, fmt.Errorf("%w: part: %v", ErrInvalid, err)
	}
	x.Raw = &trails.Raw{Format: ArtifactRawFormat, Data: raw}
	meta, _ := json.Marshal(r) // plain fields: always marshals
	x.Metadata = map[string]json.RawMessage{metaArtifact: meta}
	return trails.Turn{Role: roleArtifact, Structure: x}, nil
}

// mimeOf returns the MIME type of artifact p: its inline data's, else
// text/plain (as ADK's in-memory service says of a text part).
func mimeOf(p *genai.Part) string {
	if p != nil && p.InlineData != nil && p.InlineData.MIMEType != "" {
		return p.InlineData.MIMEType
	}
	return "text/plain"
}

// partOf returns the artifact saved by stored turn t: its raw copy with
// its text and bytes put back from its parts.
func partOf(t trails.Turn) (*genai.Part, error) {
	x := t.Structure
	if x == nil || x.Raw == nil || x.Raw.Format != ArtifactRawFormat {
		return nil, fmt.Errorf("%w: artifact turn %s has no raw copy of format %s", trails.ErrCorrupt, t.ID, ArtifactRawFormat)
	}
	p := new(genai.Part)
	if err := json.Unmarshal(x.Raw.Data, p); err != nil {
		return nil, fmt.Errorf("%w: artifact turn %s: %v", trails.ErrCorrupt, t.ID, err)
	}
	for _, q := range x.Parts {
		switch {
		case q.Kind == trails.PartText:
			p.Text = q.Text
		case q.Kind == trails.PartData && p.InlineData != nil:
			p.InlineData.Data = q.Data
		}
	}
	return p, nil
}

// lookup returns version v (the latest when 0) of file name of session in
// app of user, as the log records it; ErrNoArtifact when there is none.
func (a *ArtifactService) lookup(ctx context.Context, app, user, session, name string, v int64) (version, error) {
	if v < 0 {
		return version{}, fmt.Errorf("%w: version %d", ErrInvalid, v)
	}
	ls, err := a.read(ctx, keyOf(app, user, session, name))
	if err != nil {
		return version{}, err
	}
	if f := ls.files[name]; f != nil {
		if got, ok := f.find(v); ok {
			return got, nil
		}
	}
	if v == 0 {
		return version{}, fmt.Errorf("%w: %s", ErrNoArtifact, name)
	}
	return version{}, fmt.Errorf("%w: %s version %d", ErrNoArtifact, name, v)
}

// Load returns version req.Version of the file (the latest when 0) as it
// was saved, in two requests whatever the log holds: one for the log's
// records, one for that version's parts.
//
// It returns ErrInvalid for a request ADK's validation refuses or a
// negative version, ErrNoArtifact (which matches fs.ErrNotExist, as ADK's
// services' errors do) when there is no such version (never saved, or
// deleted), or a store error.
func (a *ArtifactService) Load(ctx context.Context, req *artifact.LoadRequest) (_ *artifact.LoadResponse, err error) {
	ctx, call := telemetry.Start(ctx, "adk.ArtifactService.Load", "")
	defer func() { call.End(err) }()
	if req != nil {
		call.SetSession(req.SessionID)
	}
	if err := checkRequest("load artifact", req == nil, func() error { return req.Validate() }); err != nil {
		return nil, err
	}
	v, err := a.lookup(ctx, req.AppName, req.UserID, req.SessionID, req.FileName, req.Version)
	if err != nil {
		return nil, fmt.Errorf("load artifact: %w", err)
	}
	turns := []trails.Turn{{ID: v.turn}}
	if err := trails.ReadStructures(ctx, a.c, turns); err != nil {
		return nil, fmt.Errorf("load artifact %s: %w", req.FileName, err)
	}
	p, err := partOf(turns[0])
	if err != nil {
		return nil, fmt.Errorf("load artifact %s: %w", req.FileName, err)
	}
	return &artifact.LoadResponse{Part: p}, nil
}

// Delete deletes version req.Version of the file, or every version when
// it is 0: they are no longer loaded, listed or counted as versions. The
// delete is a turn of the log naming the versions it deletes; their bytes
// stay in the log (Trails keeps what a session held), and their numbers
// are not given again. Deleting what does not exist does nothing.
//
// It returns ErrInvalid for a request ADK's validation refuses or a
// negative version, session.ErrConflict of Trails when saves or deletes
// kept changing the log meanwhile (retry), or a store error.
func (a *ArtifactService) Delete(ctx context.Context, req *artifact.DeleteRequest) (err error) {
	inv := invocationOf(ctx) // ADK's own context: the span's wraps it
	ctx, call := telemetry.Start(ctx, "adk.ArtifactService.Delete", "")
	defer func() { call.End(err) }()
	if req != nil {
		call.SetSession(req.SessionID)
	}
	if err := checkRequest("delete artifact", req == nil, func() error { return req.Validate() }); err != nil {
		return err
	}
	if req.Version < 0 {
		return fmt.Errorf("delete artifact %s: %w: version %d", req.FileName, ErrInvalid, req.Version)
	}
	k := keyOf(req.AppName, req.UserID, req.SessionID, req.FileName)
	for range 5 {
		if err = a.delete(ctx, k, req.FileName, req.Version, inv); !errors.Is(err, trails.ErrConflict) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("delete artifact %s: %w", req.FileName, err)
	}
	return nil
}

// delete appends to log k the turn deleting version v of file name (all
// of them when 0), if it has any, in invocation inv ("" for none);
// ErrConflict of Trails when the log changed meanwhile.
func (a *ArtifactService) delete(ctx context.Context, k logKey, name string, v int64, inv string) error {
	ts, err := a.st.LoadTail(ctx, k.id(), trails.Tail{Last: 1})
	if errors.Is(err, trails.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	ls, err := a.read(ctx, k)
	if err != nil {
		return err
	}
	if ls.turns[k.id()] != ts.From+len(ts.Turns) {
		return fmt.Errorf("%w: the log changed while it was read", trails.ErrConflict)
	}
	f := ls.files[name]
	if f == nil {
		return nil
	}
	r := record{File: name, Deleted: []int64{}}
	for _, got := range f.live {
		if v == 0 || got.Version == v {
			r.Deleted = append(r.Deleted, got.Version)
		}
	}
	if len(r.Deleted) == 0 {
		return nil
	}
	x := &trails.Structure{InvocationID: inv}
	meta, _ := json.Marshal(r) // plain fields: always marshals
	x.Metadata = map[string]json.RawMessage{metaArtifact: meta}
	ts.AppendTurn(trails.Turn{Role: roleArtifact, Structure: x})
	return a.st.Persist(ctx, ts)
}

// List returns the names of the files of the session that have a version,
// its user-scoped files included, sorted.
//
// It returns ErrInvalid for a request ADK's validation refuses, or a
// store error.
func (a *ArtifactService) List(ctx context.Context, req *artifact.ListRequest) (_ *artifact.ListResponse, err error) {
	ctx, call := telemetry.Start(ctx, "adk.ArtifactService.List", "")
	defer func() { call.End(err) }()
	if req != nil {
		call.SetSession(req.SessionID)
	}
	if err := checkRequest("list artifacts", req == nil, func() error { return req.Validate() }); err != nil {
		return nil, err
	}
	ls, err := a.read(ctx, logKey{req.AppName, req.UserID, req.SessionID}, logKey{req.AppName, req.UserID, ""})
	if err != nil {
		return nil, fmt.Errorf("list artifacts of %s: %w", req.SessionID, err)
	}
	names := []string{}
	for name, f := range ls.files {
		if len(f.live) > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return &artifact.ListResponse{FileNames: names}, nil
}

// Versions returns the versions of the file that are not deleted, newest
// first.
//
// It returns ErrInvalid for a request ADK's validation refuses,
// ErrNoArtifact (which matches fs.ErrNotExist) when the file has none, or
// a store error.
func (a *ArtifactService) Versions(ctx context.Context, req *artifact.VersionsRequest) (_ *artifact.VersionsResponse, err error) {
	ctx, call := telemetry.Start(ctx, "adk.ArtifactService.Versions", "")
	defer func() { call.End(err) }()
	if req != nil {
		call.SetSession(req.SessionID)
	}
	if err := checkRequest("artifact versions", req == nil, func() error { return req.Validate() }); err != nil {
		return nil, err
	}
	ls, err := a.read(ctx, keyOf(req.AppName, req.UserID, req.SessionID, req.FileName))
	if err != nil {
		return nil, fmt.Errorf("artifact versions of %s: %w", req.FileName, err)
	}
	f := ls.files[req.FileName]
	if f == nil || len(f.live) == 0 {
		return nil, fmt.Errorf("artifact versions: %w: %s", ErrNoArtifact, req.FileName)
	}
	out := make([]int64, 0, len(f.live))
	for i := len(f.live) - 1; i >= 0; i-- {
		out = append(out, f.live[i].Version)
	}
	return &artifact.VersionsResponse{Versions: out}, nil
}

// GetArtifactVersion returns what is known of version req.Version of the
// file (the latest when 0) without its bytes: its number, MIME type,
// creation time, and as canonical URI the IRI of the turn that saved it
// in the knowledge graph.
//
// It returns ErrInvalid for a request ADK's validation refuses or a
// negative version, ErrNoArtifact (which matches fs.ErrNotExist) when
// there is no such version, or a store error.
func (a *ArtifactService) GetArtifactVersion(ctx context.Context, req *artifact.GetArtifactVersionRequest) (_ *artifact.GetArtifactVersionResponse, err error) {
	ctx, call := telemetry.Start(ctx, "adk.ArtifactService.GetArtifactVersion", "")
	defer func() { call.End(err) }()
	if req != nil {
		call.SetSession(req.SessionID)
	}
	if err := checkRequest("get artifact version", req == nil, func() error { return req.Validate() }); err != nil {
		return nil, err
	}
	v, err := a.lookup(ctx, req.AppName, req.UserID, req.SessionID, req.FileName, req.Version)
	if err != nil {
		return nil, fmt.Errorf("get artifact version: %w", err)
	}
	return &artifact.GetArtifactVersionResponse{ArtifactVersion: &artifact.ArtifactVersion{
		Version: v.Version, MimeType: v.MIMEType, CreateTime: v.created, CanonicalURI: v.turn,
	}}, nil
}
