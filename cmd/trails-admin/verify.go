package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/session"
	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// verifyCmd is "verify": compare the store with the witness's signed heads
// (admin.Dataset.Verify).
type verifyCmd struct {
	key, witness, checkpoint, tree string
	cosigners                      int
	mark, json                     bool
}

func (*verifyCmd) name() string { return "verify" }
func (*verifyCmd) usage() string {
	return "--key FILE --witness DIR|URL [--checkpoint FILE] [--cosigners N] [--mark] [--json] [--tree ID | SESSION...]"
}
func (*verifyCmd) synopsis() string {
	return "compare the store with the writers' signed heads in a witness: edits, truncations, reorders, rollbacks, re-chains, unsigned deletions; exit 1 on any finding"
}
func (*verifyCmd) example() string {
	return "trails-admin verify --key keys.txt --witness /srv/trails-witness --checkpoint last.checkpoint\n" +
		"trails-admin verify --key keys.txt --witness /srv/trails-witness --tree 0195f3a0-7c1e-7000-8000-00000000a001 --json"
}
func (c *verifyCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.key, "key", "", "the key list `FILE`: the witness key and the trusted writer keys (see docs/verify.md)")
	fs.StringVar(&c.witness, "witness", "", "the witness: its directory (read only), or the URL of trails-admin witness serve (http://HOST:PORT)")
	fs.IntVar(&c.cosigners, "cosigners", 0, "require `N` cosignatures on the witness's checkpoint by the key list's cosigners (independent witnesses): two auditors shown two logs then fail")
	fs.StringVar(&c.checkpoint, "checkpoint", "", "a `FILE` holding the witness checkpoint trusted before: the witness must extend it; verify writes the new one there (created if missing: trust on first use)")
	fs.StringVar(&c.tree, "tree", "", "verify the fork tree under session `ID` (it and its forks, their forks, ...)")
	fs.BoolVar(&c.mark, "mark", false, "write each verified session's head in the graph https://w3id.org/trails/graph/verified, for the audit query unverified")
	fs.BoolVar(&c.json, "json", false, "print JSON")
}

// verifyFindingJSON is the JSON form of a verify finding (stable names).
type verifyFindingJSON struct {
	Kind    string `json:"kind"`
	Session string `json:"session,omitempty"`
	Turn    *int   `json:"turn,omitempty"`
	Entry   *int64 `json:"entry,omitempty"`
	Message string `json:"message"`
}

func (c *verifyCmd) run(ctx context.Context, a *app, args []string) error {
	if c.key == "" || c.witness == "" {
		return usageErrorf("verify needs --key and --witness; try: trails-admin verify -h")
	}
	if c.tree != "" && len(args) > 0 {
		return usageErrorf("verify takes --tree or session ids, not both; try: trails-admin verify -h")
	}
	for _, id := range append([]string{c.tree}, args...) {
		if id == "" {
			continue
		}
		if err := session.CheckID(id); err != nil {
			return fmt.Errorf("verify: %w", err)
		}
	}
	text, err := os.ReadFile(c.key)
	if err != nil {
		return usageErrorf("verify: --key: %v", err)
	}
	keys, err := witness.ParseKeyList(text)
	if err != nil {
		return usageErrorf("verify: --key %s: %v", c.key, err)
	}
	if keys.Witness == nil {
		return usageErrorf("verify: --key %s names no witness key (a line \"witness KEY\")", c.key)
	}
	if c.cosigners < 0 || c.cosigners > len(keys.Cosigners) {
		return usageErrorf("verify: --cosigners %d: the key list %s names %d cosigners (lines \"cosigner KEY\")", c.cosigners, c.key, len(keys.Cosigners))
	}
	remote := strings.HasPrefix(c.witness, "http://") || strings.HasPrefix(c.witness, "https://")
	if _, err := os.Stat(filepath.Join(c.witness, witness.LogFile)); err != nil && !remote {
		return usageErrorf("verify: --witness %s: no witness log there (%v); a witness served over HTTP is named by its URL", c.witness, err)
	}
	var trusted []byte
	if c.checkpoint != "" {
		trusted, err = os.ReadFile(c.checkpoint)
		if errors.Is(err, fs.ErrNotExist) {
			trusted = nil
		} else if err != nil {
			return usageErrorf("verify: --checkpoint: %v", err)
		}
	}
	var w witness.Witness
	if remote {
		if w, err = witness.NewClient(c.witness, nil); err != nil {
			return usageErrorf("verify: --witness %s: %v", c.witness, err)
		}
	} else {
		d, err := witness.OpenDirReadOnly(ctx, c.witness)
		if err != nil {
			return fmt.Errorf("verify: witness %s: %w", c.witness, err)
		}
		defer d.Close()
		w = d
	}
	a.longRequests()
	ds, err := a.dataset(ctx)
	if err != nil {
		return err
	}
	opts := admin.VerifyOptions{Witness: w, Keys: keys, Trusted: trusted, Mark: c.mark, Cosigners: c.cosigners}
	if len(args) > 0 {
		opts.Sessions = args
	}
	if c.tree != "" {
		st, err := a.store(ctx)
		if err != nil {
			return err
		}
		top, err := st.Tree(ctx, c.tree)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		top.Walk(func(n *session.Node) { opts.Sessions = append(opts.Sessions, n.ID) })
	}
	p := a.progress("verify")
	p.update(0, 1, "reading the witness and the whole dataset")
	rep, err := ds.Verify(ctx, opts)
	p.finish()
	if err != nil {
		return err
	}
	if c.checkpoint != "" {
		if err := writeFileAtomic(c.checkpoint, rep.Checkpoint); err != nil {
			return fmt.Errorf("verify: keep the checkpoint: %w", err)
		}
	}
	if c.json {
		out := struct {
			Findings []verifyFindingJSON `json:"findings"`
			Count    int                 `json:"count"`
			Sessions int                 `json:"sessions"`
			Verified int                 `json:"verified"`
			Deleted  int                 `json:"deleted"`
			Entries  uint64              `json:"entries"`
			Marked   int                 `json:"marked"`
		}{Findings: []verifyFindingJSON{}, Count: len(rep.Findings), Sessions: rep.Sessions, Verified: rep.Verified, Deleted: rep.Deleted, Entries: rep.Size, Marked: rep.Marked}
		for _, f := range rep.Findings {
			j := verifyFindingJSON{Kind: f.Kind, Session: f.Session, Message: f.Message}
			if f.Turn >= 0 {
				j.Turn = &f.Turn
			}
			if f.Entry >= 0 {
				j.Entry = &f.Entry
			}
			out.Findings = append(out.Findings, j)
		}
		if err := a.json(out); err != nil {
			return err
		}
	} else {
		tw := a.table()
		if len(rep.Findings) > 0 {
			fmt.Fprintln(tw, "KIND\tSESSION\tFINDING")
		}
		for _, f := range rep.Findings {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", termsafe.String(f.Kind), termsafe.String(f.Session), termsafe.String(f.Message))
		}
		tw.Flush()
	}
	fmt.Fprintf(a.stderr, "%s verified of %s, against %s", render.Plural(rep.Verified, "session"), render.Plural(rep.Sessions, "session"), entries(rep.Size))
	if rep.Deleted > 0 {
		fmt.Fprintf(a.stderr, "; %s deleted with a signed deletion", render.Plural(rep.Deleted, "session"))
	}
	fmt.Fprintln(a.stderr)
	if c.mark {
		fmt.Fprintf(a.stderr, "marked %s\n", render.Plural(rep.Marked, "session"))
	}
	if len(rep.Findings) > 0 {
		fmt.Fprintf(a.stderr, "%s\n", render.Plural(len(rep.Findings), "finding"))
		return errFindings
	}
	fmt.Fprintln(a.stderr, "no findings")
	return nil
}

// writeFileAtomic replaces file name with data (replaceFile).
func writeFileAtomic(name string, data []byte) error {
	tmp, commit, abort, err := replaceFile(name)
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		abort()
		return err
	}
	return commit()
}

// keygenCmd is "keygen": make an ed25519 key pair for a writer or a
// witness, in note's text forms.
type keygenCmd struct{ out string }

func (*keygenCmd) name() string  { return "keygen" }
func (*keygenCmd) usage() string { return "[--out PREFIX] NAME" }
func (*keygenCmd) synopsis() string {
	return "make a signing key pair for a writer or a witness (PREFIX.key, secret; PREFIX.pub, for the key list)"
}
func (*keygenCmd) example() string { return "trails-admin keygen --out agent-a agent-a.example" }
func (c *keygenCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.out, "out", "", "write the keys to `PREFIX`.key (mode 0600) and PREFIX.pub instead of printing them")
}

func (c *keygenCmd) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usageErrorf("keygen takes one key name; try: trails-admin keygen -h")
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, args[0])
	if err != nil {
		return usageErrorf("keygen: key name %s: %v", termsafe.Quote(args[0]), err)
	}
	if c.out == "" {
		fmt.Fprintf(a.stdout, "%s\n%s\n", skey, vkey)
		return nil
	}
	if err := writeNew(c.out+".key", skey, 0o600); err != nil {
		return err
	}
	if err := writeNew(c.out+".pub", vkey, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "wrote %s.key (keep it secret, with its owner only: a writer key in its writing process, a witness or cosigner key on that server's host) and %s.pub\n", c.out, c.out)
	return nil
}

// writeNew writes line to a new file name with mode perm; it never
// replaces a file (a key overwritten is lost).
func writeNew(name, line string, perm os.FileMode) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("keygen: %w", err)
	}
	return f.Close()
}

// entries returns "1 witness entry", "2 witness entries".
func entries(n uint64) string {
	if n == 1 {
		return "1 witness entry"
	}
	return fmt.Sprintf("%d witness entries", n)
}
