package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/trails-kg/trails/internal/render"
	"os"
	"path/filepath"
	"strings"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/session"
)

type importCmd struct {
	sign   signFlags // --sign-key, --witness
	format string
}

func (*importCmd) name() string { return "import" }
func (*importCmd) usage() string {
	return "FILE [--format nquads|turtle] [--sign-key FILE --witness URL]"
}
func (*importCmd) synopsis() string {
	return "restore an export: checks everything first, refuses to overwrite differing sessions"
}
func (*importCmd) example() string { return "trails-admin import backup.nq" }
func (c *importCmd) flags(fs *flag.FlagSet) {
	c.sign.register(fs)
	fs.StringVar(&c.format, "format", "", "nquads or turtle (TriG); default: from the file name (.trig/.ttl: turtle, else nquads)")
}

func (c *importCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usageErrorf("import needs one file (- for stdin); try: trails-admin import -h")
	}
	name := args[0]
	format := c.format
	if format == "" {
		format = "nquads"
		switch ext := strings.ToLower(filepath.Ext(name)); ext {
		case ".trig", ".ttl":
			format = "turtle"
		case ".jsonl", ".ndjson":
			return usageErrorf("import: %s is JSONL, which is an export format only (one turn per line, for use elsewhere); import an nquads or turtle export", name)
		}
	}
	f, err := admin.ParseFormat(format)
	if err != nil || f == admin.JSONL {
		return usageErrorf("import: cannot import --format %q; want nquads or turtle; try: trails-admin import -h", format)
	}
	in := os.Stdin
	if name != "-" {
		if in, err = os.Open(name); err != nil {
			return err
		}
		defer in.Close()
	}
	a.longRequests()
	if err := a.sign(ctx, c.name(), c.sign); err != nil {
		return err
	}
	ds, err := a.dataset(ctx)
	if err != nil {
		return err
	}
	p := a.progress("import")
	stats, err := ds.Import(ctx, in, f, func(done, total int) { p.update(done, total, "quads") })
	p.finish()
	if err != nil && !(errors.Is(err, session.ErrNotWitnessed) && stats.Batches == stats.Planned) {
		if stats.Batches == 0 && !errors.Is(err, context.Canceled) {
			return err // refused, or failed before writing
		}
		// Stopped between batches (or in one, which may or may not have
		// landed): say what is written for sure.
		fmt.Fprintf(a.stdout, "stopped after %d of %d batches: imported %s (%s written)\n",
			stats.Batches, stats.Planned, render.Plural(stats.Quads, "quad"), render.Plural(stats.Sessions, "session"))
		return fmt.Errorf("%w; run the same command again to finish", err)
	}
	switch {
	case stats.Quads == 0 && stats.Unchanged > 0:
		fmt.Fprintf(a.stdout, "nothing to import: all %s are stored as in the file\n", render.Plural(stats.Unchanged, "session"))
	case stats.Quads == 0:
		fmt.Fprintln(a.stdout, "nothing to import: the store holds everything in the file")
	case stats.Unchanged > 0:
		fmt.Fprintf(a.stdout, "imported %s (%s written, %d stored as in the file already)\n",
			render.Plural(stats.Quads, "quad"), render.Plural(stats.Sessions, "session"), stats.Unchanged)
	default:
		fmt.Fprintf(a.stdout, "imported %s (%s written)\n", render.Plural(stats.Quads, "quad"), render.Plural(stats.Sessions, "session"))
	}
	if a.signer != nil {
		fmt.Fprintf(a.stderr, "signed the heads of %s written\n", render.Plural(stats.Signed, "session"))
	}
	return err // nil, or statements not witnessed (the import is stored)
}
