package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

const helpHead = `trails-admin: see and repair the Trails sessions stored in Fuseki or another SPARQL 1.1 store.

Usage:
  trails-admin [connection flags] COMMAND [flags] [arguments]
  trails-admin help [COMMAND]      trails-admin COMMAND -h

Commands:
`

const helpTail = `
Connection flags (before or after the command):
  --endpoint URL     dataset URL (default $TRAILS_ENDPOINT, then http://127.0.0.1:3030/trails);
                     for Oxigraph the server's URL, e.g. http://127.0.0.1:7878
  --store S          fuseki (default), oxigraph, generic or kafka ($TRAILS_STORE);
                     kafka is the scale-out cluster (docs/scale-out.md): writes
                     go through its log, reads to a replica past them, set by
                     $TRAILS_KAFKA_BROKERS, $TRAILS_KAFKA_TOPIC, $TRAILS_REPLICAS
                     and $TRAILS_APPLIERS as scripts/cluster start prints them
  --query-url URL    SPARQL query URL ($TRAILS_QUERY_URL); with --update-url
  --update-url URL   ($TRAILS_UPDATE_URL) and --graph-store-url URL
                     ($TRAILS_GRAPH_STORE_URL) replaces the store's own; the
                     generic store needs all three
  --user U           HTTP basic auth user ($TRAILS_USER)
  --password P       HTTP basic auth password ($TRAILS_PASSWORD)
  --timeout D        time limit of each request to the store, > 0 (default 30s)
  --max-children N   the most forks a session may have: fork refuses more
                     (default 8; 0: no limit)

Output: data goes to stdout, aligned text or JSON with --json; diagnostics
go to stderr. Long work shows progress on stderr when it is a terminal.
Text output shows control and bidi characters of stored values as escapes
(\x1b, \u202e); --json gives the exact text.

Exit codes:
  0    ok
  1    failure, or findings (orphans, integrity violations)
  2    usage error
  3    cannot reach the store, no dataset at the endpoint (HTTP 404), or the
       store refused the credentials
  130  interrupted (Ctrl-C stops between atomic steps and says what was done)
`

// writeHelp writes the overview of every command.
func writeHelp(w io.Writer) error {
	var b strings.Builder
	b.WriteString(helpHead)
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name(), c.synopsis())
	}
	b.WriteString(helpTail)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCommandHelp writes one command's help: usage, flags and example.
func writeCommandHelp(w io.Writer, c command, fs *flag.FlagSet) error {
	if fs == nil {
		fs = flag.NewFlagSet(c.name(), flag.ContinueOnError)
		conn := defaultConn()
		conn.register(fs)
		c.flags(fs)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: trails-admin %s %s\n\n%s\n\nFlags:\n", c.name(), c.usage(), c.synopsis())
	fs.VisitAll(func(f *flag.Flag) {
		if isConnFlag(f.Name) {
			return
		}
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  %s", dashed(f.Name))
		if name != "" {
			fmt.Fprintf(&b, " %s", name)
		}
		fmt.Fprintf(&b, "\n        %s", usage)
		if f.DefValue != "" && f.DefValue != "false" {
			fmt.Fprintf(&b, " (default %s)", f.DefValue)
		}
		b.WriteByte('\n')
	})
	b.WriteString("  and the connection flags: --endpoint, --store, --user, --password, --timeout, --max-children (see trails-admin help)\n")
	fmt.Fprintf(&b, "\nExample:\n")
	for _, line := range strings.Split(c.example(), "\n") {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// dashed is a flag's name as the help writes it: "--name", or "-o" for a
// one-letter name (the flag package takes either, and -o reads as the
// short option it is).
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func isConnFlag(name string) bool {
	switch name {
	case "endpoint", "store", "query-url", "update-url", "graph-store-url", "user", "password", "timeout", "max-children":
		return true
	}
	return false
}
