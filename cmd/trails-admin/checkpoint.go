package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trails-kg/trails/witness"
)

// checkpointCmd is "checkpoint": sign a checkpoint of a witness log, as
// its operator does after writes (witness.Dir.Checkpoint): verify sees the
// entries the last checkpoint covers, no more. On a directory with no log
// it creates the log, empty, and signs its first checkpoint, as "witness
// serve" does when it starts.
type checkpointCmd struct{ witness, key string }

func (*checkpointCmd) name() string  { return "checkpoint" }
func (*checkpointCmd) usage() string { return "--witness DIR --key FILE" }
func (*checkpointCmd) synopsis() string {
	return "sign a checkpoint of a witness log with the witness key, on the witness's host, so that verify sees every entry added so far (a new DIR gets an empty log; witness serve also signs every --checkpoint-every)"
}
func (*checkpointCmd) example() string {
	return "trails-admin checkpoint --witness /srv/trails-witness --key witness.key"
}
func (c *checkpointCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.witness, "witness", "", "the witness directory `DIR` (created with an empty log if it has none)")
	fs.StringVar(&c.key, "key", "", "the `FILE` holding the witness's secret key (keygen's PREFIX.key), which stays on the witness's host")
}

func (c *checkpointCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 || c.witness == "" || c.key == "" {
		return usageErrorf("checkpoint needs --witness and --key and takes no arguments; try: trails-admin checkpoint -h")
	}
	signer, err := readSigner("checkpoint", c.key)
	if err != nil {
		return err
	}
	_, err = os.Stat(filepath.Join(c.witness, witness.LogFile))
	created := errors.Is(err, os.ErrNotExist)
	w, err := witness.OpenDir(ctx, c.witness, signer)
	if err != nil {
		if errors.Is(err, witness.ErrUnknownKey) {
			return fmt.Errorf("checkpoint: witness %s: its checkpoints are signed by another key than --key %s (the witness's own key signs them): %w", c.witness, c.key, err)
		}
		return fmt.Errorf("checkpoint: witness %s: %w", c.witness, err)
	}
	defer w.Close()
	signed, err := w.Checkpoint(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if created {
		fmt.Fprintf(a.stderr, "created an empty witness log in %s, origin %s; writers append to it through trails-admin witness serve\n", c.witness, signer.Name())
	}
	fmt.Fprint(a.stdout, string(signed))
	return nil
}
