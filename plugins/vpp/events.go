package vpp

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/core"
)

// ResyncInterval is how often Run re-reads the whole interface table
// besides following VPP's events: a safety net for changes VPP sends no
// event for (a tag set on an interface already up).
const ResyncInterval = 30 * time.Second

// eventBuffer is how many interface events may wait to be read.
const eventBuffer = 4096

// refreshRetry is how soon a failed re-read is tried again while the
// connection stays up.
const refreshRetry = time.Second

// Run keeps the cache current until ctx ends: at every (re)connection it
// registers for interface events (registration belongs to the connection)
// and re-reads the whole table; then every sw_interface_event makes it
// re-read the table (a deleted event removes the interface at once), and
// the table is re-read every ResyncInterval regardless. Every change goes
// to onChange. Run returns when ctx ends; run it once.
func (t *Interfaces) Run(ctx context.Context) {
	for {
		s := t.conn.session()
		if s.conn != nil {
			t.follow(ctx, s)
		} else {
			select {
			case <-ctx.Done():
			case <-s.changed:
			}
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// follow serves one connection until it changes or ctx ends.
func (t *Interfaces) follow(ctx context.Context, s session) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the event watcher
	events := t.subscribe(ctx, s)
	resync := time.NewTicker(t.resync)
	defer resync.Stop()
	var retry <-chan time.Time
	dirty := true
	for {
		if dirty {
			dirty, retry = false, nil
			if err := t.Refresh(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				level := slog.LevelWarn
				if errors.Is(err, ErrNotConnected) {
					level = slog.LevelDebug // the reconnect re-reads anyway
				}
				t.conn.log.Log(ctx, level, "reading VPP's interfaces; retrying", "err", err, "retryIn", refreshRetry)
				retry = time.After(refreshRetry)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
			now := t.conn.session()
			if now.conn != s.conn || now.gen != s.gen {
				return
			}
			s = now
		case e, ok := <-events:
			if !ok {
				events = nil // the watcher ended; resyncs go on
				continue
			}
			dirty = t.onEvents(e, events)
		case <-resync.C:
			dirty = true
		case <-retry:
			dirty = true
		}
	}
}

// onEvents takes one event and every one already queued behind it (VPP
// coalesces events; so does this), forgets the deleted interfaces and says
// whether the table must be re-read.
func (t *Interfaces) onEvents(first api.Message, more <-chan api.Message) (reread bool) {
	var deleted []uint32
	add := func(m api.Message) {
		e, ok := m.(*interfaces.SwInterfaceEvent)
		if !ok {
			return
		}
		t.conn.log.Debug("VPP interface event", "swIfIndex", e.SwIfIndex, "flags", e.Flags, "deleted", e.Deleted)
		if e.Deleted {
			deleted = append(deleted, uint32(e.SwIfIndex))
		} else {
			reread = true
		}
	}
	add(first)
drain:
	for {
		select {
		case m, ok := <-more:
			if !ok {
				break drain
			}
			add(m)
		default:
			break drain
		}
	}
	if len(deleted) > 0 {
		t.forget(deleted)
	}
	return reread
}

// subscribe watches sw_interface_event on this connection and registers
// with want_interface_events. It returns nil when VPP cannot send events:
// then only the periodic re-reads notice changes.
func (t *Interfaces) subscribe(ctx context.Context, s session) <-chan api.Message {
	// govpp drops events its buffers cannot take; a burst (a node's pods
	// coming back) must fit, and one delivered event is enough anyway.
	w, err := s.conn.WatchEventWithOptions(ctx, &interfaces.SwInterfaceEvent{},
		core.WithEventBufferSize(eventBuffer), core.WithNotifBufferSize(eventBuffer))
	if err != nil {
		t.conn.log.Warn("VPP cannot send interface events; re-reading its interfaces periodically", "err", err, "every", t.resync)
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, t.conn.cfg.CallTimeout)
	defer cancel()
	err = t.conn.invokeOn(cctx, s.conn, &interfaces.WantInterfaceEvents{EnableDisable: 1, PID: uint32(os.Getpid())},
		&interfaces.WantInterfaceEventsReply{})
	var rv api.VPPApiError
	switch {
	case errors.As(err, &rv) && rv == api.INVALID_REGISTRATION:
		// Registered already: registration is per connection, so this
		// connection did it before; the events come.
	case err != nil:
		w.Close()
		t.conn.log.Warn("registering for VPP interface events failed; re-reading its interfaces periodically", "err", err, "every", t.resync)
		return nil
	}
	return w.Events()
}
