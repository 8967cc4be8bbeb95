package etcdtest

import (
	"io"
	"net"
	"sync"
	"time"
)

// proxy forwards a member's client connections, so that a killed member's
// clients lose their connections at once, as they would when a process
// dies, and so that the member's clients keep one address across restarts.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	up    bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// newProxy listens on addr and forwards to target while up.
func newProxy(addr, target string) (*proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		if !p.up {
			p.mu.Unlock()
			_ = c.Close() // the member is down: refused, as by a closed port
			continue
		}
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.forward(c)
	}
}

// forward copies between c and a new connection to the target until
// either side ends or the proxy cuts them.
func (p *proxy) forward(c net.Conn) {
	defer p.wg.Done()
	defer p.drop(c)
	b, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	if _, ok := p.conns[c]; !ok { // cut while dialing
		p.mu.Unlock()
		_ = b.Close()
		return
	}
	p.conns[b] = struct{}{}
	p.mu.Unlock()
	defer p.drop(b)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(b, c)
	go pipe(c, b)
	<-done
	// One direction ended: end both, which ends the other copy.
	_ = c.Close()
	_ = b.Close()
	<-done
}

func (p *proxy) drop(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// setUp lets connections through (true) or cuts every connection and
// refuses new ones (false).
func (p *proxy) setUp(up bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up = up
	if up {
		return
	}
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// close stops the proxy and waits for its goroutines.
func (p *proxy) close() {
	_ = p.ln.Close()
	p.setUp(false)
	p.wg.Wait()
}
