package cnat

import (
	"context"
	"net/netip"
	"testing"
)

// lockedVPP is the fake VPP reporting every call made while the renderer
// holds its lock.
type lockedVPP struct {
	*fakeVPP
	r             *Renderer
	calls, locked int
}

func (v *lockedVPP) check() {
	v.calls++
	if !v.r.mu.TryLock() {
		v.locked++
		return
	}
	v.r.mu.Unlock()
}

func (v *lockedVPP) SNATAddresses(ctx context.Context) (netip.Addr, netip.Addr, error) {
	v.check()
	return v.fakeVPP.SNATAddresses(ctx)
}

func (v *lockedVPP) DumpTranslations(ctx context.Context) ([]Dumped, error) {
	v.check()
	return v.fakeVPP.DumpTranslations(ctx)
}

func (v *lockedVPP) DumpFIBRoutes(ctx context.Context, vrfs []uint32, ip6 bool) ([]Route, error) {
	v.check()
	return v.fakeVPP.DumpFIBRoutes(ctx, vrfs, ip6)
}

func (v *lockedVPP) UpdateTranslation(ctx context.Context, t *Translation) (uint32, error) {
	v.check()
	return v.fakeVPP.UpdateTranslation(ctx, t)
}

func (v *lockedVPP) AddDelFIBRoute(ctx context.Context, r Route, add bool) error {
	v.check()
	return v.fakeVPP.AddDelFIBRoute(ctx, r, add)
}

// No lock is held while VPP is called (package reconcile's contract): a
// reader of the renderer's state (a REST view, on another goroutine) is
// never kept waiting for VPP's answers.
func TestNoLockDuringVPPCalls(t *testing.T) {
	v := &lockedVPP{fakeVPP: newFake(t, allIfaces...)}
	v.r = newRenderer(t, v, nil)
	r := v.r
	_ = r.Resync(resyncData(web()))
	apply(t, r, true)
	svc := web()
	svc.Ports[0].Backends = svc.Ports[0].Backends[:1]
	_ = r.UpdateService(nil, svc)
	apply(t, r, false)
	if v.calls == 0 || v.locked != 0 {
		t.Errorf("%d of %d VPP calls made with the renderer locked, want 0", v.locked, v.calls)
	}
	checkState(t, v.fakeVPP, wantState(r))
}
