package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"github.com/trails-kg/trails/internal/render"
	"io"
	"os"
	"path/filepath"

	"github.com/trails-kg/trails/admin"
)

type exportCmd struct {
	format string
	output string
}

func (*exportCmd) name() string  { return "export" }
func (*exportCmd) usage() string { return "[ID ...] [--format nquads|turtle|jsonl] [-o FILE]" }
func (*exportCmd) synopsis() string {
	return "back up the whole dataset, or the trees of the given sessions with their ancestors"
}
func (*exportCmd) example() string {
	return "trails-admin export -o backup.nq\ntrails-admin export 019aa4c5-6f1e-7c3a-9d2b-5e8f0a1b2c3d --format jsonl > turns.jsonl"
}
func (c *exportCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.format, "format", "nquads", "nquads (the backup format), turtle (TriG: Turtle with graphs) or jsonl (one turn per line)")
	fs.StringVar(&c.output, "o", "", "write to `FILE` instead of stdout (written whole or not at all)")
}

func (c *exportCmd) run(ctx context.Context, a *app, args []string) error {
	f, err := admin.ParseFormat(c.format)
	if err != nil {
		return usageErrorf("export: unknown --format %q; want nquads, turtle or jsonl; try: trails-admin export -h", c.format)
	}
	a.longRequests()
	ds, err := a.dataset(ctx)
	if err != nil {
		return err
	}
	w, commit, abort, err := c.sink(a.stdout)
	if err != nil {
		return err
	}
	p := a.progress("export")
	p.update(0, 1, "")
	stats, err := ds.Export(ctx, w, f, args...)
	p.finish()
	if err != nil {
		abort()
		return err
	}
	if err := commit(); err != nil {
		return err
	}
	// The two counts differ for the same data, so each says what it counts.
	msg := fmt.Sprintf("exported %s: %s (each session's own, as stored: a fork's inherited prefix is its ancestors'), %s",
		render.Plural(stats.Sessions, "session"), render.Plural(stats.Turns, "stored turn"), render.Plural(stats.Quads, "quad"))
	if f == admin.JSONL {
		msg = fmt.Sprintf("exported %s: %s, one per turn of each session's effective history (a fork's inherited turns again under the fork)",
			render.Plural(stats.Sessions, "session"), render.Plural(stats.Turns, "line"))
	}
	fmt.Fprintln(a.stderr, msg)
	return nil
}

// sink returns where the export goes: stdout, or a temporary file renamed
// to the output file once the export is complete.
func (c *exportCmd) sink(stdout io.Writer) (w io.Writer, commit func() error, abort func(), err error) {
	if c.output == "" || c.output == "-" {
		bw := bufio.NewWriterSize(stdout, 1<<16)
		return bw, bw.Flush, func() { bw.Flush() }, nil
	}
	tmp, replace, abort, err := replaceFile(c.output)
	if err != nil {
		return nil, nil, nil, err
	}
	bw := bufio.NewWriterSize(tmp, 1<<16)
	commit = func() error {
		if err := bw.Flush(); err != nil {
			return err
		}
		return replace()
	}
	return bw, commit, abort, nil
}

// replaceFile returns a temporary file beside path, commit, which closes
// it and renames it to path, and abort, which removes it: a reader of path
// sees the old file or the whole new one.
func replaceFile(path string) (tmp *os.File, commit func() error, abort func(), err error) {
	tmp, err = os.CreateTemp(dirOf(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, nil, nil, err
	}
	commit = func() error {
		if err := tmp.Close(); err != nil {
			os.Remove(tmp.Name())
			return err
		}
		return os.Rename(tmp.Name(), path)
	}
	abort = func() { tmp.Close(); os.Remove(tmp.Name()) }
	return tmp, commit, abort, nil
}

func dirOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[:i+1]
		}
	}
	return "."
}
