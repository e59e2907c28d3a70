package lincheck

import (
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fault is what the proxy does to one connection, which carries one
// request (the histories' clients with faults keep no connection alive).
type fault int

const (
	faultPass  fault = iota // forward both ways
	faultDrop               // close the connection at once: the request never reaches the store
	faultCut                // forward the request, close the client's side once the store begins to answer: done, never heard
	faultDelay              // forward the request, hold the answer 50 ms to 1.5 s (past the client's timeout of 1 s at times)
	nFaults
)

var faultNames = [nFaults]string{"passed", "dropped", "cut", "delayed"}

// proxy is a TCP proxy to Fuseki that faults a fraction of its
// connections, chosen by a seeded generator. Safe for concurrent use.
type proxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	rng    *rand.Rand
	rate   float64 // fraction of connections faulted
	counts [nFaults]atomic.Int64
	wg     sync.WaitGroup
}

// newProxy starts a proxy to upstream (host:port) on a free port of
// 127.0.0.1, passing everything until setFaults; it stops when tb ends.
func newProxy(tb testing.TB, upstream string) *proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &proxy{ln: ln, upstream: upstream, rng: rand.New(rand.NewPCG(1, 2))}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

// addr is the proxy's host:port.
func (p *proxy) addr() string { return p.ln.Addr().String() }

// setFaults makes the proxy fault a fraction rate of the connections from
// now on, drawing from a generator seeded with seed.
func (p *proxy) setFaults(rate float64, seed uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate, p.rng = rate, rand.New(rand.NewPCG(seed, 0x11c))
}

// faulted returns how many connections got each fault so far.
func (p *proxy) faulted() [nFaults]int64 {
	var n [nFaults]int64
	for i := range n {
		n[i] = p.counts[i].Load()
	}
	return n
}

func (p *proxy) pick() (fault, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rng.Float64() >= p.rate {
		return faultPass, 0
	}
	f := fault(1 + p.rng.IntN(int(nFaults)-1))
	return f, time.Duration(50+p.rng.IntN(1450)) * time.Millisecond
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		f, d := p.pick()
		p.counts[f].Add(1)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(c, f, d)
		}()
	}
}

// serve forwards one connection with fault f (d: the delay of faultDelay).
func (p *proxy) serve(c net.Conn, f fault, d time.Duration) {
	defer c.Close()
	if f == faultDrop {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, as a crashed peer sends
		}
		return
	}
	u, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		return
	}
	defer u.Close()
	go func() {
		io.Copy(u, c)
		if tc, ok := u.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	first := make([]byte, 1)
	if _, err := io.ReadFull(u, first); err != nil {
		return
	}
	switch f {
	case faultCut:
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		return
	case faultDelay:
		time.Sleep(d)
	}
	if _, err := c.Write(first); err != nil {
		return
	}
	io.Copy(c, u)
}
