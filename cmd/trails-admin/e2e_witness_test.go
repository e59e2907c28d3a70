package main_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trails-kg/trails/witness"
	"golang.org/x/mod/sumdb/note"
)

// server is a trails-admin witness process started by a test.
type server struct {
	url    string
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr strings.Builder
	done   chan error
}

var urlRE = regexp.MustCompile(`url=(http://\S+)`)

// startServer runs "trails-admin witness ARGS" and returns once it logs
// the URL it serves; it is stopped (SIGINT) when the test ends, and must
// then exit 0.
func startServer(tb testing.TB, args ...string) *server {
	tb.Helper()
	s := &server{cmd: exec.Command(bin, append([]string{"witness"}, args...)...), done: make(chan error, 1)}
	s.cmd.Env = append(os.Environ(), "TRAILS_ENDPOINT="+noStore)
	pipe, err := s.cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			s.mu.Lock()
			s.stderr.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		s.done <- s.cmd.Wait()
	}()
	tb.Cleanup(func() {
		s.cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-s.done:
			if err != nil {
				tb.Errorf("witness %s: exit %v on SIGINT; stderr:\n%s", args[0], err, s.log())
			}
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			tb.Errorf("witness %s did not stop on SIGINT", args[0])
		}
	})
	select {
	case s.url = <-urls:
		return s
	case err := <-s.done:
		tb.Fatalf("witness %s exited: %v; stderr:\n%s", args[0], err, s.log())
	case <-time.After(30 * time.Second):
		tb.Fatalf("witness %s: no URL logged in 30s; stderr:\n%s", args[0], s.log())
	}
	return nil
}

// log returns what the server wrote to stderr so far.
func (s *server) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// readKey reads a key file keygen wrote.
func readKey(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestWitnessServe: the witness and a cosigner run as processes of their
// own, each holding its key. A writer holding only its own key appends
// through the witness over HTTP; an attacker's key is refused (403); the
// checkpoints that the auditor then reads verify with the witness's
// public key and carry the cosigner's cosignature.
func TestWitnessServe(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := runner{endpoint: noStore}
	for _, k := range []string{"witness", "writer", "attacker", "cosigner"} {
		r.mustRun(t, 0, "keygen", "--out", filepath.Join(dir, k), k+".example")
	}
	keys := "witness " + readKey(t, filepath.Join(dir, "witness.pub")) + "\n" +
		"writer " + readKey(t, filepath.Join(dir, "writer.pub")) + "\n" +
		"cosigner " + readKey(t, filepath.Join(dir, "cosigner.pub")) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "keys.txt"), []byte(keys), 0o644); err != nil {
		t.Fatal(err)
	}

	cs := startServer(t, "cosign", "--state", filepath.Join(dir, "cosigner-state"), "--key", filepath.Join(dir, "cosigner.key"),
		"--log", filepath.Join(dir, "witness.pub"), "--listen", "127.0.0.1:0")
	ws := startServer(t, "serve", "--dir", filepath.Join(dir, "log"), "--key", filepath.Join(dir, "witness.key"),
		"--keys", filepath.Join(dir, "keys.txt"), "--listen", "127.0.0.1:0", "--checkpoint-every", "50ms", "--cosigner", cs.url)

	// The writer: its own key and the witness's URL, nothing else.
	writer, err := note.NewSigner(readKey(t, filepath.Join(dir, "writer.key")))
	if err != nil {
		t.Fatal(err)
	}
	attacker, err := note.NewSigner(readKey(t, filepath.Join(dir, "attacker.key")))
	if err != nil {
		t.Fatal(err)
	}
	c, err := witness.NewClient(ws.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := witness.Statement{Kind: witness.KindHead, Session: "0195f3a0-7c1e-7000-8000-00000000a001", Turns: 1,
		Digest: "sha256:" + strings.Repeat("a", 64), Chain: "sha256:" + strings.Repeat("b", 64), Time: time.Now()}
	entry, err := witness.Sign(st, writer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(ctx, entry); err != nil {
		t.Fatalf("the writer's Add: %v", err)
	}
	forged, err := witness.Sign(st, attacker)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(ctx, forged); !errors.Is(err, witness.ErrUnknownKey) {
		t.Fatalf("the attacker's Add: got %v, want ErrUnknownKey", err)
	}

	// The auditor: public keys only.
	list, err := witness.ParseKeyList([]byte(keys))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		signed, cp, err := witness.Audit(ctx, c, list.Witness, nil)
		if err == nil && cp.Size == 1 {
			if err = witness.VerifyCosignatures(signed, list.CosignerVerifiers(), 1); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no cosigned checkpoint of size 1 after 20s (last: size %d, %v); witness:\n%s\ncosigner:\n%s", cp.Size, err, ws.log(), cs.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWitnessUsage: the witness command's usage errors, and a checkpoint
// of a new directory, which creates its log.
func TestWitnessUsage(t *testing.T) {
	dir := t.TempDir()
	r := runner{endpoint: noStore}
	r.mustRun(t, 0, "keygen", "--out", filepath.Join(dir, "witness"), "witness.example")
	r.mustRun(t, 2, "witness")
	r.mustRun(t, 2, "witness", "publish")
	r.mustRun(t, 2, "witness", "serve", "--dir", dir, "--key", filepath.Join(dir, "witness.key"))
	r.mustRun(t, 2, "witness", "cosign", "--state", dir, "--key", filepath.Join(dir, "witness.key"))
	// A key list whose witness line is another key than the one served.
	r.mustRun(t, 0, "keygen", "--out", filepath.Join(dir, "other"), "witness.example")
	r.mustRun(t, 0, "keygen", "--out", filepath.Join(dir, "writer"), "writer.example")
	keys := "witness " + readKey(t, filepath.Join(dir, "other.pub")) + "\nwriter " + readKey(t, filepath.Join(dir, "writer.pub")) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "keys.txt"), []byte(keys), 0o644); err != nil {
		t.Fatal(err)
	}
	r.mustRun(t, 2, "witness", "serve", "--dir", filepath.Join(dir, "log"), "--key", filepath.Join(dir, "witness.key"), "--keys", filepath.Join(dir, "keys.txt"), "--listen", "127.0.0.1:0")

	res := r.mustRun(t, 0, "checkpoint", "--witness", filepath.Join(dir, "new"), "--key", filepath.Join(dir, "witness.key"))
	v, err := note.NewVerifier(readKey(t, filepath.Join(dir, "witness.pub")))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := witness.OpenCheckpoint([]byte(res.stdout), v)
	if err != nil || cp.Size != 0 {
		t.Fatalf("checkpoint of a new directory: size %d, %v; want an empty log's", cp.Size, err)
	}
	if !strings.Contains(res.stderr, "created an empty witness log") {
		t.Errorf("stderr: got %q, want it to say that it created the log", res.stderr)
	}
}
