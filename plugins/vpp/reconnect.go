package vpp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/core"

	"contiv.dev/vpp/internal/backoff"
)

// sleep waits d, or less when VPP's socket appears or is replaced (sock is
// what the socket path held when the wait began, nil if nothing); false
// means stop.
func (c *Conn) sleep(ctx context.Context, d time.Duration, sock os.FileInfo) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	var poll <-chan time.Time
	if c.cfg.Adapter == nil {
		p := time.NewTicker(c.cfg.SocketPoll)
		defer p.Stop()
		poll = p.C
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-c.stop:
			return false
		case <-t.C:
			return true
		case <-poll:
			if now, ok := c.socketFile(); ok && (sock == nil || !os.SameFile(now, sock)) {
				return true // a (new) socket: try it now
			}
		}
	}
}

// socketFile stats VPP's socket; with an Adapter it reports present.
func (c *Conn) socketFile() (os.FileInfo, bool) {
	if c.cfg.Adapter != nil {
		return nil, true
	}
	fi, err := os.Stat(c.cfg.Socket)
	if err != nil {
		return nil, false
	}
	return fi, true
}

// retryDelay is the backoff policy: the wait after a failed attempt that
// followed a wait of prev (0 after a success). It doubles from RetryMin,
// up to RetryPresent while the socket exists (VPP is there or starting),
// up to RetryMax while it does not.
func retryDelay(prev time.Duration, socketPresent bool, cfg Config) time.Duration {
	limit := cfg.RetryMax
	if socketPresent {
		limit = cfg.RetryPresent
	}
	return backoff.Policy{Initial: cfg.RetryMin, Max: limit}.After(prev)
}

// errNoSocket is why a connection attempt failed without a socket file.
var errNoSocket = errors.New("the API socket does not exist (VPP not running)")

// watchedAdapter passes everything to the transport and reports a failed
// send (a broken socket) at once, so that a dead VPP is noticed at the
// next call rather than after probes time out.
type watchedAdapter struct {
	adapter.VppAPI
	failed func()
}

func (w *watchedAdapter) SendMsg(context uint32, data []byte) error {
	err := w.VppAPI.SendMsg(context, data)
	if err != nil {
		w.failed()
	}
	return err
}

// probeTimeouts is how many health probes in a row may time out before
// the connection counts as lost.
const probeTimeouts = 3

// watch probes the connection until it breaks (error), VPP's process
// changes (error) or the connection is stopped (nil). Besides the
// periodic control_ping it probes at once when a send failed, and it
// watches the socket file (sock, nil with an Adapter): a socket replaced
// by another file means a new VPP; a vanished socket is probed.
// ASSUMPTION: a starting VPP creates its socket file anew (another inode),
// as restart.jsonl's "new API socket appears" suggests; were the file
// kept, the probes still notice the dead connection.
func (c *Conn) watch(ctx context.Context, conn *core.Connection, pid uint32, sock os.FileInfo) error {
	t := time.NewTicker(c.cfg.HealthInterval)
	defer t.Stop()
	var poll <-chan time.Time
	if sock != nil {
		p := time.NewTicker(c.cfg.SocketPoll)
		defer p.Stop()
		poll = p.C
	}
	timeouts := 0
	gone := false // the socket file vanished and VPP was asked
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.stop:
			return nil
		case <-t.C:
		case <-c.kick:
		case <-poll:
			now, ok := c.socketFile()
			switch {
			case ok && os.SameFile(now, sock):
				gone = false
				continue
			case ok:
				return fmt.Errorf("VPP's API socket %s was replaced: VPP restarted", c.cfg.Socket)
			case gone:
				continue // asked already; the periodic probe goes on
			}
			// Gone: VPP is stopping, or someone removed the file; ask VPP.
			gone = true
		}
		pctx, cancel := context.WithTimeout(ctx, c.cfg.HealthTimeout)
		got, err := c.ping(pctx, conn)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded) && c.busy():
			// A busy VPP is not a dead one: its main thread answers the
			// probe after the calls queued before it (a feature enable
			// walking every mapping: FACTS §7). A call in flight is
			// bounded by CallTimeout; a dead VPP closes the socket.
			timeouts = 0
		case errors.Is(err, context.DeadlineExceeded):
			timeouts++
			if timeouts >= probeTimeouts {
				return fmt.Errorf("VPP did not answer %d health probes in a row: %w", timeouts, err)
			}
		case err != nil:
			return fmt.Errorf("VPP health probe: %w", err)
		case got != pid:
			return fmt.Errorf("VPP restarted: process ID %d became %d", pid, got)
		default:
			timeouts = 0
		}
	}
}

// busy tells whether VPP is working for the agent: it answered a call
// within the probes' window, or a call is in flight and it answered one
// within a call's bound (CallTimeout).
func (c *Conn) busy() bool {
	since := time.Since(time.Unix(0, c.answered.Load()))
	window := probeTimeouts * (c.cfg.HealthInterval + c.cfg.HealthTimeout)
	return since < window || (c.inflight.Load() > 0 && since < c.cfg.CallTimeout)
}

// ping sends a control_ping and returns VPP's process ID.
func (c *Conn) ping(ctx context.Context, conn *core.Connection) (uint32, error) {
	r := &memclnt.ControlPingReply{}
	if err := call(ctx, conn, &memclnt.ControlPing{}, r); err != nil {
		return 0, err
	}
	return r.VpePID, nil
}
