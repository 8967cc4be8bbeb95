package etcd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcd/embedded"
)

// A client watching etcd sends it nothing per event received: no PING of
// gRPC's bandwidth estimate (which a window left to its default sends after
// each event that arrives alone), so that neither the agent nor etcd pays a
// round trip per change and watching agent.
func TestWatchEventsCostTheClientNoPing(t *testing.T) {
	m, err := embedded.Start(embedded.Params{DataDir: t.TempDir(), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p := newPingCounter(t, m.Endpoint())
	defer p.close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	watcher, err := NewClient(ctx, ClientParams{Endpoints: []string{"http://" + p.addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	writer, err := NewClient(ctx, ClientParams{Endpoints: []string{"http://" + m.Endpoint()}})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()

	wch := watcher.Watch(ctx, "/k/", clientv3.WithPrefix())
	// The watch is created once its first event arrives; the pings
	// counted are those of the events after.
	const events = 20
	before := int64(-1)
	for i := range events + 1 {
		if _, err := writer.Put(ctx, fmt.Sprint("/k/", i), "value"); err != nil {
			t.Fatal(err)
		}
		select {
		case resp := <-wch:
			if err := resp.Err(); err != nil || len(resp.Events) != 1 {
				t.Fatalf("watch response %+v: %v", resp, err)
			}
		case <-ctx.Done():
			t.Fatal("no watch event")
		}
		if before < 0 {
			before = p.pings.Load()
		}
		time.Sleep(2 * time.Millisecond) // each event alone, as most changes come
	}
	if got := p.pings.Load() - before; got != 0 {
		t.Errorf("the watching client sent %d PINGs for %d events, want none", got, events)
	}
}

// pingCounter forwards one TCP connection to target and counts the HTTP/2
// PING frames (acks aside) the client sends through it.
type pingCounter struct {
	t      *testing.T
	ln     net.Listener
	target string
	pings  atomic.Int64
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func newPingCounter(t *testing.T, target string) *pingCounter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pingCounter{t: t, ln: ln, target: target}
	p.wg.Go(p.serve)
	return p
}

func (p *pingCounter) addr() string { return p.ln.Addr().String() }

func (p *pingCounter) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *pingCounter) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Go(func() { _, _ = io.Copy(c, s); c.Close() })
		p.wg.Go(func() {
			if err := p.frames(s, c); err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
				p.t.Logf("ping counter: %v", err)
			}
			s.Close()
		})
	}
}

// frames forwards the client's preface and frames from c to s, counting
// PINGs.
func (p *pingCounter) frames(s io.Writer, c io.Reader) error {
	preface := make([]byte, 24) // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	if _, err := io.ReadFull(c, preface); err != nil {
		return err
	}
	if _, err := s.Write(preface); err != nil {
		return err
	}
	head := make([]byte, 9)
	for {
		if _, err := io.ReadFull(c, head); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(append([]byte{0}, head[:3]...)))
		const typePing, flagAck = 0x6, 0x1
		if head[3] == typePing && head[4]&flagAck == 0 {
			p.pings.Add(1)
		}
		frame := append(head, make([]byte, n)...)
		if _, err := io.ReadFull(c, frame[9:]); err != nil {
			return err
		}
		if _, err := s.Write(frame); err != nil {
			return err
		}
		head = frame[:9:9]
	}
}
