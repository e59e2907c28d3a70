package main

import (
	"fmt"
	"io"
	"time"

	"github.com/trails-kg/trails/internal/termsafe"
)

// progress shows how far long work has come, on one rewritten line of
// stderr, only when stderr is a terminal; otherwise it says nothing.
type progress struct {
	w     io.Writer
	on    bool
	label string
	last  time.Time
}

func (a *app) progress(label string) *progress {
	return &progress{w: a.stderr, on: a.tty, label: label}
}

// update shows done of total, and what is being done; it redraws at most
// ten times a second, and always for the last step.
func (p *progress) update(done, total int, what string) {
	if !p.on || (done < total && time.Since(p.last) < 100*time.Millisecond) {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "\r\033[K%s %d/%d %s", p.label, done, total, termsafe.String(what))
}

// finish ends the progress line.
func (p *progress) finish() {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
