package witness

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// metrics are a server's counters and gauges, served in the Prometheus
// text format. Safe for concurrent use.
type metrics struct {
	mu     sync.Mutex
	help   map[string][2]string // name: type, help
	values map[string]float64   // name{labels}: value
}

// define declares metric name of kind typ ("counter" or "gauge").
func (m *metrics) define(name, typ, help string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.help == nil {
		m.help, m.values = map[string][2]string{}, map[string]float64{}
	}
	m.help[name] = [2]string{typ, help}
	m.values[name] += 0
}

// add adds v to metric name with labels (name, value pairs).
func (m *metrics) add(name string, v float64, labels ...string) {
	m.mu.Lock()
	m.values[series(name, labels)] += v
	m.mu.Unlock()
}

// set sets metric name with labels to v.
func (m *metrics) set(name string, v float64, labels ...string) {
	m.mu.Lock()
	m.values[series(name, labels)] = v
	m.mu.Unlock()
}

// series returns a series' name: name{l1="v1",...}.
func series(name string, labels []string) string {
	if len(labels) == 0 {
		return name
	}
	var b strings.Builder
	b.WriteString(name + "{")
	for i := 0; i+1 < len(labels); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(labels[i] + "=" + strconv.Quote(labels[i+1]))
	}
	b.WriteByte('}')
	return b.String()
}

// ServeHTTP writes the metrics in the Prometheus text format.
func (m *metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.help))
	for n := range m.help {
		names = append(names, n)
	}
	sort.Strings(names)
	keys := make([]string, 0, len(m.values))
	for k := range m.values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, n := range names {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", n, m.help[n][1], n, m.help[n][0])
		for _, k := range keys {
			if k == n || strings.HasPrefix(k, n+"{") {
				io.WriteString(w, k+" "+strconv.FormatFloat(m.values[k], 'g', -1, 64)+"\n")
			}
		}
	}
}
