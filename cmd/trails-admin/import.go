package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/trails-kg/trails/session"
)

type importCmd struct {
	format string
}

func (*importCmd) name() string  { return "import" }
func (*importCmd) usage() string { return "FILE [--format nquads|turtle]" }
func (*importCmd) synopsis() string {
	return "restore an export: checks everything first, refuses to overwrite differing sessions"
}
func (*importCmd) example() string { return "trails-admin import backup.nq" }
func (c *importCmd) flags(fs *flag.FlagSet) {
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
		if strings.HasSuffix(name, ".trig") || strings.HasSuffix(name, ".ttl") {
			format = "turtle"
		}
	}
	f, err := session.ParseFormat(format)
	if err != nil || f == session.JSONL {
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
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	p := a.progress("import")
	stats, err := st.Import(ctx, in, f, func(done, total int) { p.update(done, total, "quads") })
	p.finish()
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "imported %s (%s written)\n", plural(stats.Quads, "quad"), plural(stats.Sessions, "session"))
	return nil
}
