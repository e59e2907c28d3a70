package fusekitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/trails-kg/trails/internal/proc"
	"github.com/trails-kg/trails/internal/tdbjournal"
	"github.com/trails-kg/trails/kg"
)

// mainClass is Fuseki's plain server (no UI, no admin API).
const mainClass = "org.apache.jena.fuseki.main.cmds.FusekiMainCmd"

// adminClass is Fuseki's server with the UI and the admin API, the one
// scripts/fuseki starts (see Options.Admin).
const adminClass = "org.apache.jena.fuseki.main.cmds.FusekiServerCmd"

// startTimeout bounds how long a server may take to answer its ping.
const startTimeout = 90 * time.Second

// Options configures a server started by StartServer.
type Options struct {
	// DataDir holds the TDB2 database; "" means a new directory inside the
	// server's scratch directory, removed by Close. Starting again on the
	// same DataDir reopens the same data. The database is always TDB2 on
	// disk, as in production: TDB2's in-memory mode ("--mem--") shares
	// block objects between a reader and the writer, and under concurrent
	// reads and writes failed with "Attempt to write a read-only block"
	// and lost triples (seen in this project's reliability tests).
	DataDir string
	// Users, when set, turns on HTTP basic authentication with these
	// user names and passwords.
	Users map[string]string
	// Port to listen on; 0 picks a free one.
	Port int
	// Config is the Fuseki configuration file, absolute or relative to the
	// repository root; "" means fuseki/trails.ttl. Its TDB2 location must be
	// "databases/trails", as there, so that it can run in memory.
	Config string
	// Datasets is how many datasets the server holds besides /trails:
	// /t1, /t2, … each a copy of the configuration's /trails service with
	// a TDB2 database of its own (see Server.Datasets). Only with the
	// default configuration.
	Datasets int
	// Admin runs the server scripts/fuseki starts, with the UI and the
	// admin API (/$/compact, /$/backup, /$/tasks, ...), which it serves to
	// requests from this machine, instead of the plain server; its own
	// area (FUSEKI_BASE: shiro.ini, backups) is Server.Base.
	Admin bool
}

// Server is a Fuseki process started from the cached jar with the project's
// configuration (fuseki/trails.ttl), or an Oxigraph server (see TestStore),
// listening on 127.0.0.1. Its methods are
// not safe for concurrent use.
type Server struct {
	Endpoint string   // dataset URL, http://127.0.0.1:PORT/trails
	Datasets []string // every dataset URL: Endpoint, then /t1, /t2, … (Options.Datasets)
	Port     int
	Log      string        // path of the server's log file
	Started  time.Duration // how long the last start took, until the ping answered
	Base     string        // with Options.Admin, the server's own area (FUSEKI_BASE); backups go to Base/backups

	opts     Options
	oxigraph string // an Oxigraph server's command (from scripts/pytools), not Fuseki, when set
	javaArgs []string
	dir      string // scratch directory: rendered config, password file, log
	cmd      *exec.Cmd
	exited   chan struct{}
}

// StartServer starts a Fuseki from the cached jar (fetching it with
// scripts/fuseki if needed) and waits until it answers. The process is
// killed if the test binary dies.
//
// When TRAILS_TEST_STORE is oxigraph (see TestStore) it starts an Oxigraph
// server instead (see startOxigraph).
func StartServer(opts Options) (*Server, error) {
	if TestStore() == kg.Oxigraph {
		return startOxigraph(opts)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return nil, errors.New("java is not installed")
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	jar, err := jarPath(root)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(ScratchDir(), "trails-fuseki-") // the prefix .ci/run cleans up after
	if err != nil {
		return nil, err
	}
	config := opts.Config
	if config == "" {
		config = filepath.Join("fuseki", "trails.ttl")
	}
	if !filepath.IsAbs(config) {
		config = filepath.Join(root, config)
	}
	conf, err := os.ReadFile(config)
	if err != nil {
		return nil, err
	}
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(dir, "data")
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, err
	}
	if opts.Datasets > 0 {
		if opts.Config != "" {
			return nil, errors.New("fusekitest: Options.Datasets needs the default configuration")
		}
		if conf, err = withDatasets(conf, opts.Datasets); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "config.ttl"), conf, 0o644); err != nil {
		return nil, err
	}
	class := mainClass
	if opts.Admin {
		class = adminClass
	}
	args := append(javaOpts(), "-cp", jar, class, "--config="+filepath.Join(dir, "config.ttl"), "--localhost", "--ping")
	if len(opts.Users) > 0 {
		var pw strings.Builder
		for u, p := range opts.Users {
			fmt.Fprintf(&pw, "%s: %s\n", u, p)
		}
		if err := os.WriteFile(filepath.Join(dir, "passwd"), []byte(pw.String()), 0o600); err != nil {
			return nil, err
		}
		args = append(args, "--passwd="+filepath.Join(dir, "passwd"), "--auth=basic")
	}
	s := &Server{opts: opts, dir: dir, Log: filepath.Join(dir, "fuseki.log")}
	s.javaArgs = args
	if opts.Admin {
		s.Base = filepath.Join(dir, "base")
		if err := os.MkdirAll(s.Base, 0o755); err != nil {
			return nil, err
		}
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// StartOxigraph starts an Oxigraph server, as StartServer does when
// TRAILS_TEST_STORE is oxigraph, whatever TRAILS_TEST_STORE says: for a
// program that measures both stores side by side (adk-bench). The command
// comes from the Python environment of scripts/pytools (PyPI's oxigraph
// 0.5.13, made on first use); the server listens on 127.0.0.1, serves the
// union of the named graphs as its default graph and is killed if the
// program dies. Options Oxigraph has no use for (Users, Config, Admin,
// Datasets) are refused with an error.
func StartOxigraph(opts Options) (*Server, error) { return startOxigraph(opts) }

// start launches java on port without waiting.
func (s *Server) start(port int) error {
	logf, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command("java", append(s.javaArgs, "--port="+strconv.Itoa(port))...)
	if s.oxigraph != "" {
		cmd = exec.Command(s.oxigraph, "serve", "--location", s.opts.DataDir,
			"--bind", "127.0.0.1:"+strconv.Itoa(port), "--union-default-graph")
	}
	cmd.Dir = s.dir
	if s.opts.DataDir != "" {
		cmd.Dir = s.opts.DataDir
	}
	if s.oxigraph == "" {
		if err := mendJournals(cmd.Dir, logf); err != nil {
			return err
		}
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if s.Base != "" {
		cmd.Env = append(os.Environ(), "FUSEKI_BASE="+s.Base)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := Spawn(cmd); err != nil {
		return err
	}
	s.cmd, s.Port = cmd, port
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	s.Endpoint = base + "/trails"
	if s.oxigraph != "" { // one dataset per server, at its root
		s.Endpoint = base
	}
	s.Datasets = []string{s.Endpoint}
	for i := 1; i <= s.opts.Datasets; i++ {
		s.Datasets = append(s.Datasets, base+"/t"+strconv.Itoa(i))
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(cmd, s.exited)
	return nil
}

// mendJournals cuts off the torn last entry of every TDB2 journal under
// dir (tdbjournal.Mend), saying so in log: what a killed Fuseki leaves
// when the kill came while it appended to its journal, on which Jena's
// recovery stops and Fuseki does not start. The operator's way to do the
// same is trails-admin journal --mend.
func mendJournals(dir string, log io.Writer) error {
	paths, err := tdbjournal.Find(dir)
	if err != nil {
		return err
	}
	for _, p := range paths {
		r, err := tdbjournal.Mend(p)
		if err != nil {
			return err
		}
		if r.Mended {
			fmt.Fprintf(log, "fusekitest: %v\n", r)
		}
	}
	return nil
}

// Start starts the server (again, after Stop or Kill) on the same port and
// data directory, and waits until it answers.
func (s *Server) Start() error {
	var err error
	restart := s.Port != 0
	for try := 0; try < 3; try++ {
		port := s.Port // a restart keeps the port
		if port == 0 {
			port = s.opts.Port
		}
		if port == 0 {
			if port, err = freePort(); err != nil {
				return err
			}
		}
		t0 := time.Now()
		if err = s.start(port); err != nil {
			return err
		}
		if err = s.waitReady(); err == nil {
			s.Started = time.Since(t0)
			return nil
		}
		s.Kill()
		switch {
		case restart && !strings.Contains(proc.Tail(s.Log, 30), "ddress already in use"):
			// A restart on the database of a killed server (a crash test)
			// whose java exited at once: seen once on a loaded machine,
			// without a word in the log (a torn journal, which Jena
			// reports, is mended before each start: mendJournals). Try
			// again on the same port.
			time.Sleep(time.Second)
		case s.opts.Port != 0 || !strings.Contains(proc.Tail(s.Log, 30), "ddress already in use"):
			try = 3
		default:
			s.Port = 0 // a free port was taken between the probe and java: pick another
		}
	}
	return fmt.Errorf("%s did not start: %v\n--- %s (tail) ---\n%s", s.store(), err, s.Log, proc.Tail(s.Log, 30))
}

func (s *Server) waitReady() error {
	ping := "http://127.0.0.1:" + strconv.Itoa(s.Port) + "/$/ping"
	if s.oxigraph != "" {
		ping = "http://127.0.0.1:" + strconv.Itoa(s.Port) + "/query?query=ASK%7B%7D"
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return errors.New("the java process exited")
		default:
		}
		resp, err := hc.Get(ping)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no answer to %s within %v", ping, startTimeout)
}

// Stop stops the server gracefully (SIGTERM), killing it after 15 s.
func (s *Server) Stop() error {
	return s.signal(syscall.SIGTERM, 15*time.Second)
}

// DataDir returns the directory of the server's database: Options.DataDir,
// or the one StartServer made in its scratch directory.
func (s *Server) DataDir() string { return s.opts.DataDir }

// CopyData copies the server's database directory (DataDir) into dst,
// made if missing, file by file: a file copy of a replica's TDB2
// database, from which a new replica starts (docs/scale-out.md). The
// server must be stopped (Stop or Kill), so that no transaction writes
// while the files are read. TDB2's lock files (tdb.lock) are not copied:
// they belong to the process that had the database open.
func (s *Server) CopyData(dst string) error {
	if s.cmd != nil && s.cmd.Process != nil {
		select {
		case <-s.exited:
		default:
			return fmt.Errorf("fusekitest: copy %s: the server still runs (pid %d): stop it first", s.opts.DataDir, s.cmd.Process.Pid)
		}
	}
	src := s.opts.DataDir
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Name() == "tdb.lock" || !d.Type().IsRegular():
			return nil
		}
		return copyFile(path, to)
	})
}

// copyFile copies the regular file from to to (replaced).
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", from, err)
	}
	return out.Close()
}

// Close stops the server for good (as Stop) and removes its scratch
// directory: the rendered configuration, the password file and the log
// (unless $TRAILS_TEST_KEEP_LOGS is set).
// A data directory given in Options is the caller's, and stays.
func (s *Server) Close() error {
	err := s.Stop()
	if os.Getenv(EnvKeepLogs) != "" {
		return err
	}
	if rmErr := os.RemoveAll(s.dir); err == nil {
		err = rmErr
	}
	return err
}

// EnvKeepLogs, when set, makes Close keep the scratch directory, with the
// server's log.
const EnvKeepLogs = "TRAILS_TEST_KEEP_LOGS"

// Kill kills the server at once (SIGKILL), as a crash would.
func (s *Server) Kill() error {
	return s.signal(syscall.SIGKILL, 15*time.Second)
}

func (s *Server) signal(sig syscall.Signal, grace time.Duration) error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	if proc.Stop(s.cmd.Process, s.exited, sig, grace) {
		return fmt.Errorf("%s did not stop on %v within %v; killed", s.store(), sig, grace)
	}
	return nil
}

// withDatasets returns the configuration conf (fuseki/trails.ttl) with n
// more datasets, /t1 … /tn: copies of its /trails service and dataset under
// other names and TDB2 locations, so that they answer the same operations.
func withDatasets(conf []byte, n int) ([]byte, error) {
	const server = "[] rdf:type fuseki:Server ."
	text := string(conf)
	copyOf := strings.Replace(text, server, "", 1)
	for _, must := range []string{server, "<#service>", "<#dataset>", `fuseki:name "trails"`, `"databases/trails"`} {
		if strings.Count(text, must) == 0 {
			return nil, fmt.Errorf("fusekitest: the configuration has no %s to copy datasets from", must)
		}
	}
	var b strings.Builder
	b.WriteString(text)
	for i := 1; i <= n; i++ {
		name := "t" + strconv.Itoa(i)
		r := strings.NewReplacer(
			"<#service>", "<#service-"+name+">",
			"<#dataset>", "<#dataset-"+name+">",
			`fuseki:name "trails"`, `fuseki:name "`+name+`"`,
			`"databases/trails"`, `"databases/`+name+`"`,
		)
		fmt.Fprintf(&b, "\n## Test dataset /%s, a copy of /trails.\n", name)
		b.WriteString(r.Replace(copyOf))
	}
	return []byte(b.String()), nil
}

// EnvScratch names the environment variable giving the directory under
// which the test servers keep their scratch directories and databases
// (see ScratchDir).
const EnvScratch = "TRAILS_TEST_SCRATCH"

// ScratchDir returns the directory under which the test servers keep
// their scratch directories, and so their databases: $TRAILS_TEST_SCRATCH
// when set; else /dev/shm, a file system in memory, when the machine has
// one that this process may write to; else "" (os.MkdirTemp's default,
// the temporary directory). The database is TDB2 on files wherever it is,
// the storage production runs (not TDB2's in-memory mode, which lost
// triples under concurrent reads and writes); in memory its disk syncs cost
// nothing (the session package's tests: 142 s on disk, 112 s there), and
// a server killed and restarted by a test finds its files as a crash left
// them, as on disk.
func ScratchDir() string {
	if d, ok := os.LookupEnv(EnvScratch); ok {
		return d
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && syscall.Access("/dev/shm", 2 /* W_OK */) == nil {
		return "/dev/shm"
	}
	return ""
}

// EnvJavaOpts names the environment variable whose JVM options (split at
// white space) replace defaultJavaOpts for the Fuseki servers the tests
// start.
const EnvJavaOpts = "TRAILS_TEST_JAVA_OPTS"

// defaultJavaOpts are the JVM options of a test Fuseki: a test binary's
// server lives a minute or two, too short for the optimizing compiler
// (C2) to pay for itself, and with it the JIT took about half of the CPU
// of a package's run (kg: 48 CPU-seconds with it, 27 without; the whole
// test command runs two packages at once on a machine of two cores).
// Production servers (scripts/fuseki) keep the JVM's defaults.
var defaultJavaOpts = []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}

// shortLived is set by Main when the binary runs tests and no benchmarks:
// only then do its servers get defaultJavaOpts. A benchmark (go test
// -bench, trails-bench, adk-bench) measures the JVM as production runs it.
var shortLived bool

// javaOpts returns the JVM options of a test Fuseki: $TRAILS_TEST_JAVA_OPTS
// when set, else defaultJavaOpts in a test binary that runs no benchmark
// (see Main), else none.
func javaOpts() []string {
	if v, ok := os.LookupEnv(EnvJavaOpts); ok {
		return strings.Fields(v)
	}
	if !shortLived {
		return nil
	}
	return slices.Clone(defaultJavaOpts)
}

// jarPath returns the class path of the servers: the cached jar (scripts/fuseki
// fetches it if needed) and Trails' module for Fuseki (fuseki/module,
// built by scripts/fuseki module), whose conditional-patch endpoint the
// replicas' appliers use.
func jarPath(root string) (string, error) {
	jar, err := fusekiScript(root, "jar")
	if err != nil {
		return "", err
	}
	mod, err := fusekiScript(root, "module")
	if err != nil {
		return "", err
	}
	return jar + string(os.PathListSeparator) + mod, nil
}

// fusekiScript runs scripts/fuseki cmd (jar or module) and returns the
// path it prints last, checked to exist.
func fusekiScript(root, sub string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "fuseki"), sub)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scripts/fuseki %s: %v: %s", sub, err, strings.TrimSpace(errb.String()))
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	path := strings.TrimSpace(lines[len(lines)-1])
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("scripts/fuseki %s printed %q: %v", sub, path, err)
	}
	return path, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// spawnc carries start requests to a goroutine locked to one OS thread that
// never exits. Pdeathsig fires when the thread that started the child ends,
// not the process, so the child must be started from a thread that lives as
// long as the test binary.
var spawnc = make(chan spawnReq)

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

func init() {
	go func() {
		runtime.LockOSThread()
		for r := range spawnc {
			r.err <- r.cmd.Start()
		}
	}()
}

// Spawn starts cmd from that thread, so that a child whose
// SysProcAttr.Pdeathsig is set dies with the test binary, not with
// whichever thread happened to start it. Other test helpers that start
// servers (internal/kafkatest) use it too.
func Spawn(cmd *exec.Cmd) error {
	r := spawnReq{cmd: cmd, err: make(chan error, 1)}
	spawnc <- r
	return <-r.err
}
