package admin

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/knakk/rdf"
	"github.com/trails-kg/trails/internal/telemetry"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/ontology"
	"github.com/trails-kg/trails/rdfio"
	"github.com/trails-kg/trails/session"
)

// BackupStats is what Backup did.
type BackupStats struct {
	Task Task
	// File is the backup's file name in the server's backups directory
	// (FUSEKI_BASE/backups on the server's machine: under scripts/fuseki,
	// ~/.cache/trails/run/fuseki-PORT-base/backups), NAME_DATE_TIME.nq.gz:
	// the whole dataset as gzipped N-Quads.
	File string
}

// Backup has the server write a backup of the dataset (Fuseki's POST
// /$/backup/NAME: every quad, in one read transaction, as gzipped
// N-Quads), waits for the task to end, and returns the file's name.
// Writers go on while it runs; the backup holds the dataset as it was
// when the task began. Restore loads it.
//
// It returns an error wrapping ErrUnsupported for a server without the
// admin API; ErrTaskFailed when the backup failed; a *kg.Error matching
// kg.ErrNotFound for a dataset the server does not have, or another kg
// sentinel; or the error of ctx, after which the backup may go on in the
// server.
func (s *Server) Backup(ctx context.Context) (_ BackupStats, err error) {
	ctx, call := telemetry.Start(ctx, "admin.Backup", "")
	defer func() { call.End(err) }()
	var st BackupStats
	before, err := s.backups(ctx)
	if err != nil {
		return st, fmt.Errorf("backup: %w", err)
	}
	id, err := s.start(ctx, "backup", "")
	if err != nil {
		return st, fmt.Errorf("backup: %w", err)
	}
	if st.Task, err = s.wait(ctx, "backup", id); err != nil {
		return st, fmt.Errorf("backup: %w", err)
	}
	after, err := s.backups(ctx)
	if err != nil {
		return st, fmt.Errorf("backup: %w", err)
	}
	// The new file; or, if a backup of the same second had the same name,
	// the newest of the dataset's (the names end in the time, which sorts).
	for _, f := range after {
		if !slices.Contains(before, f) {
			st.File = f
		}
	}
	if st.File == "" && len(after) > 0 {
		st.File = after[len(after)-1]
	}
	if st.File == "" {
		return st, fmt.Errorf("backup: %w: task %s succeeded and the server lists no backup of /%s", kg.ErrProtocol, id, s.dataset)
	}
	return st, nil
}

// backups returns the names of the dataset's backups that the server
// lists (/$/backups-list), sorted.
func (s *Server) backups(ctx context.Context) ([]string, error) {
	body, err := s.do(ctx, "backups list", http.MethodGet, s.base+"/$/backups-list")
	if err != nil {
		return nil, err
	}
	var v struct {
		Backups []string `json:"backups"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, &kg.Error{Op: "backups list", Status: http.StatusOK, Body: cut(string(body)), Err: fmt.Errorf("%w: %v", kg.ErrProtocol, err)}
	}
	var mine []string
	for _, f := range v.Backups {
		if strings.HasPrefix(f, s.dataset+"_") {
			mine = append(mine, f)
		}
	}
	slices.Sort(mine)
	return mine, nil
}

// RestoreStats is what Restore wrote.
type RestoreStats struct {
	Quads   int  // quads loaded
	Batches int  // requests sent, each one transaction
	Planned int  // requests to send
	Dropped bool // the dataset's former data was dropped (replace)
	// Replica is the quads of the backup's replica records (the graph
	// ontology.ReplicaGraph and those under it: a backup of a cluster's
	// replica holds its applier's offsets) left out on a replicated
	// store, whose replicas each keep their own.
	Replica int
}

// Restore loads a backup into the dataset: N-Quads, gzipped or not
// (Backup's file, or a Graph Store dump of the whole dataset). Unlike
// Import it applies none of the writers' rules: a backup holds the whole
// dataset (the ontology, the shared values and every session, PROV record
// and staging graph) as the store held it, and is loaded as it is. An
// Export holds the sessions and PROV records only: it goes back with
// Import, which derives the shared values again. The dataset must be
// empty, or replace must be set, and then its data is dropped first.
//
// Restore reads the backup twice, streaming: once to parse all of it
// before it writes anything, then from the start again (r is sought back)
// to send it in batches, each one request (one transaction) of at most
// 50,000 quads; it holds one batch in memory, and the quads that hold
// blank nodes (Trails writes none, but a backup may hold them: the SHACL
// shapes of the ontology graph do), which all go in the last batch, so
// that each blank node stays one. The drop and the batches are not one
// transaction: a restore that fails or is interrupted part way leaves
// part of the backup; running it again with replace completes it.
// progress, if not nil, is called after each batch with the quads written
// so far and the total.
//
// On a replicated store (a cluster.Client: every replica applies the
// restore from the log) the replicas' own records are no data: the
// dataset counts as empty when it holds nothing else, replace keeps them,
// and the backup's (a backup of a replica holds its applier's offsets)
// are left out (RestoreStats.Replica). A store sharded into replica
// groups (a cluster.Sharded) is refused: a restore there is not built.
//
// It returns an *ImportError (RuleSyntax, wrapping session.ErrInvalid) for
// a backup that does not parse, with its line; ErrNotEmpty for a dataset
// holding data without replace; ErrUnsupported on a sharded store; the
// error of r; the error of ctx; or a store error wrapping the kg error.
func (ds *Dataset) Restore(ctx context.Context, r io.ReadSeeker, replace bool, progress func(done, total int)) (_ RestoreStats, err error) {
	ctx, call := telemetry.Start(ctx, "admin.Restore", "")
	defer func() { call.End(err) }()
	st, err := ds.restore(ctx, r, replace, progress)
	if err != nil {
		return st, fmt.Errorf("restore: %w", err)
	}
	return st, nil
}

// restoreBatchQuads bounds the quads of one request of a restore.
var restoreBatchQuads = 50_000

func (ds *Dataset) restore(ctx context.Context, r io.ReadSeeker, replace bool, progress func(done, total int)) (RestoreStats, error) {
	var st RestoreStats
	if t, ok := ds.c.(treeRouted); ok && t.RoutesByTree() {
		return st, fmt.Errorf("%w: a store sharded into replica groups (its drop and its load would need every group's log; not built): restore into a one-group cluster or a single Fuseki", ErrUnsupported)
	}
	replicated := ds.replicated()
	// skip reports whether quad q is left out: a replica's own record, on
	// a replicated store.
	skip := func(q rdfio.Quad) bool {
		return replicated && q.G != nil && strings.HasPrefix(q.G.String(), ontology.ReplicaGraph)
	}
	total, blank := 0, 0
	check := rdfio.NewEncoder(io.Discard, rdfio.NQuads) // a term it cannot write fails here, not half way
	if err := eachBackupQuad(r, func(q rdfio.Quad) error {
		if skip(q) {
			st.Replica++
			return nil
		}
		total++
		if hasBlank(q) {
			blank++
		}
		return check.Encode(q)
	}); err != nil {
		return st, err
	}
	plain := total - blank
	st.Planned = (plain + restoreBatchQuads - 1) / restoreBatchQuads
	if blank > 0 {
		st.Planned++
	}
	has, err := ds.c.Ask(ctx, query("restore-any.rq"))
	if err != nil {
		return st, err
	}
	if has && !replace {
		return st, fmt.Errorf("%w (restore loads a backup into an empty dataset, or in place of its data)", ErrNotEmpty)
	}
	if has {
		drop := query("restore-drop.ru")
		if replicated {
			drop = query("restore-drop-replicated.ru")
		}
		if err := ds.c.Update(ctx, drop, kg.Idempotent()); err != nil {
			return st, err
		}
		st.Dropped = true
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return st, err
	}
	var batch, blanks bytes.Buffer
	enc, blankEnc := rdfio.NewEncoder(&batch, rdfio.NQuads), rdfio.NewEncoder(&blanks, rdfio.NQuads)
	n := 0
	send := func(data []byte, quads int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := ds.c.LoadQuads(ctx, data); err != nil {
			return err
		}
		st.Quads += quads
		st.Batches++
		if progress != nil {
			progress(st.Quads, total)
		}
		return nil
	}
	err = eachBackupQuad(r, func(q rdfio.Quad) error {
		if skip(q) {
			return nil
		}
		if hasBlank(q) {
			return blankEnc.Encode(q)
		}
		if err := enc.Encode(q); err != nil {
			return err
		}
		if n++; n < restoreBatchQuads {
			return nil
		}
		if err := enc.Close(); err != nil { // flushes into batch
			return err
		}
		err := send(batch.Bytes(), n)
		batch.Reset()
		n = 0
		return err
	})
	if err == nil && n > 0 {
		if err = enc.Close(); err == nil {
			err = send(batch.Bytes(), n)
		}
	}
	if err == nil && blank > 0 {
		if err = blankEnc.Close(); err == nil {
			err = send(blanks.Bytes(), blank)
		}
	}
	if err == nil && st.Quads != total {
		err = fmt.Errorf("%w: the backup changed while it was read (%d quads, then %d)", session.ErrInvalid, total, st.Quads)
	}
	return st, err
}

// eachBackupQuad calls f with each quad of the backup r, N-Quads gzipped
// or not, from where r stands. A quad that does not parse is an
// *ImportError of RuleSyntax.
func eachBackupQuad(r io.Reader, f func(rdfio.Quad) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	dec := rdfio.NewDecoder(br, rdfio.NQuads)
	for {
		q, err := dec.Decode()
		if errors.Is(err, io.EOF) {
			return nil
		}
		var se *rdfio.SyntaxError
		if errors.As(err, &se) {
			return &ImportError{Line: se.Line, Rule: RuleSyntax, Err: fmt.Errorf("%w: %s", session.ErrInvalid, se.Msg)}
		}
		if err != nil {
			return err
		}
		if err := f(q); err != nil {
			if errors.Is(err, kg.ErrInvalidTerm) {
				return &ImportError{Line: q.Line, Rule: RuleSyntax, Err: fmt.Errorf("%w: %v", session.ErrInvalid, err)}
			}
			return err
		}
	}
}

// hasBlank reports whether a term of q is a blank node.
func hasBlank(q rdfio.Quad) bool {
	for _, t := range []rdf.Term{q.S, q.O, q.G} {
		if _, ok := t.(rdf.Blank); ok {
			return true
		}
	}
	return false
}
