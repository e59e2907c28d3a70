package cluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/proc"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
)

// ShardedConfig configures a Sharded client.
type ShardedConfig struct {
	// Groups configure the Clients of the replica groups, in group order
	// (group 0 first): each its own topic and replicas; the brokers may
	// be the same.
	Groups []Config
	// Shared is the group of the writes about no session (a shared value
	// set alone, a fence of such a write) and of the trees whose root is
	// created with shared app: or user: values; 0 by default.
	Shared int
	// Audit is the audit replica: required with more than one group.
	// Reads that span groups (no session named, sessions of two groups,
	// shared values of a tree outside Shared) go there.
	Audit *Audit
}

// Audit names an audit replica: one Fuseki dataset that an Applier per
// group applies that group's log into (each with its own offset in the
// replica graph, ontology.LogIRI of its topic).
type Audit struct {
	// Dataset is the audit replica's dataset URL: whole-dataset reads go
	// there.
	Dataset string
	// Appliers are the base URLs of its Appliers, one per group in the
	// order of ShardedConfig.Groups: how far it applied each log.
	Appliers []string
	// Store configures the client of Dataset (credentials, timeouts); its
	// Endpoint and Store are set.
	Store kg.Config
}

// Sharded is a session.Querier (and an admin.Querier) on N replica
// groups, each a Client of its own log: it routes each request by the
// sessions it names (their IRIs in its text), so a session tree's writes
// all go to one group's total order. A tree's group is fixed when its root
// is created (a hash of the root's id modulo N, or ShardedConfig.Shared
// for a root created with shared values) and written with it as
// ontology.Group in the replica graph; a session created in a request
// that names a stored session (a fork naming its parent) takes that
// session's group. A write that would need two groups' logs at once is
// refused with ErrCrossGroup: nothing is written. A write that sets
// shared values (app: or user:) from a tree outside the shared group is
// two records, the tree's write and then the values', with an outbox
// that Reshare completes after a writer's death (sharedvalues.go). Reads of one group's
// trees go to that group's replicas, reads that span groups to the audit
// replica, at or past every group's last write of this client.
//
// A session.Store on a Sharded must not batch (session.WithGroupCommit(
// false)): a batch joins writes of trees of several groups in one
// request, which Update refuses. It is safe for concurrent use; Close
// releases it.
type Sharded struct {
	groups        []*Client
	shared        int
	audit         *kg.Client
	auditAppliers []string
	http          *http.Client
	timeout       time.Duration

	mu       sync.Mutex
	tree     map[string]int          // session id: its group, as learnt
	moves    map[int]int             // group: how many seals of its log this Sharded read (sealsGrew)
	staging  map[string]stagingEntry // staging uuid: where it goes
	reshared bool                    // Reshare ran since the last write of shared values across groups that did not finish
}

// stagingEntry is a staging graph (ontology.StagingBase and a uuid) that
// a Sharded saw: a PUT waiting for the update that binds it (put), or
// the group of the update that named it (a gate, which a fence names
// alone).
type stagingEntry struct {
	put   *stagedPut
	group int
	at    time.Time
}

type stagedPut struct {
	g         rdf.IRI
	mediaType string
	data      []byte
}

// stagingKept is how long a Sharded remembers a staging graph: longer
// than a write and the fence after it take.
const stagingKept = 10 * time.Minute

// ErrCrossGroup: a write names sessions of two replica groups, or writes
// shared values (app: or user:) from a tree outside the group of shared
// values (ShardedConfig.Shared) otherwise than through session's marked
// operations, or a Graph Store request holds sessions of two groups. Sharded refuses it before it reaches a log, since no
// write may need two groups' logs at once: the error is a *kg.Error with
// HTTP status 400 (kg.ErrBadRequest, as a store's refusal of a request it
// cannot take, which a session.Store returns as it is) whose Err is
// ErrCrossGroup.
var ErrCrossGroup = errors.New("cluster: the write spans two replica groups")

// crossGroup returns the refusal of a write that spans groups.
func crossGroup(why string) error {
	return &kg.Error{Op: "update", Status: http.StatusBadRequest, Body: why, Err: ErrCrossGroup}
}

var _ interface {
	Select(context.Context, string) (*kg.Results, error)
	Rows(context.Context, string) (*kg.Rows, error)
	Ask(context.Context, string) (bool, error)
	Update(context.Context, string, ...kg.UpdateOption) error
	GetGraph(context.Context, rdf.IRI) ([]byte, error)
	PutGraph(context.Context, rdf.IRI, string, []byte) error
	Validate(context.Context, []byte, string) (*kg.Report, error)
	Dump(context.Context, io.Writer) error
	LoadQuads(context.Context, []byte) error
	Replicated() bool
} = (*Sharded)(nil)

// OpenSharded returns a Sharded for cfg. It checks the configuration, not
// that the logs or the replicas answer. It returns an error matching
// kg.ErrConfig for a bad configuration.
func OpenSharded(cfg ShardedConfig) (*Sharded, error) {
	if len(cfg.Groups) == 0 {
		return nil, fmt.Errorf("%w: cluster: no replica groups", kg.ErrConfig)
	}
	if cfg.Shared < 0 || cfg.Shared >= len(cfg.Groups) {
		return nil, fmt.Errorf("%w: cluster: shared group %d of %d groups", kg.ErrConfig, cfg.Shared, len(cfg.Groups))
	}
	s := &Sharded{shared: cfg.Shared, http: &http.Client{Transport: applierTransport}, timeout: DefaultTimeout, tree: map[string]int{}, moves: map[int]int{}, staging: map[string]stagingEntry{}}
	seen := map[string]bool{}
	for i, gc := range cfg.Groups {
		topic := gc.Topic
		if topic == "" {
			topic = DefaultTopic
		}
		if seen[topic] {
			return nil, fmt.Errorf("%w: cluster: groups %d and another share topic %q: want a topic per group", kg.ErrConfig, i, topic)
		}
		seen[topic] = true
		c, err := Open(gc)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("group %d: %w", i, err)
		}
		s.groups = append(s.groups, c)
		s.timeout = max(s.timeout, c.timeout)
	}
	switch {
	case cfg.Audit == nil && len(cfg.Groups) > 1:
		s.Close()
		return nil, fmt.Errorf("%w: cluster: %d groups and no audit replica (reads across groups go there)", kg.ErrConfig, len(cfg.Groups))
	case cfg.Audit != nil && len(cfg.Audit.Appliers) != len(cfg.Groups):
		s.Close()
		return nil, fmt.Errorf("%w: cluster: the audit replica names %d appliers for %d groups: want one per group, in order", kg.ErrConfig, len(cfg.Audit.Appliers), len(cfg.Groups))
	case cfg.Audit != nil:
		sc := cfg.Audit.Store
		sc.Endpoint, sc.Store = cfg.Audit.Dataset, kg.Fuseki
		a, err := kg.New(sc)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("cluster: audit replica: %w", err)
		}
		s.audit, s.auditAppliers = a, cfg.Audit.Appliers
	}
	return s, nil
}

// Close releases the connections to the logs.
func (s *Sharded) Close() {
	for _, c := range s.groups {
		c.Close()
	}
}

// Store returns kg.Fuseki, as Client.Store.
func (s *Sharded) Store() kg.Store { return kg.Fuseki }

// Endpoint returns the audit replica's dataset URL (the shared group's
// first replica with one group): where a SPARQL tool reads every group.
func (s *Sharded) Endpoint() string {
	if s.audit != nil {
		return s.audit.Endpoint()
	}
	return s.groups[s.shared].Endpoint()
}

// Replicated returns true, as Client.Replicated.
func (s *Sharded) Replicated() bool { return true }

// RoutesByTree returns true: each request goes to the log of the tree it
// names, so a writer must not join writes of several trees in one request
// (a session.Store's group commit): such a request is refused with
// ErrCrossGroup when its trees are in two groups.
func (s *Sharded) RoutesByTree() bool { return true }

// PositionOf returns where the log stands for session id's tree, as a
// signed statement records it (session.WithSigning): "kafka:TOPIC/0@N",
// N the offset of this Sharded's last write to the log of the tree's
// group; "" when it knows no group for id or wrote nothing there.
func (s *Sharded) PositionOf(id string) string {
	s.mu.Lock()
	g, ok := s.tree[id]
	s.mu.Unlock()
	if !ok {
		return ""
	}
	c := s.groups[g]
	if off := c.Position(); off >= 0 {
		return "kafka:" + c.topic + "/0@" + strconv.FormatInt(off, 10)
	}
	return ""
}

// Groups returns the number of replica groups.
func (s *Sharded) Groups() int { return len(s.groups) }

// Group returns the group of session id's tree: the one this Sharded
// learnt, else the one whose replicas hold the session (asked of every
// group at the end of its log: groupOf), skipping a group that sealed it
// (its tree moved out: MoveTree). A tree that a move sealed and has not
// finished is in its old group, which still holds it. It returns -1 and
// nil for a session that no group holds, and an error from the groups'
// reads.
func (s *Sharded) Group(ctx context.Context, id string) (int, error) {
	s.mu.Lock()
	g, ok := s.tree[id]
	s.mu.Unlock()
	if ok {
		return g, nil
	}
	hs, err := s.holders(ctx, id)
	if err != nil {
		return -1, err
	}
	g, moving := groupOf(hs)
	if g >= 0 && !moving {
		s.learn(g, id)
	}
	return g, nil
}

// HomeGroup returns the group a new root session id goes to when it
// starts with no shared value: FNV-1a of the id modulo the groups.
func (s *Sharded) HomeGroup(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(len(s.groups)))
}

func (s *Sharded) learn(g int, ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.tree[id] = g
	}
}

// The IRIs routing reads in a request's text.
var (
	sessionRe = regexp.MustCompile(`<` + regexp.QuoteMeta(ontology.SessionBase) + `([^/>#]+)`)
	stagingRe = regexp.MustCompile(`<` + regexp.QuoteMeta(ontology.StagingBase) + `([^/>#]+)`)
	valuesRe  = regexp.MustCompile(`<` + regexp.QuoteMeta(ontology.ValuesGraph) + `>|<` + regexp.QuoteMeta(ontology.ValueOf) + `>|trails:valueOf\b`)
)

// sessionIDs returns the ids of the sessions whose IRIs (or IRIs under
// them) text names, in order of first mention.
func sessionIDs(text string) []string {
	var ids []string
	seen := map[string]bool{}
	for _, m := range sessionRe.FindAllStringSubmatch(text, -1) {
		id, err := url.PathUnescape(m[1])
		if err != nil || seen[id] {
			continue
		}
		seen[id] = true
		ids = append(ids, id)
	}
	return ids
}

// stagingIDs returns the staging uuids text names.
func stagingIDs(text string) []string {
	var ids []string
	for _, m := range stagingRe.FindAllStringSubmatch(text, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// route returns the group of a request naming sessions ids: the group of
// the stored ones (one at most), and the sessions not stored anywhere
// (new ones, which take it). With no stored session it is the home group
// of the first new one (write) or -1 (read). Sessions that seem to lie in
// two groups are asked for again before it says so (ErrCrossGroup): this
// Sharded may know some sessions of a moved tree in their old group.
func (s *Sharded) route(ctx context.Context, ids []string) (g int, fresh []string, err error) {
	g, fresh, err = s.routeLearnt(ctx, ids)
	if errors.Is(err, ErrCrossGroup) {
		s.mu.Lock()
		for _, id := range ids {
			delete(s.tree, id)
		}
		s.mu.Unlock()
		g, fresh, err = s.routeLearnt(ctx, ids)
	}
	return g, fresh, err
}

// routeLearnt is route with the groups this Sharded learnt.
func (s *Sharded) routeLearnt(ctx context.Context, ids []string) (g int, fresh []string, err error) {
	g = -1
	for _, id := range ids {
		h, err := s.Group(ctx, id)
		if err != nil {
			return -1, nil, err
		}
		switch {
		case h < 0:
			fresh = append(fresh, id)
		case g < 0:
			g = h
		case g != h:
			return -1, nil, crossGroup(fmt.Sprintf("sessions %s (group %d) and %s (group %d)", ids[0], g, id, h))
		}
	}
	return g, fresh, nil
}

// Update sends update to the log of the group of the sessions it names
// (ShardedConfig.Shared for none; every group for a removal of staging
// graphs that another writer sent), with the staging graphs it binds sent
// ahead there, and records the group of each session it creates
// (ontology.Group). It returns what Client.Update returns, and
// ErrCrossGroup (a *kg.Error matching kg.ErrBadRequest) for a write that names sessions
// of two groups, or that sets a shared value (names the values graph)
// from a tree outside the shared group: sent to nobody. A session that
// opts name as a reference (kg.References) and update names only through
// IRIs under it does not route the update, which goes to the group of
// the other sessions it names (routed, in references.go).
func (s *Sharded) Update(ctx context.Context, update string, opts ...kg.UpdateOption) error {
	ids := routed(update, sessionIDs(update), opts)
	g, fresh, err := s.route(ctx, ids)
	if err != nil {
		return err
	}
	shares := valuesRe.MatchString(update)
	switch {
	case g < 0 && len(fresh) > 0 && shares:
		g = s.shared // a root that starts with shared values
	case g < 0 && len(fresh) > 0:
		g = s.HomeGroup(fresh[0])
	case g < 0:
		if g = s.stagingGroup(update); g < 0 {
			return s.dropEverywhere(ctx, update, opts...)
		}
	}
	if shares && g != s.shared {
		return s.updateAcross(ctx, g, fresh, update, opts...)
	}
	puts, err := s.sendStaged(ctx, g, update)
	if err != nil {
		return err
	}
	return s.updateIn(ctx, g, fresh, puts, update, opts...)
}

// groupOps returns the operations (after " ;\n") that record group g of
// each session of ids that the request created: a session that exists
// after it and has no group yet. No PREFIX (see session's share-value.ru).
func groupOps(ids []string, g int) string {
	var b strings.Builder
	rg, _ := kg.Term(kg.MustIRI(ontology.ReplicaGraph))
	p, _ := kg.Term(kg.MustIRI(ontology.Group))
	typ, _ := kg.Term(kg.MustIRI(ontology.RDFType))
	sc, _ := kg.Term(kg.MustIRI(ontology.Session))
	n, _ := kg.Term(rdf.NewTypedLiteral(strconv.Itoa(g), kg.MustIRI("http://www.w3.org/2001/XMLSchema#nonNegativeInteger")))
	for _, id := range ids {
		t, _ := kg.Term(kg.MustIRI(ontology.SessionIRI(id)))
		b.WriteString(" ;\nINSERT { GRAPH " + rg + " { " + t + " " + p + " " + n + " } } WHERE { GRAPH " + t + " { " + t + " " + typ + " " + sc + " } FILTER NOT EXISTS { GRAPH " + rg + " { " + t + " " + p + " ?group } } }")
	}
	return b.String()
}

// stagingGroup returns the group of an update that names no session: the
// group of a staging graph it names (a fence of a gate, a write's own
// removal of its staging graph), -1 for an update that only drops
// staging graphs this Sharded did not send (dropEverywhere), else the
// shared group.
func (s *Sharded) stagingGroup(update string) int {
	ids := stagingIDs(update)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if e, ok := s.staging[id]; ok && e.put == nil {
			return e.group
		}
	}
	if len(ids) > 0 && dropsOnly.MatchString(update) {
		return -1
	}
	return s.shared
}

// dropsOnly matches an update made of DROP SILENT GRAPH operations of
// staging graphs only (admin.Dataset.SweepStaging's, or a writer's
// removal of its staging graph).
var dropsOnly = regexp.MustCompile(`^\s*DROP SILENT GRAPH <` + regexp.QuoteMeta(ontology.StagingBase) + `[^<>\s]+>(\s*;\s*DROP SILENT GRAPH <` + regexp.QuoteMeta(ontology.StagingBase) + `[^<>\s]+>)*\s*;?\s*$`)

// dropEverywhere sends update, the removal of staging graphs whose group
// this Sharded does not know (another writer sent them: one that died
// between its staging graph and its update left it in its tree's group),
// to every group's log in group order, and returns the first error. A
// DROP SILENT of a graph a group does not hold changes nothing there.
func (s *Sharded) dropEverywhere(ctx context.Context, update string, opts ...kg.UpdateOption) error {
	var first error
	for _, c := range s.groups {
		if err := c.Update(ctx, update, opts...); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// sendStaged sends to group g the staging graphs update binds that wait
// here (PutGraph), then remembers g as the group of every staging graph
// update names. It returns the graphs it sent, which a write re-sent to
// the group its tree moved to sends there again (updateIn).
func (s *Sharded) sendStaged(ctx context.Context, g int, update string) ([]*stagedPut, error) {
	ids := stagingIDs(update)
	var puts []*stagedPut
	now := time.Now()
	s.mu.Lock()
	for id, e := range s.staging {
		if now.Sub(e.at) > stagingKept {
			delete(s.staging, id)
		}
	}
	for _, id := range ids {
		if e, ok := s.staging[id]; ok && e.put != nil {
			puts = append(puts, e.put)
		}
		s.staging[id] = stagingEntry{group: g, at: now}
	}
	s.mu.Unlock()
	for _, p := range puts {
		if err := s.groups[g].PutGraph(ctx, p.g, p.mediaType, p.data); err != nil {
			return nil, err
		}
	}
	return puts, nil
}

// PutGraph replaces graph g on the replicas of its group: a session's
// graph goes to the session's group; a staging graph waits for the update
// that binds it and goes ahead of it to that update's group (its errors
// are that Update's); any other graph (the ontology's) goes to every
// group. It answers as Client.PutGraph does.
func (s *Sharded) PutGraph(ctx context.Context, g rdf.IRI, mediaType string, data []byte) error {
	if id, ok := strings.CutPrefix(g.String(), ontology.StagingBase); ok && !strings.Contains(id, "/") {
		s.mu.Lock()
		s.staging[id] = stagingEntry{put: &stagedPut{g: g, mediaType: mediaType, data: data}, at: time.Now()}
		s.mu.Unlock()
		return nil
	}
	if ids := sessionIDs("<" + g.String() + ">"); len(ids) > 0 {
		grp, _, err := s.route(ctx, ids)
		if err != nil {
			return err
		}
		if grp < 0 {
			grp = s.HomeGroup(ids[0])
		}
		return s.groups[grp].PutGraph(ctx, g, mediaType, data)
	}
	for i, c := range s.groups {
		if err := c.PutGraph(ctx, g, mediaType, data); err != nil {
			return fmt.Errorf("group %d: %w", i, err)
		}
	}
	return nil
}

// LoadQuads adds N-Quads to the groups of the session trees they hold.
// Sessions named on one line (a fork's link to its parent, a PROV record)
// are one tree; each tree goes to the group of a stored session of it,
// else to the shared group when its quads change a shared (app: or user:)
// value (admin's import sets the values there next), else to the home
// group of its first session. Lines naming no session go to every group
// that takes some of the quads. Each group's part is one record (a group
// holds its trees whole or not at all), sent in group order, followed by
// a record of the groups of the sessions created; an import stopped
// between two groups' records is completed by running it again (adding
// quads that are there changes nothing). It answers as Client.LoadQuads
// does, and returns ErrCrossGroup for a tree whose stored sessions are in
// two groups.
func (s *Sharded) LoadQuads(ctx context.Context, nquads []byte) error {
	lines := strings.SplitAfter(string(nquads), "\n")
	up := map[string]string{} // union-find of session ids on a line together
	var find func(string) string
	find = func(id string) string {
		if p, ok := up[id]; ok && p != id {
			r := find(p)
			up[id] = r
			return r
		}
		up[id] = id
		return id
	}
	lineIDs := make([][]string, len(lines))
	var order []string // ids in order of first mention
	for i, l := range lines {
		ids := sessionIDs(l)
		lineIDs[i] = ids
		for _, id := range ids {
			if _, ok := up[id]; !ok {
				order = append(order, id)
			}
			up[find(id)] = find(ids[0])
		}
	}
	trees := map[string][]string{} // root of a tree: its ids in order
	var roots []string
	for _, id := range order {
		r := find(id)
		if _, ok := trees[r]; !ok {
			roots = append(roots, r)
		}
		trees[r] = append(trees[r], id)
	}
	shares := map[string]bool{}
	for i, l := range lines {
		if len(lineIDs[i]) > 0 && sharedKeyRe.MatchString(l) {
			shares[find(lineIDs[i][0])] = true
		}
	}
	groupOf := map[string]int{} // root: its group
	fresh := map[int][]string{} // group: sessions this load creates
	for _, r := range roots {
		g, created, err := s.route(ctx, trees[r])
		if err != nil {
			return err
		}
		switch {
		case g < 0 && shares[r]:
			g = s.shared
		case g < 0:
			g = s.HomeGroup(trees[r][0])
		}
		groupOf[r] = g
		fresh[g] = append(fresh[g], created...)
	}
	parts := make([]strings.Builder, len(s.groups))
	var common strings.Builder
	for i, l := range lines {
		if len(lineIDs[i]) == 0 {
			common.WriteString(l)
			continue
		}
		parts[groupOf[find(lineIDs[i][0])]].WriteString(l)
	}
	if len(roots) == 0 {
		parts[s.shared].WriteString(common.String())
		common.Reset()
	}
	for g := range parts {
		if parts[g].Len() == 0 {
			continue
		}
		if err := s.groups[g].LoadQuads(ctx, []byte(parts[g].String()+common.String())); err != nil {
			return fmt.Errorf("group %d: %w", g, err)
		}
		if len(fresh[g]) > 0 {
			if err := s.groups[g].Update(ctx, strings.TrimPrefix(groupOps(fresh[g], g), " ;\n")); err != nil {
				return fmt.Errorf("group %d: %w", g, err)
			}
			s.learn(g, fresh[g]...)
		}
	}
	return nil
}

// sharedKeyRe matches a value change of a shared key in N-Quads.
var sharedKeyRe = regexp.MustCompile(`<` + regexp.QuoteMeta(ontology.Key) + `> "(app|user):`)

// reader returns the Client of the one group a read of query is about, or
// nil for a read that goes to the audit replica: one naming no session,
// sessions of two groups, or the shared values of a tree outside the
// shared group.
func (s *Sharded) reader(ctx context.Context, query string) (*Client, error) {
	ids := sessionIDs(query)
	if len(ids) == 0 {
		if len(s.groups) == 1 {
			return s.groups[0], nil
		}
		return nil, nil
	}
	g, _, err := s.route(ctx, ids)
	switch {
	case errors.Is(err, ErrCrossGroup):
		g = -1
	case err != nil:
		return nil, err
	}
	if g >= 0 && valuesRe.MatchString(query) && g != s.shared {
		g = -1
	}
	if g < 0 {
		if s.audit == nil {
			return s.groups[0], nil
		}
		return nil, nil
	}
	return s.groups[g], nil
}

// auditAt waits until the audit replica has applied every group's log up
// to its end when the read began (or, when Kafka does not answer that, up
// to this Sharded's last write to it), for at most the Client's timeout.
// The end, not only this Sharded's writes: a write still in flight that
// one reader saw applied on its group's replicas must not be missing from
// a later read of the audit replica (TestHistoriesSharded found a tag
// acknowledged on a session a reader had already seen deleted).
func (s *Sharded) auditAt(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	for i, c := range s.groups {
		need := max(c.Position(), c.logEnd(ctx))
		if need < 0 {
			continue
		}
		for attempt := 0; ; attempt++ {
			var p struct{ Position int64 }
			err := c.get(ctx, s.auditAppliers[i]+"/position?atLeast="+strconv.FormatInt(need, 10)+"&wait="+askWait.String(), &p)
			if err == nil && p.Position >= need {
				break
			}
			if err == nil {
				err = fmt.Errorf("applied up to %d, this client needs %d", p.Position, need)
			}
			if ctx.Err() != nil {
				return &kg.Error{Op: "select", Err: fmt.Errorf("audit replica, group %d: %w (last: %v)", i, ctx.Err(), err)}
			}
			if err := proc.Sleep(ctx, backoff(attempt)); err != nil {
				return &kg.Error{Op: "select", Err: fmt.Errorf("audit replica, group %d: %w", i, err)}
			}
		}
	}
	return nil
}

// shardedRead runs a read on its group's Client, or on the audit replica.
// With more than one group, both wait for the log's end when the read
// began (catchUp, auditAt): one call's reads may go to both (a load reads
// a tree's turns from its group and its shared values from the audit
// replica), and each must be at or past what the one before it saw, or a
// load finds fewer turns than the chain it read first (TestHistoriesSharded).
func shardedRead[T any](ctx context.Context, s *Sharded, query string, group func(*Client) (T, error), audit func(*kg.Client) (T, error)) (T, error) {
	var zero T
	c, err := s.reader(ctx, query)
	if err != nil {
		return zero, err
	}
	if c != nil && len(s.groups) > 1 {
		c.catchUp(ctx)
		if s.sealsGrew(ctx, slices.Index(s.groups, c)) {
			// A tree moved out of c's group: this read's may be one.
			if c, err = s.reader(ctx, query); err != nil {
				return zero, err
			}
			if c != nil {
				c.catchUp(ctx)
			}
		}
	}
	if c != nil {
		return group(c)
	}
	if err := s.auditAt(ctx); err != nil {
		return zero, err
	}
	return audit(s.audit)
}

// Select runs a SELECT query on a replica of the group of the sessions
// it names, or on the audit replica (see Sharded). It returns what
// Client.Select returns.
func (s *Sharded) Select(ctx context.Context, query string) (*kg.Results, error) {
	return shardedRead(ctx, s, query,
		func(c *Client) (*kg.Results, error) { return c.Select(ctx, query) },
		func(a *kg.Client) (*kg.Results, error) { return a.Select(ctx, query) })
}

// Rows runs a SELECT query as Select does and returns its rows as they
// arrive. It returns what Client.Rows returns.
func (s *Sharded) Rows(ctx context.Context, query string) (*kg.Rows, error) {
	return shardedRead(ctx, s, query,
		func(c *Client) (*kg.Rows, error) { return c.Rows(ctx, query) },
		func(a *kg.Client) (*kg.Rows, error) { return a.Rows(ctx, query) })
}

// Ask runs an ASK query as Select does. It returns what Client.Ask
// returns.
func (s *Sharded) Ask(ctx context.Context, query string) (bool, error) {
	return shardedRead(ctx, s, query,
		func(c *Client) (bool, error) { return c.Ask(ctx, query) },
		func(a *kg.Client) (bool, error) { return a.Ask(ctx, query) })
}

// GetGraph returns graph g as N-Triples: a session's graph from its
// group, any other from the audit replica. It returns what
// Client.GetGraph returns.
func (s *Sharded) GetGraph(ctx context.Context, g rdf.IRI) ([]byte, error) {
	return shardedRead(ctx, s, "<"+g.String()+">",
		func(c *Client) ([]byte, error) { return c.GetGraph(ctx, g) },
		func(a *kg.Client) ([]byte, error) { return a.GetGraph(ctx, g) })
}

// Validate validates graph (kg.UnionGraph for all) of the audit replica,
// which holds every group, against shapes (of the shared group's
// replicas with one group). It returns what Client.Validate returns.
func (s *Sharded) Validate(ctx context.Context, shapes []byte, graph string) (*kg.Report, error) {
	return shardedRead(ctx, s, "",
		func(c *Client) (*kg.Report, error) { return c.Validate(ctx, shapes, graph) },
		func(a *kg.Client) (*kg.Report, error) { return a.Validate(ctx, shapes, graph) })
}

// Dump writes the audit replica's whole dataset to w as N-Quads (the
// shared group's with one group): each group at a prefix of its own log.
// Its replica graph holds an offset per group. It returns what
// kg.Client.Dump returns.
func (s *Sharded) Dump(ctx context.Context, w io.Writer) error {
	_, err := shardedRead(ctx, s, "",
		func(c *Client) (struct{}, error) { return struct{}{}, c.Dump(ctx, w) },
		func(a *kg.Client) (struct{}, error) { return struct{}{}, a.Dump(ctx, w) })
	return err
}

// Positions returns the offset of this Sharded's last write to each
// group's log (-1 for none), in group order.
func (s *Sharded) Positions() []int64 {
	out := make([]int64, len(s.groups))
	for i, c := range s.groups {
		out[i] = c.Position()
	}
	return out
}

// catchUp makes c's next read go to a replica at or past the end of its
// log as of now (as a read on another replica does, Client.reader), so
// that it sees what any writer had acknowledged; when Kafka does not
// answer, it reads at its own position only.
func (c *Client) catchUp(ctx context.Context) {
	end := c.logEnd(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if end > c.last {
		c.last = end
	}
}
