package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/witness"
)

// witnessEvery is the --checkpoint-every the witness server runs with:
// trails-admin witness serve's default, so that it signs checkpoints
// while the writers add, as a witness in service does.
const witnessEvery = time.Second

// buildAdmin builds trails-admin from the checkout the benchmark runs in
// into a new directory under os.TempDir and returns the binary's path and
// the directory, which the caller removes.
func buildAdmin(ctx context.Context) (bin, dir string, err error) {
	root, err := fusekitest.RepoRoot()
	if err != nil {
		return "", "", fmt.Errorf("build trails-admin: %w (run trails-bench inside the Trails checkout, or give -trails-admin FILE)", err)
	}
	dir, err = os.MkdirTemp("", "trails-bench-bin-")
	if err != nil {
		return "", "", err
	}
	bin = filepath.Join(dir, "trails-admin")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/trails-admin")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("go build ./cmd/trails-admin in %s: %w\n%s", root, err, bytes.TrimSpace(out))
	}
	return bin, dir, nil
}

// witnessProc is "trails-admin witness serve" as a child process: the
// witness as a process of its own, holding the witness key, which writers
// reach over HTTP with a witness.Client.
type witnessProc struct {
	Dir      string        // its --dir
	URL      string        // where it listens
	Log      string        // its stderr and stdout
	verifier note.Verifier // the witness key's
	work     string        // the directory of Dir, its keys and Log
	cmd      *exec.Cmd
	cancel   context.CancelFunc
	done     chan struct{} // closed when it has exited
}

// startWitness starts bin (trails-admin) serving a new witness in a
// directory under scratch, with a new witness key and a key list naming
// writer (a verifier key's text form) as its one writer key, and waits
// until it answers. The caller stops it with stop, which also removes the
// directory; ctx ending stops it too.
func startWitness(ctx context.Context, bin, scratch, writer string) (_ *witnessProc, err error) {
	work, err := os.MkdirTemp(scratch, "witness-server-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(work)
		}
	}()
	skey, vkey, err := note.GenerateKey(rand.Reader, "witness-server.trails-bench")
	if err != nil {
		return nil, err
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, err
	}
	keyFile, keysFile := filepath.Join(work, "witness.key"), filepath.Join(work, "keys.txt")
	if err := os.WriteFile(keyFile, []byte(skey+"\n"), 0o600); err != nil {
		return nil, err
	}
	keys := fmt.Sprintf("# trails-bench: the witness server's key list\nwitness %s\nwriter %s\n", vkey, writer)
	if err := os.WriteFile(keysFile, []byte(keys), 0o644); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p := &witnessProc{Dir: filepath.Join(work, "log"), URL: "http://" + addr, Log: filepath.Join(work, "witness.log"), verifier: v, work: work, done: make(chan struct{})}
	lf, err := os.Create(p.Log)
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	cctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(cctx, bin, "witness", "serve", "--dir", p.Dir, "--key", keyFile, "--keys", keysFile,
		"--listen", addr, "--checkpoint-every", witnessEvery.String())
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) } // it shuts down; killed after WaitDelay
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start %s witness serve: %w", bin, err)
	}
	p.cmd, p.cancel = cmd, cancel
	go func() { cmd.Wait(); close(p.done) }()
	if err := p.wait(ctx); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// wait waits until the witness answers over HTTP (any answer: before its
// first checkpoint it answers ErrNoCheckpoint), for at most 30 seconds.
func (p *witnessProc) wait(ctx context.Context) error {
	c, err := witness.NewClient(p.URL, nil)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.Checkpoint(actx)
		cancel()
		if err == nil || !errors.Is(err, witness.ErrUnavailable) {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("trails-admin witness serve exited before answering (%v); its log ends:\n%s", p.cmd.ProcessState, p.tail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("trails-admin witness serve does not answer at %s after 30 s: %w; its log ends:\n%s", p.URL, err, p.tail())
		}
	}
}

// tail returns the end of the witness's log (which the run removes with
// its directory), for an error message.
func (p *witnessProc) tail() string {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return err.Error()
	}
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return string(bytes.TrimSpace(b))
}

// exited reports whether the process has exited.
func (p *witnessProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop interrupts the witness (it shuts down as on Ctrl-C), kills it if
// it has not exited 10 seconds later, waits for it and removes its
// directory.
func (p *witnessProc) stop() {
	if p.cmd == nil {
		return
	}
	p.cancel()
	<-p.done
	p.cmd = nil
	os.RemoveAll(p.work)
}

// checkpoint waits until the witness has signed a checkpoint of at least
// n entries (it signs one every witnessEvery once its log grew) and
// returns it, for at most a minute.
func (p *witnessProc) checkpoint(ctx context.Context, c *witness.Client, n uint64) ([]byte, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		signed, err := c.Checkpoint(ctx)
		switch {
		case err == nil:
			cp, err := witness.OpenCheckpoint(signed, p.verifier)
			if err != nil {
				return nil, fmt.Errorf("the witness server's checkpoint: %w", err)
			}
			if cp.Size >= n {
				return signed, nil
			}
		case !errors.Is(err, witness.ErrNoCheckpoint):
			return nil, fmt.Errorf("the witness server's checkpoint: %w", err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the witness server signed no checkpoint of %d entries in a minute (its log: %s)", n, p.Log)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
