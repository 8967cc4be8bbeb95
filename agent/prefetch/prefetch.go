package prefetch

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// NAT44 is the NAT44 renderer's port to VPP (plugins/vpp's, every
// method of it kept) with the dump of the first full apply read ahead: at
// start, Run has VPP's NAT44 state and routes read while the controller
// lists etcd and the handlers resync, where they were read one after the
// other (at W(50 000), ~55 000 dump replies). The read-ahead stands for a
// dump made at the apply only if nothing can have changed VPP between:
//
//   - VPP was this agent's (its owner marker, agent/owner.go) when the
//     read started, and the apply's ownership check found it still marked
//     so, not marking it itself (MarkedOwner drops the read-ahead): another
//     agent writes to a VPP only once it marked it its own;
//   - the connection is the one it was read on (a reconnection or VPP's
//     restart drops it);
//   - no write went through this port before (the renderer, its only
//     writer of NAT44 state and of these routes, writes after its dump);
//   - it serves the first Dump, and the DumpRoutes of the same VRFs right
//     after it, only once; every later dump is VPP's.
//
// ASSUMPTION: VPP changes its NAT44 mappings, features and these routes only
// when a client asks it to (none expires or is made by traffic), and no
// client but an agent that marked VPP its own writes them (vppctl by hand
// aside, which a dump at the apply would not make safe either).
//
// On a VPP no agent marked (new, or restarted while the agent was down),
// Start enables the NAT44-ED plugin ahead instead, with the renderer's
// session limit: VPP clears its session tables as it enables it, ~0.9 s in
// which it answers nothing else, and the apply's SetGlobal then finds it
// enabled (or, first, enables it itself: the other's enable is answered
// "already enabled", which both take as done).
type NAT44 struct {
	*vpp.NAT44
	conn     Conn
	owner    string   // this agent's owner marker
	vrfs     []uint32 // the routes' VRFs; nil: no routes read ahead
	sessions uint32   // the session limit the plugin is enabled with ahead; 0: not
	log      *slog.Logger

	mu      sync.Mutex
	ahead   *readAhead // nil: none (not started, dropped or used)
	routes  []nat44.Route
	routeOK bool // routes stand for the next DumpRoutes of vrfs
}

// Conn is what the read-ahead needs of the VPP connection
// (*vpp.Conn).
type Conn interface {
	ReadOwner(ctx context.Context) (string, error)
	Status() vpp.Status
}

// New wraps port, the renderer's port on conn, for an agent whose owner
// marker is owner; vrfs are the VRFs of the routes the renderer dumps
// (nil: it dumps none, and no routes are read ahead); sessions is the
// renderer's NAT44 session limit (0: the plugin is not enabled ahead).
func New(port *vpp.NAT44, conn Conn, owner string, vrfs []uint32, sessions uint32, log *slog.Logger) *NAT44 {
	return &NAT44{NAT44: port, conn: conn, owner: owner, vrfs: vrfs, sessions: sessions, log: log}
}

// readAhead is one read of VPP's NAT44 state and routes.
type readAhead struct {
	connects int // the connection (Status().Connects) it was read on
	done     chan struct{}
	state    *nat44.State
	routes   []nat44.Route
	err      error
}

// Start reads VPP's state ahead in a goroutine of wg, once, when VPP is
// this agent's; ctx bounds it.
func (p *NAT44) Start(ctx context.Context, wg *sync.WaitGroup) {
	connects := p.conn.Status().Connects
	tag, err := p.conn.ReadOwner(ctx)
	switch {
	case err == nil && tag == "" && p.sessions != 0:
		// A VPP no agent marked: nothing to read ahead (its dump is read at
		// the apply), but the plugin to enable.
		wg.Go(func() {
			if err := p.NAT44.EnablePlugin(ctx, p.sessions); err != nil && ctx.Err() == nil {
				p.log.Warn("enabling NAT44-ED ahead failed: the first apply enables it", "err", err)
			}
		})
		return
	case err != nil || tag != p.owner:
		return // another's VPP: its dump is read at the apply
	}
	ra := &readAhead{connects: connects, done: make(chan struct{})}
	p.mu.Lock()
	if p.ahead != nil {
		p.mu.Unlock()
		return
	}
	p.ahead = ra
	p.mu.Unlock()
	wg.Go(func() {
		defer close(ra.done)
		if ra.state, ra.err = p.NAT44.Dump(ctx); ra.err == nil && p.vrfs != nil {
			ra.routes, ra.err = p.NAT44.DumpRoutes(ctx, p.vrfs)
		}
	})
}

// drop forgets the read-ahead: VPP may no longer hold what it read.
func (p *NAT44) drop() {
	p.mu.Lock()
	p.ahead, p.routes, p.routeOK = nil, nil, false
	p.mu.Unlock()
}

// MarkedOwner is told that the ownership check marked VPP as this agent's:
// it was not before, and another agent may have written to it meanwhile.
func (p *NAT44) MarkedOwner() { p.drop() }

// Dump is the read-ahead, when it stands for VPP's state now, else VPP's.
func (p *NAT44) Dump(ctx context.Context) (*nat44.State, error) {
	p.mu.Lock()
	ra := p.ahead
	p.ahead, p.routes, p.routeOK = nil, nil, false
	p.mu.Unlock()
	if ra != nil {
		select {
		case <-ra.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if ra.err == nil && p.conn.Status().Connects == ra.connects {
			p.mu.Lock()
			p.routes, p.routeOK = ra.routes, p.vrfs != nil
			p.mu.Unlock()
			return ra.state, nil
		}
	}
	return p.NAT44.Dump(ctx)
}

// DumpRoutes is the routes read ahead with the state the last Dump
// returned, for the same VRFs, else VPP's.
func (p *NAT44) DumpRoutes(ctx context.Context, vrfs []uint32) ([]nat44.Route, error) {
	p.mu.Lock()
	routes, ok := p.routes, p.routeOK && slices.Equal(vrfs, p.vrfs)
	p.routes, p.routeOK = nil, false
	p.mu.Unlock()
	if ok {
		return routes, nil
	}
	return p.NAT44.DumpRoutes(ctx, vrfs)
}

// The writes drop the read-ahead.

// SetGlobal drops the read-ahead and sets VPP's NAT44 global settings.
func (p *NAT44) SetGlobal(ctx context.Context, g nat44.Global) error {
	p.drop()
	return p.NAT44.SetGlobal(ctx, g)
}

// AddDelPoolAddress drops the read-ahead and adds or deletes a pool address.
func (p *NAT44) AddDelPoolAddress(ctx context.Context, a nat44.PoolAddress, add bool) error {
	p.drop()
	return p.NAT44.AddDelPoolAddress(ctx, a, add)
}

// SetInterfaceFeatures drops the read-ahead and sets an interface's NAT44 features.
func (p *NAT44) SetInterfaceFeatures(ctx context.Context, ifName string, old, new nat44.Features) (uint32, error) {
	p.drop()
	return p.NAT44.SetInterfaceFeatures(ctx, ifName, old, new)
}

// AddDelMapping drops the read-ahead and adds or deletes a static mapping.
func (p *NAT44) AddDelMapping(ctx context.Context, m *nat44.Mapping, add bool) error {
	p.drop()
	return p.NAT44.AddDelMapping(ctx, m, add)
}

// AddDelLBLocal drops the read-ahead and adds or deletes a load-balanced local.
func (p *NAT44) AddDelLBLocal(ctx context.Context, key nat44.MappingKey, l nat44.Local, add bool) error {
	p.drop()
	return p.NAT44.AddDelLBLocal(ctx, key, l, add)
}

// AddDelIdentity drops the read-ahead and adds or deletes an identity mapping.
func (p *NAT44) AddDelIdentity(ctx context.Context, id *nat44.Identity, add bool) error {
	p.drop()
	return p.NAT44.AddDelIdentity(ctx, id, add)
}

// AddDelRoute drops the read-ahead and adds or deletes a route.
func (p *NAT44) AddDelRoute(ctx context.Context, r nat44.Route, add bool) error {
	p.drop()
	return p.NAT44.AddDelRoute(ctx, r, add)
}

// Pipeline drops the read-ahead and returns the port's pipeline of writes.
func (p *NAT44) Pipeline(ctx context.Context) (nat44.Pipeline, error) {
	p.drop()
	return p.NAT44.Pipeline(ctx)
}
