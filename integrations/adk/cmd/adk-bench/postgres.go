package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trails-kg/trails/internal/fusekitest"
	"github.com/trails-kg/trails/internal/proc"
)

// postgresBins is where Debian's package postgresql puts the binaries of
// each major version.
const postgresBins = "/usr/lib/postgresql/*/bin"

// postgresPackage is the Debian package that brings them.
const postgresPackage = "postgresql"

// errNoPostgres is returned when no PostgreSQL binaries are found.
var errNoPostgres = errors.New("PostgreSQL's binaries not found")

// postgres is a PostgreSQL server the bench runs for itself: a cluster
// made by initdb in a scratch directory on disk (default settings, trust
// authentication, the user postgres), its postmaster a child of the bench
// listening on 127.0.0.1 only. The postmaster gets SIGINT (a fast
// shutdown) from Stop, and from the kernel if the bench dies without
// calling it (a parent-death signal), so that it never outlives the
// bench. Stop is safe for concurrent use; the rest is not.
type postgres struct {
	Bin     string // the directory of initdb, postgres and pg_isready
	Version string // postgres --version
	Port    int
	Log     string // the server's log

	dir    string // scratch: data, socket and log
	cmd    *exec.Cmd
	exited chan struct{} // closed when the postmaster has exited
	once   sync.Once
	err    error
}

// findPostgres returns the bin directory of the newest PostgreSQL whose
// binaries match glob (postgresBins), or an error naming the package to
// install and the place looked in.
func findPostgres(glob string) (string, error) {
	dirs, _ := filepath.Glob(glob)
	var ok []string
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) && isExec(filepath.Join(d, "pg_isready")) {
			ok = append(ok, d)
		}
	}
	if len(ok) == 0 {
		return "", fmt.Errorf("%w: no initdb, postgres and pg_isready in %s; install the Debian package %s (apt-get install %s), which puts them there",
			errNoPostgres, glob, postgresPackage, postgresPackage)
	}
	major := func(d string) int { // /usr/lib/postgresql/15/bin → 15
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return n
	}
	slices.SortFunc(ok, func(a, b string) int { return major(a) - major(b) })
	return ok[len(ok)-1], nil
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// startPostgres makes a cluster with the binaries in bin in a new scratch
// directory under the system's temporary directory and starts its
// postmaster on a free port, waiting until it accepts connections. As
// root (which initdb and postgres refuse) both run as the user postgres,
// which the package creates, and the scratch directory is theirs. On
// error nothing is left running.
func startPostgres(ctx context.Context, bin string) (_ *postgres, err error) {
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("postgres: initdb refuses root, and there is no user postgres to run it as (the package %s creates it): %w", postgresPackage, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	parent := os.TempDir()
	if cred != nil && !traversable(parent) {
		// The user postgres must reach its directory: a private $TMPDIR
		// (CI's is mode 0700, root's) would refuse it ("permission denied").
		parent = "/tmp"
	}
	dir, err := os.MkdirTemp(parent, "adk-bench-postgres-")
	if err != nil {
		return nil, err
	}
	p := &postgres{Bin: bin, dir: dir, Log: filepath.Join(dir, "postgres.log"), exited: make(chan struct{})}
	defer func() {
		if err != nil {
			p.Stop()
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	if out, err := exec.CommandContext(ctx, filepath.Join(bin, "postgres"), "--version").Output(); err == nil {
		p.Version = strings.TrimSpace(string(out))
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
	initdb.Dir, initdb.SysProcAttr = dir, &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("postgres: initdb: %w\n%s", err, proc.LastLines(out, 20))
	}
	if p.Port, err = freePort(); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	// The postmaster runs as a child rather than through pg_ctl start,
	// which detaches it: a bench killed outright would leave it running.
	p.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(p.Port), "-k", dir, "-c", "listen_addresses=127.0.0.1")
	p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = dir, logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGINT, Setpgid: true}
	if err := fusekitest.Spawn(p.cmd); err != nil {
		return nil, fmt.Errorf("postgres: start: %w", err)
	}
	go func() {
		p.cmd.Wait()
		close(p.exited)
	}()
	for deadline := time.Now().Add(60 * time.Second); ; {
		ready := exec.CommandContext(ctx, filepath.Join(bin, "pg_isready"), "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres", "-t", "1")
		if ready.Run() == nil {
			return p, nil
		}
		select {
		case <-p.exited:
			b, _ := os.ReadFile(p.Log)
			return nil, fmt.Errorf("postgres: the server exited while starting (%v); its log:\n%s", p.cmd.ProcessState, proc.LastLines(b, 20))
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(p.Log)
			return nil, fmt.Errorf("postgres: not accepting connections on port %d after 60 s; its log:\n%s", p.Port, proc.LastLines(b, 20))
		}
	}
}

// DSN is the connection string of the server's database postgres, for
// gorm's postgres driver.
func (p *postgres) DSN() string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", p.Port)
}

// Stop shuts the server down (SIGINT: a fast shutdown; SIGKILL if it has
// not exited after 30 s) and removes the scratch directory. It returns
// the first error and does its work once.
func (p *postgres) Stop() error {
	p.once.Do(func() {
		if p.cmd != nil && proc.Stop(p.cmd.Process, p.exited, syscall.SIGINT, 30*time.Second) {
			p.err = errors.New("postgres: killed after 30 s without shutting down")
		}
		if err := os.RemoveAll(p.dir); p.err == nil {
			p.err = err
		}
	})
	return p.err
}

// freePort returns a TCP port on 127.0.0.1 free at the time of the call.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// traversable reports whether every directory from / down to dir lets
// other users through (the execute bit for others).
func traversable(dir string) bool {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}
