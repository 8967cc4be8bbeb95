package agent

import (
	"context"
	"slices"
	"sync"

	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// prefetchNAT44 is the NAT44 renderer's port to VPP (plugins/vpp's, every
// method of it kept) with the dump of the first full apply read ahead: at
// start, Run has VPP's NAT44 state and routes read while the controller
// lists etcd and the handlers resync, where they were read one after the
// other (at W(50 000), ~55 000 dump replies). The read-ahead stands for a
// dump made at the apply only if nothing can have changed VPP between:
//
//   - VPP was this agent's (its owner marker, owner.go) when the read
//     started, and the apply's ownership check found it still marked so,
//     not marking it itself (markedOwner drops the read-ahead): another
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
type prefetchNAT44 struct {
	*vpp.NAT44
	conn  prefetchConn
	owner string   // this agent's owner marker
	vrfs  []uint32 // the routes' VRFs; nil: no routes read ahead

	mu      sync.Mutex
	ahead   *readAhead // nil: none (not started, dropped or used)
	routes  []nat44.Route
	routeOK bool // routes stand for the next DumpRoutes of vrfs
}

// prefetchConn is what the read-ahead needs of the VPP connection.
type prefetchConn interface {
	ReadOwner(ctx context.Context) (string, error)
	Status() vpp.Status
}

// readAhead is one read of VPP's NAT44 state and routes.
type readAhead struct {
	connects int // the connection (Status().Connects) it was read on
	done     chan struct{}
	state    *nat44.State
	routes   []nat44.Route
	err      error
}

// start reads VPP's state ahead in a goroutine of wg, once, when VPP is
// this agent's; ctx bounds it.
func (p *prefetchNAT44) start(ctx context.Context, wg *sync.WaitGroup) {
	connects := p.conn.Status().Connects
	if tag, err := p.conn.ReadOwner(ctx); err != nil || tag != p.owner {
		return // a new or another's VPP: its dump is read at the apply
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
func (p *prefetchNAT44) drop() {
	p.mu.Lock()
	p.ahead, p.routes, p.routeOK = nil, nil, false
	p.mu.Unlock()
}

// markedOwner is told that the ownership check marked VPP as this agent's:
// it was not before, and another agent may have written to it meanwhile.
func (p *prefetchNAT44) markedOwner() { p.drop() }

// Dump is the read-ahead, when it stands for VPP's state now, else VPP's.
func (p *prefetchNAT44) Dump(ctx context.Context) (*nat44.State, error) {
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
func (p *prefetchNAT44) DumpRoutes(ctx context.Context, vrfs []uint32) ([]nat44.Route, error) {
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

func (p *prefetchNAT44) SetGlobal(ctx context.Context, g nat44.Global) error {
	p.drop()
	return p.NAT44.SetGlobal(ctx, g)
}

func (p *prefetchNAT44) AddDelPoolAddress(ctx context.Context, a nat44.PoolAddress, add bool) error {
	p.drop()
	return p.NAT44.AddDelPoolAddress(ctx, a, add)
}

func (p *prefetchNAT44) SetInterfaceFeatures(ctx context.Context, ifName string, old, new nat44.Features) (uint32, error) {
	p.drop()
	return p.NAT44.SetInterfaceFeatures(ctx, ifName, old, new)
}

func (p *prefetchNAT44) AddDelMapping(ctx context.Context, m *nat44.Mapping, add bool) error {
	p.drop()
	return p.NAT44.AddDelMapping(ctx, m, add)
}

func (p *prefetchNAT44) AddDelLBLocal(ctx context.Context, key nat44.MappingKey, l nat44.Local, add bool) error {
	p.drop()
	return p.NAT44.AddDelLBLocal(ctx, key, l, add)
}

func (p *prefetchNAT44) AddDelIdentity(ctx context.Context, id *nat44.Identity, add bool) error {
	p.drop()
	return p.NAT44.AddDelIdentity(ctx, id, add)
}

func (p *prefetchNAT44) AddDelRoute(ctx context.Context, r nat44.Route, add bool) error {
	p.drop()
	return p.NAT44.AddDelRoute(ctx, r, add)
}

func (p *prefetchNAT44) Pipeline(ctx context.Context) (nat44.Pipeline, error) {
	p.drop()
	return p.NAT44.Pipeline(ctx)
}
