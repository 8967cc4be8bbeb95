package pods

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/containernetworking/plugins/pkg/ns"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/vpp"
)

// Resync implements controller.Handler: it reconciles the records with
// VPP (Reconcile). It runs before the service processor's resync, so that
// after a VPP restart every pod's interface is back before services are
// reprogrammed. A failure keeps the manager not ready and schedules the
// controller's healing resync.
func (m *Manager) Resync(ctx context.Context, ev *controller.ResyncEvent) error {
	if ev.DataplaneRestarted {
		m.gwKnown = false
	}
	return m.settle(ctx)
}

// settle reconciles and keeps the outcome for Ready and Back.
func (m *Manager) settle(ctx context.Context) error {
	st, err := m.reconcile(ctx)
	m.mu.Lock()
	m.lastErr, m.notBack = err, st.Failed
	if err != nil && m.notBack == 0 {
		m.notBack = len(m.pods) // failed before looking at them one by one
	}
	if err == nil {
		m.restored = true
	}
	m.mu.Unlock()
	return err
}

// Back tells whether every recorded pod is wired in VPP as of the last
// reconcile (after a VPP restart: re-created); if not, why (how many are
// not, and the last reconcile's error). The agent is not ready, and the
// CNI's STATUS says so, until they are.
func (m *Manager) Back() (bool, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case !m.restored && m.lastErr == nil:
		return false, "the pods of the records are not reconciled with VPP yet"
	case m.lastErr != nil:
		return false, fmt.Sprintf("%d of %d pods not back in VPP: %v", m.notBack, len(m.pods), m.lastErr)
	}
	return true, ""
}

// ReconcileStats counts what a Reconcile did.
type ReconcileStats struct {
	// InPlace pods needed nothing; Rewired had their interface but not
	// all of its wiring; Recreated got a new interface (VPP restarted);
	// Swept were records of pods gone (their veth or netns gone: a node
	// reboot, a pod deleted while the agent was away).
	InPlace, Rewired, Recreated, Swept int
	// Failed pods could not be brought back (the error says why).
	Failed int
}

// Reconcile makes VPP hold every recorded pod's interface: a pod whose
// interface is there, up and tagged, with its route, is left alone (an
// agent restart writes nothing to VPP then); one whose interface is
// missing (VPP restarted) gets it again (a tap's pod end, which died with
// VPP, is made again in the pod's netns and configured); a record whose
// pod is gone is swept, its address released.
func (m *Manager) Reconcile(ctx context.Context) error {
	_, err := m.reconcile(ctx)
	return err
}

func (m *Manager) reconcile(ctx context.Context) (ReconcileStats, error) {
	var st ReconcileStats
	m.mu.Lock()
	recs := slices.SortedFunc(maps.Values(m.pods), func(a, b *record) int { return a.pod().Compare(b.pod()) })
	m.mu.Unlock()
	plan := m.p.Plan()
	if plan == nil {
		if len(recs) == 0 {
			return st, nil
		}
		return st, fmt.Errorf("pods: no address plan yet: %w", ErrNotReady)
	}
	ifs, err := m.p.VPP.ListInterfaces(ctx)
	if err != nil {
		return st, fmt.Errorf("pods: %w", err)
	}
	if len(recs) == 0 {
		return st, nil
	}
	byName := map[string]vpp.PodInterfaceState{}
	for _, i := range ifs {
		byName[i.Name] = i
	}
	if lost := m.lost(recs, byName); lost > 0 {
		if name := m.startupPending(byName); name != "" {
			// Nothing is made, the gateway neither: the healing resync,
			// or the interface's event (Update), tries again.
			m.waitStartup = true
			st.Failed = lost
			return st, fmt.Errorf("pods: VPP's startup configuration has not run yet (no interface %s): %d pods wait to be re-created: %w", name, lost, ErrNotReady)
		}
	}
	m.waitStartup = false
	m.gwKnown = false
	gw, err := m.ensureGateway(ctx, plan)
	if err != nil {
		return st, fmt.Errorf("pods: %w", err)
	}
	var errs []error
	changed := false
	for _, r := range recs {
		tag := m.p.Tag(r.Namespace, r.Pod)
		l := r.link(m.p.VRF, gw, tag)
		cur, ok := byName[r.VPPName]
		if ok && cur.Tag == tag {
			route, err := m.p.VPP.HasPodRoute(ctx, m.p.VRF, cur.Index, r.IP)
			if err != nil {
				errs = append(errs, err)
				st.Failed++
				continue
			}
			if cur.AdminUp && route && cur.Index == r.SwIfIndex {
				st.InPlace++
				continue
			}
			if err := m.p.VPP.RewirePodInterface(ctx, cur.Index, l); err != nil {
				errs = append(errs, fmt.Errorf("pod %s: %w", r.pod(), err))
				st.Failed++
				continue
			}
			st.Rewired++
			changed = true
			if cur.Index != r.SwIfIndex {
				nr := *r
				nr.SwIfIndex = cur.Index
				errs = append(errs, m.setRecord(&nr))
			}
			continue
		}
		if err := m.recreate(ctx, r, l, plan); err != nil {
			if errors.Is(err, errPodGone) {
				errs = append(errs, m.sweep(ctx, r))
				st.Swept++
				continue
			}
			errs = append(errs, fmt.Errorf("pod %s: %w", r.pod(), err))
			st.Failed++
			continue
		}
		st.Recreated++
		changed = true
	}
	if changed && m.p.Refresh != nil {
		if err := m.p.Refresh(ctx); err != nil {
			m.log.Warn("pods: re-reading VPP's interfaces", "err", err)
		}
	}
	if st.Rewired+st.Recreated+st.Swept > 0 {
		m.log.Info("pods: reconciled with VPP", "inPlace", st.InPlace, "rewired", st.Rewired, "recreated", st.Recreated, "swept", st.Swept)
	}
	return st, errors.Join(errs...)
}

// lost counts the records whose VPP interface is not in VPP's table (by
// name and tag): those a VPP restart took.
func (m *Manager) lost(recs []*record, byName map[string]vpp.PodInterfaceState) int {
	n := 0
	for _, r := range recs {
		if cur, ok := byName[r.VPPName]; !ok || cur.Tag != m.p.Tag(r.Namespace, r.Pod) {
			n++
		}
	}
	return n
}

// startupPending names an interface of VPP's startup configuration
// (Params.StartupInterfaces) VPP does not have yet; "" when it has them
// all.
func (m *Manager) startupPending(byName map[string]vpp.PodInterfaceState) string {
	if m.p.StartupInterfaces == nil {
		return ""
	}
	for _, name := range m.p.StartupInterfaces() {
		if _, ok := byName[name]; name != "" && !ok {
			return name
		}
	}
	return ""
}

// errPodGone: a record's pod cannot be wired again (its veth or netns is
// gone).
var errPodGone = errors.New("the pod's veth or netns is gone")

// recreate makes a recorded pod's VPP interface again.
func (m *Manager) recreate(ctx context.Context, r *record, l vpp.PodLink, plan *addrplan.Plan) error {
	if r.Kind == vpp.PodLinkAFPacket && !hostLinkExists(r.HostIf) {
		return errPodGone
	}
	if r.Kind == vpp.PodLinkTap {
		if err := withNetns(r.Netns, func(ns.NetNS) error { return nil }); errors.Is(err, ErrNetnsGone) {
			return errPodGone
		}
	}
	pi, err := m.p.VPP.AddPodInterface(ctx, l)
	if err != nil {
		return err
	}
	if r.Kind == vpp.PodLinkTap {
		// The pod end died with VPP: the new one needs its configuration.
		err := configurePod(r.Netns, podConfig{ifName: r.IfName, ip: r.IP, gateway: plan.PodGateway, gwMAC: l.MAC[:]})
		if err != nil {
			_ = m.p.VPP.DeletePodInterface(ctx, l, pi.Index)
			return err
		}
	}
	nr := *r
	nr.SwIfIndex, nr.VPPName = pi.Index, pi.Name
	return m.setRecord(&nr)
}

// sweep forgets a pod that is gone: its address and its record.
func (m *Manager) sweep(ctx context.Context, r *record) error {
	m.log.Info("pods: record of a pod gone swept", "pod", r.pod().String(), "container", r.ContainerID)
	if alloc := m.p.Allocator(); alloc != nil {
		if err := alloc.Release(ctx, r.pod()); err != nil {
			return err
		}
	}
	return m.dropRecord(r.pod())
}
