package main

import (
	"context"
	"flag"
	"fmt"
)

type compactCmd struct {
	db   string
	json bool
}

func (*compactCmd) name() string  { return "compact" }
func (*compactCmd) usage() string { return "[--db DIR] [--json]" }
func (*compactCmd) synopsis() string {
	return "compact the dataset's TDB2 database (Fuseki's admin API) and say how big it was and is"
}
func (*compactCmd) example() string {
	return "trails-admin compact --db ~/.local/share/trails/fuseki/databases/trails"
}
func (c *compactCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.db, "db", "", "measure `DIR`, the dataset's TDB2 directory on this machine (holding Data-NNNN), before and after; default: scripts/fuseki's ($TRAILS_DATA/databases/NAME) for a local endpoint, if there")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// compactionJSON is the JSON form of a compaction (stable names); the sizes
// are -1 when not measured.
type compactionJSON struct {
	Dataset     string  `json:"dataset"`
	Task        string  `json:"task"`
	Seconds     float64 `json:"seconds"`
	DB          string  `json:"db"`
	BytesBefore int64   `json:"bytes_before"`
	BytesAfter  int64   `json:"bytes_after"`
	From        string  `json:"generation_before"`
	To          string  `json:"generation_after"`
}

func (c *compactCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		return usageErrorf("compact takes no arguments; try: trails-admin compact -h")
	}
	a.longRequests()
	s, err := a.server(ctx)
	if err != nil {
		return err
	}
	db := c.db
	if db == "" {
		db = localDatabase(a.conn.Endpoint, s.Dataset())
	}
	p := a.progress("compact")
	p.update(0, 1, "waiting for the server's task")
	st, err := s.Compact(ctx, db)
	p.finish()
	if err != nil {
		return err
	}
	if c.json {
		return a.json(compactionJSON{Dataset: s.Dataset(), Task: st.Task.ID, Seconds: st.Task.Took().Seconds(),
			DB: st.Dir, BytesBefore: st.Before, BytesAfter: st.After, From: st.From, To: st.To})
	}
	tw := a.table()
	fmt.Fprintf(tw, "dataset\t/%s\n", s.Dataset())
	fmt.Fprintf(tw, "task\t%s, %.1f s\n", st.Task.ID, st.Task.Took().Seconds())
	if st.Dir != "" {
		fmt.Fprintf(tw, "database\t%s\n", st.Dir)
		fmt.Fprintf(tw, "before\t%s\t%s\n", byteSize(st.Before), st.From)
		fmt.Fprintf(tw, "after\t%s\t%s\n", byteSize(st.After), st.To)
	}
	tw.Flush()
	switch {
	case st.Dir == "":
		fmt.Fprintln(a.stderr, "compacted; sizes not measured: give --db DIR, the dataset's TDB2 directory on the server's machine (Fuseki's API does not say how big a dataset is)")
	case st.From == st.To:
		fmt.Fprintf(a.stderr, "compacted, but %s still holds %s: it is not this dataset's database (check --db)\n", st.Dir, st.To)
	default:
		fmt.Fprintf(a.stderr, "compacted: %s freed\n", byteSize(st.Before-st.After))
	}
	return nil
}

// byteSize writes n bytes in binary units: "6.4 MiB (6737920 bytes)".
func byteSize(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d bytes", n)
	}
	v, i := float64(n), -1
	for (v >= unit || v <= -unit) && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB (%d bytes)", v, "KMGTP"[i], n)
}
