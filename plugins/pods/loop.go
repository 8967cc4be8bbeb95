package pods

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/plugins/vpp"
)

// The loop's part of each operation: IPAM, VPP and the record, in order
// with every other change the agent applies. The kernel's part (veths,
// the pod's eth0) is the caller's (ops.go), off the loop.

// prepared is what ADD's caller made in the kernel before the loop's part:
// for af_packet, the veth pair (its host end's name and the pod end's
// MAC).
type prepared struct {
	hostIf string
	podMAC string
	// reused: the veth is the recorded sandbox's own (the same ADD again).
	reused bool
}

// addLoop is ADD's loop part: the same sandbox in place answers from its
// record; otherwise another sandbox's (or a broken) wiring is removed from
// VPP, and the pod gets its address, its VPP interface and its record. A
// failure undoes what it made. o.stale is another sandbox's record whose
// kernel side the caller removes.
func (m *Manager) addLoop(ctx context.Context, req Request, prep prepared) (o outcome) {
	plan, alloc := m.p.Plan(), m.p.Allocator()
	if plan == nil || alloc == nil {
		o.err = fmt.Errorf("no address plan or IPAM not loaded yet: %w", ErrNotReady)
		return o
	}
	if err := ctx.Err(); err != nil {
		o.err = fmt.Errorf("deadline passed before the request was taken in: %w: %w", ErrNotReady, err)
		return o
	}
	pod := podOf(req)
	if old := m.record(pod); old != nil {
		same := old.sameSandbox(req)
		if same && (m.p.Kind != vpp.PodLinkAFPacket || prep.reused) && m.inPlace(ctx, old) {
			o.rec, o.res = old, m.result(old, plan)
			return o
		}
		if !same {
			m.log.Info("pods: replacing the wiring of another sandbox", "pod", pod.String(), "old", old.ContainerID, "new", req.ContainerID)
			o.stale = old
		}
		if err := m.unwireVPP(ctx, old); err != nil {
			o.err = fmt.Errorf("pod %s: removing the old wiring: %w", pod, err)
			return o
		}
	}
	r, err := m.add(ctx, req, prep, plan, alloc)
	if err != nil {
		o.err = err
		return o
	}
	m.told(ctx, pod)
	o.rec, o.res = r, m.result(r, plan)
	return o
}

func (m *Manager) add(ctx context.Context, req Request, prep prepared, plan *addrplan.Plan, alloc *addrplan.Allocator) (_ *record, err error) {
	pod := podOf(req)
	var undo []func(context.Context) error
	defer func() {
		if err == nil {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), revertTimeout)
		defer cancel()
		for i := len(undo) - 1; i >= 0; i-- {
			if uerr := undo[i](rctx); uerr != nil {
				m.log.Error("pods: reverting a failed ADD", "pod", pod.String(), "err", uerr)
			}
		}
		m.log.Warn("pods: ADD failed, reverted", "pod", pod.String(), "container", req.ContainerID, "err", err)
	}()
	gw, err := m.ensureGateway(ctx, plan)
	if err != nil {
		return nil, err
	}
	ip, err := alloc.Allocate(ctx, pod)
	if err != nil {
		return nil, withSubnet(err, alloc.Subnet())
	}
	undo = append(undo, func(c context.Context) error { return alloc.Release(c, pod) })
	m.step("allocated")
	r := &record{Namespace: req.Namespace, Pod: req.Pod, ContainerID: req.ContainerID, Netns: req.Netns,
		IfName: req.IfName, Kind: m.p.Kind, IP: ip}
	vmac := vppMAC(ip)
	r.VPPMAC = net.HardwareAddr(vmac[:]).String()
	if r.Kind == vpp.PodLinkAFPacket {
		if prep.hostIf == "" {
			return nil, fmt.Errorf("pod %s: no veth made for the af_packet interface: %w", pod, ErrInvalid)
		}
		r.HostIf, r.PodMAC = prep.hostIf, prep.podMAC
	} else {
		pm := tapPodMAC(ip)
		r.PodMAC = net.HardwareAddr(pm[:]).String()
		if _, err := os.Stat(req.Netns); err != nil {
			return nil, fmt.Errorf("pod %s: netns %s: %w", pod, req.Netns, ErrNetnsGone)
		}
	}
	l := r.link(m.p.VRF, gw, m.p.Tag(req.Namespace, req.Pod))
	pi, err := m.p.VPP.AddPodInterface(ctx, l)
	if err != nil {
		m.gwKnown = false // VPP may have restarted: look again
		return nil, fmt.Errorf("pod %s: %w", pod, err)
	}
	r.SwIfIndex, r.VPPName = pi.Index, pi.Name
	undo = append(undo, func(c context.Context) error { return m.p.VPP.DeletePodInterface(c, l, pi.Index) })
	m.step("vpp")
	if err := m.setRecord(r); err != nil {
		return nil, err
	}
	m.log.Info("pods: pod wired in VPP", "pod", pod.String(), "container", req.ContainerID, "ip", ip, "interface", pi.Name, "index", pi.Index)
	return r, nil
}

// told refreshes the interface cache and tells the service processor of
// the pod's interface (it looks it up by tag), in the same batch.
func (m *Manager) told(ctx context.Context, pod addrplan.PodID) {
	if m.p.Refresh != nil {
		if err := m.p.Refresh(ctx); err != nil {
			m.log.Warn("pods: re-reading VPP's interfaces", "err", err)
		}
	}
	if m.events != nil {
		m.events.FollowUp(podInterfaceEvent(pod))
	}
}

func (m *Manager) result(r *record, plan *addrplan.Plan) Result {
	return Result{IfName: r.IfName, MAC: r.PodMAC, Netns: r.Netns, IP: netip.PrefixFrom(r.IP, 32),
		Gateway: plan.PodGateway, Subnet: plan.PodSubnet, VPPInterface: r.VPPName}
}

// inPlace tells whether a recorded pod's VPP interface is there, up, with
// its tag (the cheap part of CHECK).
func (m *Manager) inPlace(ctx context.Context, r *record) bool {
	ifs, err := m.p.VPP.ListInterfaces(ctx)
	if err != nil {
		return false
	}
	for _, i := range ifs {
		if i.Index == r.SwIfIndex && i.Name == r.VPPName {
			return i.AdminUp && i.Tag == m.p.Tag(r.Namespace, r.Pod)
		}
	}
	return false
}

// unwireVPP removes a recorded pod's VPP interface (its veth and address
// kept).
func (m *Manager) unwireVPP(ctx context.Context, r *record) error {
	return m.p.VPP.DeletePodInterface(ctx, r.link(m.p.VRF, m.gateway, ""), r.SwIfIndex)
}

// delLoop is DEL's loop part: the pod's VPP interface, its address and its
// record. o.rec is the record removed (its kernel side is the caller's).
// A pod unknown, or known with another sandbox (a stale DEL after the
// pod's sandbox was replaced), is no error: nothing is done but releasing
// an address no record holds.
func (m *Manager) delLoop(ctx context.Context, req Request) (o outcome) {
	pod := podOf(req)
	r := m.record(pod)
	if r != nil && !r.sameContainer(req) {
		m.log.Info("pods: DEL of a sandbox the pod no longer has: nothing to do", "pod", pod.String(), "container", req.ContainerID)
		o.foreign = true
		return o
	}
	if r != nil {
		if err := m.unwireVPP(ctx, r); err != nil {
			o.err = fmt.Errorf("pod %s: %w", pod, err)
			return o
		}
	}
	if alloc := m.p.Allocator(); alloc != nil {
		if err := alloc.Release(ctx, pod); err != nil {
			o.err = fmt.Errorf("pod %s: %w", pod, err)
			return o
		}
	} else if r != nil {
		o.err = fmt.Errorf("pod %s: IPAM not loaded, the address cannot be released: %w", pod, ErrNotReady)
		return o
	}
	if r == nil {
		return o
	}
	if err := m.dropRecord(pod); err != nil {
		o.err = err
		return o
	}
	o.rec = r
	m.log.Info("pods: pod unwired from VPP", "pod", pod.String(), "container", req.ContainerID, "ip", r.IP)
	m.told(ctx, pod)
	return o
}

// checkLoop is CHECK's loop part: the record and the VPP interface (up,
// tagged, with its /32 route). o.rec is the record, whose pod side the
// caller checks.
func (m *Manager) checkLoop(ctx context.Context, req Request) (o outcome) {
	pod := podOf(req)
	r := m.record(pod)
	switch {
	case r == nil:
		o.err = fmt.Errorf("pod %s is not wired: %w", pod, ErrCheckFailed)
	case r.ContainerID != req.ContainerID:
		o.err = fmt.Errorf("pod %s is wired for container %s, not %s: %w", pod, r.ContainerID, req.ContainerID, ErrCheckFailed)
	case !m.inPlace(ctx, r):
		o.err = fmt.Errorf("pod %s: VPP interface %s (index %d) missing, down or untagged: %w", pod, r.VPPName, r.SwIfIndex, ErrCheckFailed)
	}
	if o.err != nil {
		return o
	}
	ok, err := m.p.VPP.HasPodRoute(ctx, m.p.VRF, r.SwIfIndex, r.IP)
	switch {
	case err != nil:
		o.err = err
	case !ok:
		o.err = fmt.Errorf("pod %s: no /32 route to %s in VRF %d: %w", pod, r.IP, m.p.VRF, ErrCheckFailed)
	default:
		o.rec = r
	}
	return o
}

// run is a Call's loop part.
func (m *Manager) run(c *Call) outcome {
	var o outcome
	switch c.Op {
	case OpAdd:
		o = m.addLoop(c.ctx, c.Req, c.prep)
	case OpDel:
		o = m.delLoop(c.ctx, c.Req)
	case OpCheck:
		o = m.checkLoop(c.ctx, c.Req)
	default:
		o.err = fmt.Errorf("operation %q: %w", c.Op, ErrInvalid)
	}
	if o.err != nil && c.ctx.Err() != nil && !errors.Is(o.err, ErrNotReady) {
		o.err = fmt.Errorf("%w (deadline: %w)", o.err, c.ctx.Err())
	}
	return o
}
