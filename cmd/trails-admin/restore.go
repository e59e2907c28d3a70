package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/trails-kg/trails/internal/render"
	"io"
	"os"

	"github.com/trails-kg/trails/admin"
)

type restoreCmd struct {
	replace bool
	json    bool
}

func (*restoreCmd) name() string  { return "restore" }
func (*restoreCmd) usage() string { return "FILE [--replace] [--json]" }
func (*restoreCmd) synopsis() string {
	return "load a backup (N-Quads, gzipped or not) as it is into an empty dataset, or in place of its data with --replace"
}
func (*restoreCmd) example() string {
	return "trails-admin restore trails_2026-11-27_21-30-00.nq.gz --replace && trails-admin check"
}
func (c *restoreCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.replace, "replace", false, "drop the dataset's data first (else a dataset holding data is refused)")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// restoreJSON is the JSON form of a restore (stable names).
type restoreJSON struct {
	Quads   int  `json:"quads"`
	Batches int  `json:"batches"`
	Dropped bool `json:"dropped"`
	Replica int  `json:"replica_quads_left_out"` // the backup's replica records, on --store kafka
}

func (c *restoreCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usageErrorf("restore needs one file (- for stdin); try: trails-admin restore -h")
	}
	in, err := openBackup(args[0])
	if err != nil {
		return err
	}
	defer in.Close()
	a.longRequests()
	ds, err := a.dataset(ctx)
	if err != nil {
		return err
	}
	p := a.progress("restore")
	st, err := ds.Restore(ctx, in, c.replace, func(done, total int) { p.update(done, total, "quads") })
	p.finish()
	switch {
	case errors.Is(err, admin.ErrNotEmpty):
		return fmt.Errorf("%w; give --replace to drop its data first", err)
	case err != nil && st.Batches > 0:
		fmt.Fprintf(a.stdout, "stopped after %d of %d batches: %s loaded\n", st.Batches, st.Planned, render.Plural(st.Quads, "quad"))
		return fmt.Errorf("%w; run the same command with --replace to restore it whole", err)
	case err != nil:
		return err
	}
	if c.json {
		return a.json(restoreJSON{Quads: st.Quads, Batches: st.Batches, Dropped: st.Dropped, Replica: st.Replica})
	}
	dropped := ""
	if st.Dropped {
		dropped = ", in place of the data dropped"
	}
	batches := "batches"
	if st.Batches == 1 {
		batches = "batch"
	}
	fmt.Fprintf(a.stdout, "restored %s in %d %s%s\n", render.Plural(st.Quads, "quad"), st.Batches, batches, dropped)
	if st.Replica > 0 {
		fmt.Fprintf(a.stdout, "left out the backup's %s of its replica's own records (each replica keeps its own)\n", render.Plural(st.Replica, "quad"))
	}
	fmt.Fprintln(a.stderr, "check it with: trails-admin check")
	return nil
}

// openBackup opens the backup file name, or for "-" a copy of stdin in a
// temporary file, removed on Close: Restore reads its input twice.
func openBackup(name string) (io.ReadSeekCloser, error) {
	if name != "-" {
		return os.Open(name)
	}
	f, err := os.CreateTemp("", "trails-restore-*.nq")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name()) // gone once closed
	if _, err := io.Copy(f, os.Stdin); err != nil {
		f.Close()
		return nil, fmt.Errorf("restore: copy stdin: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
