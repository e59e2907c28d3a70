package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

type backupCmd struct {
	base string
	json bool
}

func (*backupCmd) name() string  { return "backup" }
func (*backupCmd) usage() string { return "[--fuseki-base DIR] [--json]" }
func (*backupCmd) synopsis() string {
	return "have Fuseki back up the whole dataset (gzipped N-Quads in its backups directory); restore loads it"
}
func (*backupCmd) example() string {
	return "trails-admin backup\ntrails-admin restore ~/.cache/trails/run/fuseki-3030-base/backups/trails_2026-11-27_21-30-00.nq.gz --replace"
}
func (c *backupCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.base, "fuseki-base", "", "`DIR`, the server's FUSEKI_BASE on this machine, to print the backup's path; default: scripts/fuseki's for a local endpoint, if there")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// backupJSON is the JSON form of a backup (stable names); path and bytes
// are "" and -1 when the server's directory is not on this machine.
type backupJSON struct {
	Dataset string  `json:"dataset"`
	Task    string  `json:"task"`
	Seconds float64 `json:"seconds"`
	File    string  `json:"file"`
	Path    string  `json:"path"`
	Bytes   int64   `json:"bytes"`
}

func (c *backupCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return usageErrorf("backup takes no arguments; try: trails-admin backup -h")
	}
	a.longRequests()
	s, err := a.server(ctx)
	if err != nil {
		return err
	}
	p := a.progress("backup")
	p.update(0, 1, "waiting for the server's task")
	st, err := s.Backup(ctx)
	p.finish()
	if err != nil {
		return err
	}
	out := backupJSON{Dataset: s.Dataset(), Task: st.Task.ID, Seconds: st.Task.Took().Seconds(), File: st.File, Bytes: -1}
	base := c.base
	if base == "" {
		base = localBase(a.conn.Endpoint)
	}
	if base != "" {
		path := filepath.Join(base, "backups", st.File)
		if fi, err := os.Stat(path); err == nil {
			out.Path, out.Bytes = path, fi.Size()
		}
	}
	if c.json {
		return a.json(out)
	}
	if out.Path != "" {
		fmt.Fprintln(a.stdout, out.Path)
		fmt.Fprintf(a.stderr, "backed up /%s in %.1f s: %d bytes of gzipped N-Quads; restore with: trails-admin restore FILE --replace\n", out.Dataset, out.Seconds, out.Bytes)
		return nil
	}
	fmt.Fprintln(a.stdout, st.File)
	fmt.Fprintf(a.stderr, "backed up /%s in %.1f s into the server's backups directory (FUSEKI_BASE/backups on its machine); restore with: trails-admin restore FILE --replace\n", out.Dataset, out.Seconds)
	return nil
}
