package admin

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
)

// The queries of Expire, read once.
var (
	qExpireDue = query("expire-due.rq")
	uExpire    = query("expire.ru")
)

// expireBatch is how many sessions one Expire update moves; one on a
// Querier that sends each request to the log of the session tree it
// names (treeRouted).
const expireBatch = 50

// treeRouted is a Querier that routes each request by the session tree it
// names (*cluster.Sharded): a request must name one tree.
type treeRouted interface{ RoutesByTree() bool }

// replicated reports whether ds writes through a replicated log (a
// cluster.Client or Sharded: its Replicated method), where every replica
// applies each update: a time must be the writer's, and a replica's own
// records are no data.
func (ds *Dataset) replicated() bool {
	r, ok := ds.c.(interface{ Replicated() bool })
	return ok && r.Replicated()
}

// PlanExpire returns the sessions Expire(ctx, now) would mark expired, the
// earliest expiry first, as steps with Action "expire", without changing
// anything: the dry run of Expire.
//
// It returns session.ErrCorrupt for an expiry that is not a date and
// time, or a store error wrapping the kg error.
func (ds *Dataset) PlanExpire(ctx context.Context, now time.Time) (_ []session.Step, err error) {
	ctx, call := telemetry.Start(ctx, "admin.PlanExpire", "")
	defer func() { call.End(err) }()
	due, err := ds.due(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("plan expire: %w", err)
	}
	steps := make([]session.Step, len(due))
	for i, s := range due {
		steps[i] = session.Step{Action: "expire", Session: s.id}
	}
	return steps, nil
}

// dueSession is a session Expire must mark expired.
type dueSession struct {
	id        string
	state     session.State
	expires   time.Time
	principal string
}

// due returns the active or suspended sessions whose expiry is at or
// before now, the earliest first.
func (ds *Dataset) due(ctx context.Context, now time.Time) ([]dueSession, error) {
	q, err := bind("expire-due", qExpireDue, kg.Params{"now": kg.DateTime(now.UTC())})
	if err != nil {
		return nil, err
	}
	res, err := ds.c.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]dueSession, 0, len(res.Solutions))
	seen := make(map[string]bool, len(res.Solutions))
	for _, row := range res.Solutions {
		id := ontology.SessionID(row.String("s"))
		if seen[id] {
			continue // two expiries or states: trails-admin check reports it
		}
		seen[id] = true
		exp, err := row.Time("expires")
		if err != nil {
			return nil, fmt.Errorf("%w: session %s: %v", session.ErrCorrupt, id, err)
		}
		out = append(out, dueSession{id: id, state: session.State(row.String("state")), expires: exp, principal: row.String("principal")})
	}
	return out, nil
}

// ExpireOptions qualify an Expire. The zero value records each session's
// own principal and reports no progress.
type ExpireOptions struct {
	// By names the principal who expires the sessions, for the PROV
	// records (default: each session's own principal).
	By string
	// Progress, if not nil, is called after each batch for each of its
	// sessions: done of total sessions due, and the session as a Step.
	Progress func(done, total int, s session.Step)
}

// Expire marks expired every session that is active or suspended and whose
// expiry (trails:expiresAt: Session.TTL, Store.SetExpiry) is at or before
// now. Each session moves as Store.SetState would move it: a compare and
// swap on its state, a trails:StateChange PROV record (with the reason
// "TTL ended at …"), and, expired being terminal like completed and
// failed, its active or suspended descendants flagged for cancellation.
// Sessions go in batches of 50, one atomic update per batch (one session
// a batch on a Querier that routes by session tree, cluster.Sharded); a session
// whose state or expiry changed since Expire read it is left alone, and
// Expire is idempotent: a second run with the same now marks none. opts
// name the principal recorded and the progress function (the zero value:
// each session's own principal, no progress).
//
// It returns how many sessions it marked expired, also with an error (the
// batches done before it stay done; running Expire again does the rest).
// It returns session.ErrCorrupt for an expiry that is not a date and time,
// the context's error when interrupted between batches, or a store error
// wrapping the kg error.
func (ds *Dataset) Expire(ctx context.Context, now time.Time, opts ExpireOptions) (_ int, err error) {
	ctx, call := telemetry.Start(ctx, "admin.Expire", "")
	defer func() { call.End(err) }()
	by, progress := opts.By, opts.Progress
	due, err := ds.due(ctx, now)
	if err != nil {
		return 0, fmt.Errorf("expire: %w", err)
	}
	tmpl := body(uExpire)
	expired := 0
	per := expireBatch
	if r, ok := ds.c.(treeRouted); ok && r.RoutesByTree() {
		per = 1 // a request per session: each goes to its tree's log
	}
	for lo := 0; lo < len(due); lo += per {
		if err := ctx.Err(); err != nil {
			return expired, fmt.Errorf("expire: stopped after %d of %d sessions: %w", lo, len(due), err)
		}
		batch := due[lo:min(lo+per, len(due))]
		n, err := ds.expireBatch(ctx, tmpl, batch, now, by)
		expired += n
		if err != nil {
			return expired, fmt.Errorf("expire: %w", err)
		}
		if progress != nil {
			for i, s := range batch {
				progress(lo+i+1, len(due), session.Step{Action: "expire", Session: s.id})
			}
		}
	}
	return expired, nil
}

// expireBatch moves the sessions of batch to expired in one update and
// returns how many moved.
func (ds *Dataset) expireBatch(ctx context.Context, tmpl string, batch []dueSession, now time.Time, by string) (int, error) {
	t := ds.now()
	ops := make([]string, 0, len(batch))
	acts := make([]rdf.IRI, 0, len(batch))
	for _, s := range batch {
		g := sessionIRI(s.id)
		act := prov.NewStateChangeActivity()
		var d kg.Data
		d.Add(g, g, kg.MustIRI(ontology.State), kg.String(string(session.StateExpired)))
		prov.AddStateChange(&d, act, prov.StateChange{Session: s.id, From: string(s.state), To: string(session.StateExpired),
			Principal: cmp.Or(by, s.principal, "unknown"), Time: t,
			Reason: "TTL ended at " + s.expires.UTC().Format(time.RFC3339Nano)})
		u, err := kg.BindData(tmpl, &d, kg.Params{
			"s": g, "from": kg.String(string(s.state)), "act": act, "now": kg.DateTime(now.UTC()),
		}, nil)
		if err != nil {
			return 0, fmt.Errorf("expire: %w", err)
		}
		ops = append(ops, u)
		acts = append(acts, act)
	}
	if err := ds.c.Update(ctx, strings.Join(ops, " ;\n"), kg.Idempotent()); err != nil {
		return 0, err
	}
	applied, err := session.StateChanges(ctx, ds.c, acts)
	if err != nil {
		return 0, err
	}
	return len(applied), nil
}

// body returns an update template without its leading comment lines, to
// repeat it in one request.
func body(tmpl string) string {
	lines := strings.Split(tmpl, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "#") {
			return strings.Join(lines[i:], "\n")
		}
	}
	return ""
}
