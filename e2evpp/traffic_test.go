package e2evpp

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Servers answer every line (TCP) or datagram (UDP) with "<pod> <source
// address seen>", so a client learns which backend it reached and what
// source that backend saw.

// serve starts TCP and UDP servers on port in the pod's namespace; they
// stop when the test ends.
func (p *pod) serve(t *testing.T, port int) { t.Helper(); serveIn(t, p.netns, p.name, port) }

// serveIn starts TCP and UDP servers on port in namespace netns, answering
// as name.
func serveIn(t *testing.T, netns, name string, port int) {
	t.Helper()
	var ln net.Listener
	var pc net.PacketConn
	err := inNetns(netns, func() (err error) {
		if ln, err = net.Listen("tcp4", fmt.Sprintf(":%d", port)); err != nil {
			return err
		}
		pc, err = net.ListenPacket("udp4", fmt.Sprintf(":%d", port))
		return err
	})
	if err != nil {
		t.Fatalf("%s: serving :%d: %v", name, port, err)
	}
	t.Cleanup(func() { ln.Close(); pc.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					if _, err := fmt.Fprintf(c, "%s %s\n", name, c.RemoteAddr()); err != nil {
						return
					}
				}
			}()
		}
	}()
	go func() {
		buf := make([]byte, 2048)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(fmt.Appendf(nil, "%s %s", name, from), from)
		}
	}()
}

// answer is what one request learnt: the backend and the source it saw.
type answer struct {
	backend string
	source  string // IP only
}

func parseAnswer(s string) answer {
	f := strings.Fields(s)
	if len(f) != 2 {
		return answer{backend: s}
	}
	host, _, _ := net.SplitHostPort(f[1])
	return answer{backend: f[0], source: host}
}

// request sends one request from namespace ns to addr ("ip:port") over
// proto ("tcp" or "udp") and returns the answer.
func request(ns, proto, addr string, timeout time.Duration) (answer, error) {
	return requestFrom(ns, "", proto, addr, timeout)
}

// requestFrom is request from the source address src ("": the one the
// namespace's routes pick).
func requestFrom(ns, src, proto, addr string, timeout time.Duration) (answer, error) {
	d := net.Dialer{Timeout: timeout}
	if src != "" {
		ip := net.ParseIP(src)
		if proto == "udp" {
			d.LocalAddr = &net.UDPAddr{IP: ip}
		} else {
			d.LocalAddr = &net.TCPAddr{IP: ip}
		}
	}
	var c net.Conn
	err := inNetns(ns, func() (err error) {
		c, err = d.Dial(proto+"4", addr)
		return err
	})
	if err != nil {
		return answer{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("hello\n")); err != nil {
		return answer{}, err
	}
	if proto == "udp" {
		buf := make([]byte, 2048)
		n, err := c.Read(buf)
		if err != nil {
			return answer{}, err
		}
		return parseAnswer(string(buf[:n])), nil
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return answer{}, err
	}
	return parseAnswer(strings.TrimSpace(line)), nil
}

// spread sends n requests and counts the answers by backend.
func spread(t *testing.T, ns, proto, addr string, n int) (map[string]int, []answer) {
	t.Helper()
	seen := map[string]int{}
	var all []answer
	for range n {
		a, err := request(ns, proto, addr, 3*time.Second)
		if err != nil {
			t.Fatalf("%s %s from %s: %v", proto, addr, ns, err)
		}
		seen[a.backend]++
		all = append(all, a)
	}
	return seen, all
}

// flow is a long-lived TCP connection or UDP flow that sends every tick and
// counts what happens to it: cut (an error, or no answer within 2 s) or
// moved (answered by another backend than its first).
type flow struct {
	proto, ns, addr string
	stop            chan struct{}
	done            chan struct{}

	mu       sync.Mutex
	first    string
	backends map[string]int
	cut      error
	moved    bool
	sent     int
	// lostFirst counts the UDP datagrams that got no answer before the
	// flow's first answer: they are sent again (firstTries).
	lostFirst int
}

// firstTries is how many datagrams a UDP flow sends before giving up on a
// first answer. Rarely (one flow in ~1 600 under cnat on 25.02, cause not
// found; TCP's first SYN is lost about as often, endpoints-1000) a new
// UDP flow's first datagram goes unanswered: a client resends, and so does
// the suite, logging it, so that a flow is measured from its first answer.
const firstTries = 3

// openFlows opens n flows from ns to addr and waits until each has been
// answered once.
func openFlows(t *testing.T, ns, proto, addr string, n int) []*flow {
	t.Helper()
	var fs []*flow
	for range n {
		f := &flow{proto: proto, ns: ns, addr: addr, stop: make(chan struct{}), done: make(chan struct{}), backends: map[string]int{}}
		var c net.Conn
		err := inNetns(ns, func() (err error) {
			c, err = net.DialTimeout(proto+"4", addr, 3*time.Second)
			return err
		})
		if err != nil {
			t.Fatalf("flow %s %s from %s: %v", proto, addr, ns, err)
		}
		go f.run(c)
		fs = append(fs, f)
		t.Cleanup(f.close)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		for _, f := range fs {
			f.mu.Lock()
			first, cut := f.first, f.cut
			f.mu.Unlock()
			if cut != nil {
				t.Fatalf("flow %s %s from %s failed before the change: %v", proto, addr, ns, cut)
			}
			if first == "" {
				return false, "a flow has no answer yet"
			}
		}
		return true, ""
	})
	flows, lost := 0, 0
	for _, f := range fs {
		f.mu.Lock()
		if f.lostFirst > 0 {
			flows++
			lost += f.lostFirst
		}
		f.mu.Unlock()
	}
	if lost > 0 {
		t.Logf("%d of %d %s flows to %s from %s: %d first datagrams unanswered in 2 s, sent again", flows, len(fs), proto, addr, ns, lost)
	}
	return fs
}

func (f *flow) run(c net.Conn) {
	defer close(f.done)
	defer c.Close()
	r := bufio.NewReader(c)
	buf := make([]byte, 2048)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tick.C:
		}
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		var got string
		_, err := c.Write([]byte("tick\n"))
		if err == nil {
			if f.proto == "udp" {
				var n int
				n, err = c.Read(buf)
				got = string(buf[:n])
			} else {
				got, err = r.ReadString('\n')
			}
		}
		f.mu.Lock()
		f.sent++
		if err != nil && f.proto == "udp" && f.first == "" && f.lostFirst+1 < firstTries {
			f.lostFirst++
			f.mu.Unlock()
			continue
		}
		if err != nil {
			if f.cut == nil {
				f.cut = err
			}
			f.mu.Unlock()
			if f.proto == "tcp" {
				return
			}
			continue
		}
		a := parseAnswer(strings.TrimSpace(got))
		if f.first == "" {
			f.first = a.backend
		} else if a.backend != f.first {
			f.moved = true
		}
		f.backends[a.backend]++
		f.mu.Unlock()
	}
}

func (f *flow) close() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	<-f.done
}

// cuts is how many flows were cut or moved to another backend, and the
// first's backend of each cut one.
func cuts(fs []*flow) (n int, which []string) {
	for _, f := range fs {
		f.mu.Lock()
		if f.cut != nil || f.moved {
			n++
			which = append(which, f.first)
		}
		f.mu.Unlock()
	}
	return n, which
}

// fateOf splits the flows first answered by backend into those it still
// answers (kept) and those cut or moved elsewhere (ended), and counts the
// other flows that were cut or moved (others).
func fateOf(fs []*flow, backend string) (kept, ended, others int) {
	for _, f := range fs {
		f.mu.Lock()
		gone := f.cut != nil || f.moved
		mine := f.first == backend
		f.mu.Unlock()
		switch {
		case mine && gone:
			ended++
		case mine:
			kept++
		case gone:
			others++
		}
	}
	return kept, ended, others
}

// unbalancedEnd says why a flow first answered by backend ended other than
// by being re-balanced onto another backend ("" when it did not end, or
// did so): a UDP flow re-balanced is answered elsewhere (moved), a TCP
// one is reset by the backend its packets now reach.
func unbalancedEnd(f *flow, backend string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.first != backend || f.cut == nil:
		return "" // kept, or (UDP) answered by another backend
	case f.proto == "tcp" && (errors.Is(f.cut, syscall.ECONNRESET) || errors.Is(f.cut, syscall.EPIPE)):
		return ""
	}
	return f.cut.Error()
}

// firstBackends counts the flows by the backend that first answered them.
func firstBackends(fs []*flow) map[string]int {
	m := map[string]int{}
	for _, f := range fs {
		f.mu.Lock()
		m[f.first]++
		f.mu.Unlock()
	}
	return m
}

// openFlowsOn opens n flows as openFlows does, then more, n/2 at a time
// (four times at most), until at least min of them have backend as their
// first backend: a scenario about one backend's flows must have some to
// measure, whatever the balancing's draw (12 UDP flows missed one of three
// backends once).
func openFlowsOn(t *testing.T, ns, proto, addr string, n int, backend string, min int) []*flow {
	t.Helper()
	fs := openFlows(t, ns, proto, addr, n)
	for range 4 {
		if firstBackends(fs)[backend] >= min {
			break
		}
		fs = append(fs, openFlows(t, ns, proto, addr, max(n/2, 1))...)
	}
	return fs
}

// refusal classifies what a request to an address without a usable
// backend met: "refused" (an error at once: ICMP prohibited, or a TCP
// reset), "timeout" (nothing came back: dropped) or "answered".
func refusal(ns, proto, addr string) (string, time.Duration) {
	start := time.Now()
	_, err := request(ns, proto, addr, 2*time.Second)
	d := time.Since(start)
	var ne net.Error
	switch {
	case err == nil:
		return "answered", d
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout", d
	default:
		return "refused", d
	}
}
