package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/trails-kg/trails/admin"
	"github.com/trails-kg/trails/cluster"
	"github.com/trails-kg/trails/internal/render"
	"github.com/trails-kg/trails/internal/storeflags"
	"github.com/trails-kg/trails/internal/termsafe"
	"github.com/trails-kg/trails/kg"
	"github.com/trails-kg/trails/prov"
	"github.com/trails-kg/trails/session"
	"golang.org/x/mod/sumdb/note"
)

// command is one subcommand: its own flag set, its help and its run.
type command interface {
	name() string
	synopsis() string // one line for the command list
	usage() string    // the argument synopsis after "trails-admin NAME"
	example() string  // one example line (or several, one per line)
	flags(fs *flag.FlagSet)
	run(ctx context.Context, a *app, args []string) error
}

// commands lists every subcommand, in the order help shows them.
func commands() []command {
	return []command{
		&initCmd{}, &demoCmd{}, &sessionsCmd{}, &showCmd{replay: false}, &showCmd{replay: true},
		&diffCmd{},
		&anchorCmd{}, &forkCmd{}, &mergeCmd{}, &tagCmd{}, &tagCmd{remove: true}, &stateCmd{},
		&treeCmd{}, &orphansCmd{}, &checkCmd{}, &verifyCmd{}, &keygenCmd{}, &checkpointCmd{}, &witnessCmd{}, &detachCmd{}, &deleteCmd{}, &expireCmd{}, &sweepCmd{}, &rechainCmd{},
		&rewindCmd{}, &rewindsCmd{},
		&exportCmd{}, &importCmd{}, &backupCmd{}, &restoreCmd{}, &compactCmd{}, &journalCmd{}, &moveCmd{},
		&auditCmd{},
	}
}

// app is what a command runs with: its writers and its connection.
type app struct {
	stdout, stderr io.Writer
	tty            bool // stderr is a terminal: show progress
	conn           connFlags
	timeoutSet     bool // --timeout was given
	client         storeClient
	// signer and witness sign what the store and the dataset write, when
	// a command was given --sign-key and --witness (sign).
	signer  note.Signer
	witness session.Witness
}

// storeClient is what the commands need of the store: a *kg.Client, or
// with --store kafka a *cluster.Client (writes through the log, reads from
// a replica at or past them).
type storeClient interface {
	admin.Querier
	Store() kg.Store
	Endpoint() string
}

// storeKafka is --store kafka: the scale-out cluster that scripts/cluster
// starts, whose settings come from the environment it prints
// (cluster.ConfigFromEnv).
const storeKafka = "kafka"

// longRequests lifts the request time limit to longWork for a command
// that reads or writes the whole dataset, unless --timeout was given.
func (a *app) longRequests() {
	if !a.timeoutSet {
		a.conn.Timeout = longWork
	}
}

// defaultEndpoint is the dataset of a local Fuseki started by scripts/fuseki
// on its default port.
const defaultEndpoint = storeflags.DefaultEndpoint

// connFlags are the connection flags every command takes, and the store's
// limits (--max-children): storeflags.Flags, whose Store may also be
// storeKafka.
type connFlags struct{ storeflags.Flags }

// defaultConn returns the connection settings from the environment.
func defaultConn() connFlags { return connFlags{storeflags.FromEnv()} }

// register adds the connection flags to fs, with c's values as defaults.
func (c *connFlags) register(fs *flag.FlagSet) {
	c.Register(fs, "the store's profile: fuseki, oxigraph, generic, or kafka for the cluster of $TRAILS_KAFKA_BROKERS and $TRAILS_REPLICAS ($TRAILS_STORE)",
		"password for HTTP basic auth ($TRAILS_PASSWORD)")
}

// check returns a usage error for values that parse but cannot be used
// by command cmd: a negative --max-children, a --timeout that is not
// positive (kg reads 0 as its default and a negative value as no bound,
// neither of which the flag's help promises).
func (c *connFlags) check(cmd string) error {
	switch {
	case c.MaxChildren < 0:
		return usageErrorf("%s: --max-children %d: want a whole number >= 0 (0: no limit); try: trails-admin %s -h", cmd, c.MaxChildren, cmd)
	case c.Timeout <= 0:
		return usageErrorf("%s: --timeout %v: want a duration > 0, such as 30s or 5m; try: trails-admin %s -h", cmd, c.Timeout, cmd)
	}
	return nil
}

// kg returns the client of the store, checking that it answers.
func (a *app) kg(ctx context.Context) (storeClient, error) {
	if a.client != nil {
		return a.client, nil
	}
	if a.conn.Store == storeKafka {
		return a.cluster(ctx)
	}
	c, err := kg.New(a.conn.Config())
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	if err := c.Ping(ctx); err != nil {
		switch {
		case errors.Is(err, kg.ErrUnauthorized):
			return nil, fmt.Errorf("the store at %s refused the credentials (give --user and --password, or set $TRAILS_USER and $TRAILS_PASSWORD): %w", c.Endpoint(), err)
		case errors.Is(err, kg.ErrNotFound):
			return nil, fmt.Errorf("no dataset at %s (check --endpoint; the dataset URL ends in /trails): %w", c.Endpoint(), err)
		case errors.Is(err, kg.ErrUnavailable):
			return nil, fmt.Errorf("cannot reach the store at %s (start one with scripts/fuseki start, or give --endpoint): %w", c.Endpoint(), err)
		}
		return nil, fmt.Errorf("%s: %w", c.Endpoint(), err)
	}
	a.client = c
	return c, nil
}

// cluster returns the client of the scale-out cluster that the
// environment names (--store kafka), checking that a replica answers.
func (a *app) cluster(ctx context.Context) (storeClient, error) {
	if os.Getenv(cluster.EnvTopics) != "" {
		return a.sharded(ctx)
	}
	cfg, err := cluster.ConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, usageErrorf("--store kafka: %v", err)
	}
	cfg.Timeout = a.conn.Timeout
	cfg.Store = kg.Config{Username: a.conn.User, Password: a.conn.Password, Timeout: a.conn.Timeout}
	c, err := cluster.Open(cfg)
	if err != nil {
		return nil, usageErrorf("--store kafka: %v", err)
	}
	if _, err := c.Ask(ctx, "ASK {}"); err != nil {
		c.Close()
		switch {
		case errors.Is(err, kg.ErrUnauthorized):
			return nil, fmt.Errorf("the replica at %s refused the credentials (give --user and --password, or set $TRAILS_USER and $TRAILS_PASSWORD): %w", c.Endpoint(), err)
		case errors.Is(err, kg.ErrUnavailable):
			return nil, fmt.Errorf("no replica of the cluster answers ($%s, $%s; start it with scripts/cluster start): %w", cluster.EnvReplicas, cluster.EnvAppliers, err)
		}
		return nil, fmt.Errorf("%s: %w", c.Endpoint(), err)
	}
	a.client = c
	return c, nil
}

// sharded returns the client of a cluster of several replica groups
// ($TRAILS_KAFKA_TOPICS, as scripts/cluster start --groups N prints it):
// each session tree's writes go to its group's log, whole-dataset reads
// to the audit replica (cluster.Sharded). A session.Store on it commits
// no group of writes (NewStore turns group commit off).
func (a *app) sharded(ctx context.Context) (storeClient, error) {
	cfg, err := cluster.ShardedConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, usageErrorf("--store kafka: %v", err)
	}
	store := kg.Config{Username: a.conn.User, Password: a.conn.Password, Timeout: a.conn.Timeout}
	for i := range cfg.Groups {
		cfg.Groups[i].Timeout, cfg.Groups[i].Store = a.conn.Timeout, store
	}
	if cfg.Audit != nil {
		cfg.Audit.Store = store
	}
	c, err := cluster.OpenSharded(cfg)
	if err != nil {
		return nil, usageErrorf("--store kafka: %v", err)
	}
	if _, err := c.Ask(ctx, "ASK {}"); err != nil {
		c.Close()
		if errors.Is(err, kg.ErrUnavailable) {
			return nil, fmt.Errorf("no replica of the cluster's audit replica answers ($%s; start it with scripts/cluster start --groups N): %w", cluster.EnvTopics, err)
		}
		return nil, fmt.Errorf("%s: %w", c.Endpoint(), err)
	}
	a.client = c
	return c, nil
}

// store returns the session store.
func (a *app) store(ctx context.Context) (*session.Store, error) {
	c, err := a.kg(ctx)
	if err != nil {
		return nil, err
	}
	opts := []session.StoreOption{session.WithMaxChildren(a.conn.MaxChildren)}
	if a.signer != nil {
		opts = append(opts, session.WithSigning(a.signer, a.witness))
	}
	return session.NewStore(c, opts...), nil
}

// dataset returns the operators' view of the whole dataset: what check,
// export, import, init, expire, rechain and tree without an id run on.
func (a *app) dataset(ctx context.Context) (*admin.Dataset, error) {
	c, err := a.kg(ctx)
	if err != nil {
		return nil, err
	}
	if a.signer != nil {
		return admin.New(c, admin.WithSigning(a.signer, a.witness)), nil
	}
	return admin.New(c), nil
}

// server returns the admin API of the dataset's server (compact,
// backup), after checking that the store answers at the endpoint.
func (a *app) server(ctx context.Context) (*admin.Server, error) {
	if a.conn.Store == storeKafka {
		return nil, fmt.Errorf("%w: the cluster's replicas are Fuseki datasets of their own: give each replica's --endpoint with --store fuseki", admin.ErrUnsupported)
	}
	s, err := admin.NewServer(admin.ServerConfig{
		Endpoint: a.conn.Endpoint, Store: kg.Store(a.conn.Store),
		Username: a.conn.User, Password: a.conn.Password, Timeout: a.conn.Timeout,
	})
	if err != nil {
		return nil, err
	}
	if _, err := a.kg(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// reader returns the PROV reader.
func (a *app) reader(ctx context.Context) (*prov.Reader, error) {
	c, err := a.kg(ctx)
	if err != nil {
		return nil, err
	}
	return prov.NewReader(c), nil
}

// table returns a tabwriter on stdout for aligned text output.
func (a *app) table() *tabwriter.Writer {
	return render.Table(a.stdout)
}

// json writes v to stdout as indented JSON.
func (a *app) json(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// maxMessage is the most characters of an error message run prints: a
// message echoing a long value that no one cut stays readable.
const maxMessage = 2000

// run runs the command line and reports its error on stderr, on one line,
// escaped and cut (termsafe.Cut): the message may quote stored or given
// values.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := dispatch(ctx, args, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, errFindings):
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "trails-admin: interrupted: %s\n", termsafe.Cut(err.Error(), maxMessage))
	default:
		fmt.Fprintf(stderr, "trails-admin: %s\n", termsafe.Cut(err.Error(), maxMessage))
	}
	return err
}

// dispatch parses the command line and runs the command it names.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a := &app{stdout: stdout, stderr: stderr, tty: isTerminal(stderr), conn: defaultConn()}
	// Connection flags may also come before the command.
	global := flag.NewFlagSet("trails-admin", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	a.conn.register(global)
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return writeHelp(stdout)
		}
		return usageErrorf("%s; try: trails-admin help", flagError(err))
	}
	args = global.Args()
	if len(args) == 0 {
		writeHelp(stderr)
		return usageErrorf("no command given; try: trails-admin help")
	}
	name, rest := args[0], args[1:]
	if name == "help" || name == "-h" || name == "--help" {
		if len(rest) > 0 {
			if c := lookup(rest[0]); c != nil {
				return writeCommandHelp(stdout, c, nil)
			}
			return usageErrorf("unknown command %s%s; try: trails-admin help", termsafe.Quote(rest[0]), suggest(rest[0]))
		}
		return writeHelp(stdout)
	}
	c := lookup(name)
	if c == nil {
		return usageErrorf("unknown command %s%s; try: trails-admin help", termsafe.Quote(name), suggest(name))
	}
	fs := flag.NewFlagSet("trails-admin "+c.name(), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	a.conn.register(fs) // flags after the command override those before it
	c.flags(fs)
	if err := fs.Parse(interleave(fs, rest)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return writeCommandHelp(stdout, c, fs)
		}
		return usageErrorf("%s: %s; try: trails-admin %s -h", c.name(), flagError(err), c.name())
	}
	if err := a.conn.check(c.name()); err != nil {
		return err
	}
	for _, set := range []*flag.FlagSet{global, fs} {
		set.Visit(func(f *flag.Flag) { a.timeoutSet = a.timeoutSet || f.Name == "timeout" })
	}
	return a.witnessHint(c.run(ctx, a, fs.Args()))
}

// interleave moves flags after positional arguments to the front, so that
// "trails-admin show ID --json" works as well as "show --json ID".
func interleave(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			pos = append(pos, arg)
			continue
		}
		flags = append(flags, arg)
		name := strings.TrimLeft(arg, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil {
			if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
				continue
			}
			if i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		}
	}
	return append(flags, pos...)
}

// flagError is the flag package's message with flags written as the help
// writes them, "--name" (one-letter flags keep their one dash, "-o").
func flagError(err error) string {
	return flagNameRE.ReplaceAllString(err.Error(), "$1--$2")
}

var flagNameRE = regexp.MustCompile(`(: |flag )-([a-zA-Z][a-zA-Z0-9-])`)

func lookup(name string) command {
	for _, c := range commands() {
		if c.name() == name {
			return c
		}
	}
	return nil
}

// suggest names the command closest to a mistyped one.
func suggest(name string) string {
	best, bestD := "", 3
	for _, c := range commands() {
		if d := distance(name, c.name()); d < bestD {
			best, bestD = c.name(), d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
