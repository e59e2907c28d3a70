package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// signFlags are --sign-key and --witness of the commands that write
// session heads (fork, merge, rewind, delete, detach, import, rechain,
// demo): sign what the command writes with the operator's writer key and
// add the statements to the witness served at a URL (docs/verify.md).
type signFlags struct{ key, witness string }

// The environment's equivalents of --sign-key and --witness.
const (
	envSignKey = "TRAILS_SIGN_KEY"
	envWitness = "TRAILS_WITNESS"
)

// register adds the flags to fs, with the environment's values as
// defaults.
func (s *signFlags) register(fs *flag.FlagSet) {
	s.key, s.witness = os.Getenv(envSignKey), os.Getenv(envWitness)
	fs.StringVar(&s.key, "sign-key", s.key, "sign what the command writes with the writer key in `FILE` (keygen's PREFIX.key, PRIVATE+KEY+...), which the witness's key list trusts; with --witness ($"+envSignKey+")")
	fs.StringVar(&s.witness, "witness", s.witness, "add the signed statements to the witness served at `URL` (trails-admin witness serve; a witness directory cannot be appended to without the witness's own key, which a writer does not hold); with --sign-key ($"+envWitness+")")
}

// sign makes the store and the dataset the command uses sign its writes
// (session.WithSigning, admin.WithSigning) when s gives a key and a
// witness; it does nothing when s gives neither. It returns a usage error
// for one without the other, a key file that is not a secret note key, or
// a witness that is no http(s) URL; and an error, before anything is
// written, when the witness cannot be reached.
func (a *app) sign(ctx context.Context, cmd string, s signFlags) error {
	switch {
	case s.key == "" && s.witness == "":
		return nil
	case s.key == "" || s.witness == "":
		return usageErrorf("%s: --sign-key and --witness go together ($%s, $%s): give both to sign what %s writes, or neither; try: trails-admin %s -h", cmd, envSignKey, envWitness, cmd, cmd)
	}
	text, err := os.ReadFile(s.key)
	if err != nil {
		return usageErrorf("%s: --sign-key: %v", cmd, err)
	}
	signer, err := note.NewSigner(strings.TrimSpace(string(text)))
	if err != nil {
		return usageErrorf("%s: --sign-key %s: not a secret note key (PRIVATE+KEY+NAME+HASH+KEY, as trails-admin keygen writes to PREFIX.key): %v", cmd, s.key, err)
	}
	if u, err := url.Parse(s.witness); err != nil || u.Scheme != "http" && u.Scheme != "https" {
		return usageErrorf("%s: --witness %s: want the URL of a witness server (http://HOST:PORT, trails-admin witness serve); a writer appends through the server, since a witness directory cannot be appended to without the witness's key", cmd, s.witness)
	}
	c, err := witness.NewClient(s.witness, nil)
	if err != nil {
		return usageErrorf("%s: --witness: %v", cmd, err)
	}
	if _, err := c.Checkpoint(ctx); err != nil && !errors.Is(err, witness.ErrNoCheckpoint) {
		return fmt.Errorf("%s: the witness at %s does not answer (start it with trails-admin witness serve, or give --witness): nothing was written: %w", cmd, c.URL(), err)
	}
	a.signer, a.witness = signer, c
	return nil
}

// witnessHint adds to an error of a signed write that the witness
// refused the statement what to do about it.
func (a *app) witnessHint(err error) error {
	if a.signer == nil || !errors.Is(err, session.ErrNotWitnessed) {
		return err
	}
	switch {
	case errors.Is(err, witness.ErrUnknownKey), errors.Is(err, witness.ErrBadSignature):
		return fmt.Errorf("%w (the write is stored; the witness does not trust the key %s+%08x of --sign-key: add its public key, keygen's PREFIX.pub, as a writer line of the key list the witness serves with)", err, a.signer.Name(), a.signer.KeyHash())
	case errors.Is(err, witness.ErrOutsideWindow):
		return fmt.Errorf("%w (the write is stored; the key list the witness serves with trusts the key %s+%08x of --sign-key at another time: see its since and until)", err, a.signer.Name(), a.signer.KeyHash())
	}
	return fmt.Errorf("%w (the write is stored; verify reports it until a statement of its head reaches the witness)", err)
}
