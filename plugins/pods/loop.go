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

// addJob is one ADD of a batch under way (addsLoop).
type addJob struct {
	c    *Call
	o    *outcome
	rec  *record
	link vpp.PodLink
	undo []func(context.Context) error
}

// addsLoop is the loop part of ADDs taken in together (one, or every ADD
// queued since the last batch: Submit): for each, the same sandbox in
// place answers from its record; otherwise another sandbox's (or a
// broken) wiring is removed from VPP, and the pod gets its address, its
// VPP interface and its record. The VPP interfaces of them all are made
// in two pipelines (vpp.Pods.AddPodInterfaces), the interface cache is
// re-read once and the service processor told of each pod. A failure is
// the pod's own and undoes what was made for it. o.stale is another
// sandbox's record whose kernel side the caller removes.
func (m *Manager) addsLoop(ctx context.Context, calls []*Call) []outcome {
	outs := make([]outcome, len(calls))
	plan, alloc := m.p.Plan(), m.p.Allocator()
	var notYet error
	if !m.gwKnown {
		notYet = m.startupNotRun(ctx)
	}
	var jobs []*addJob
	for i, c := range calls {
		o := &outs[i]
		if plan == nil || alloc == nil {
			o.err = fmt.Errorf("no address plan or IPAM not loaded yet: %w", ErrNotReady)
			continue
		}
		if err := c.ctx.Err(); err != nil {
			o.err = fmt.Errorf("deadline passed before the request was taken in: %w: %w", ErrNotReady, err)
			continue
		}
		pod := podOf(c.Req)
		if old := m.record(pod); old != nil {
			same := old.sameSandbox(c.Req)
			if same && (m.p.Kind != vpp.PodLinkAFPacket || c.prep.reused) && m.inPlace(c.ctx, old) {
				o.rec, o.res = old, m.result(old, plan)
				continue
			}
			if !same {
				m.log.Info("pods: replacing the wiring of another sandbox", "pod", pod.String(), "old", old.ContainerID, "new", c.Req.ContainerID)
				o.stale = old
			}
			if err := m.unwireVPP(c.ctx, old); err != nil {
				o.err = fmt.Errorf("pod %s: removing the old wiring: %w", pod, err)
				continue
			}
		}
		if notYet != nil {
			o.err = notYet
			continue
		}
		j := &addJob{c: c, o: o}
		if err := m.prepareAdd(j, plan, alloc); err != nil {
			m.failAdd(j, err)
			continue
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return outs
	}
	wired := m.wireAll(ctx, jobs)
	if len(wired) > 0 {
		m.refresh(ctx)
	}
	for _, j := range wired {
		m.told(j.rec.pod())
	}
	return outs
}

// startupNotRun says, wrapping ErrNotReady, that VPP's startup
// configuration has not made the node's own interfaces yet (after a VPP
// restart): an ADD then makes nothing, not even the gateway loopback,
// which would take an index or a name the startup configuration's
// interfaces expect. nil when it has, or when VPP cannot be asked (the
// ADD's own calls fail then).
func (m *Manager) startupNotRun(ctx context.Context) error {
	if m.p.StartupInterfaces == nil {
		return nil
	}
	ifs, err := m.p.VPP.ListInterfaces(ctx)
	if err != nil {
		return nil
	}
	byName := make(map[string]vpp.PodInterfaceState, len(ifs))
	for _, i := range ifs {
		byName[i.Name] = i
	}
	if name := m.startupPending(byName); name != "" {
		return fmt.Errorf("VPP's startup configuration has not run yet (no interface %s): %w", name, ErrNotReady)
	}
	return nil
}

// prepareAdd makes sure of the gateway, allocates the pod's address and
// builds its record and VPP link.
func (m *Manager) prepareAdd(j *addJob, plan *addrplan.Plan, alloc *addrplan.Allocator) error {
	req, prep, ctx := j.c.Req, j.c.prep, j.c.ctx
	pod := podOf(req)
	gw, err := m.ensureGateway(ctx, plan)
	if err != nil {
		return err
	}
	ip, err := alloc.Allocate(ctx, pod)
	if err != nil {
		return withSubnet(err, alloc.Subnet())
	}
	j.undo = append(j.undo, func(c context.Context) error { return alloc.Release(c, pod) })
	m.step("allocated")
	r := &record{Namespace: req.Namespace, Pod: req.Pod, ContainerID: req.ContainerID, Netns: req.Netns,
		IfName: req.IfName, Kind: m.p.Kind, IP: ip}
	vmac := vppMAC(ip)
	r.VPPMAC = net.HardwareAddr(vmac[:]).String()
	if r.Kind == vpp.PodLinkAFPacket {
		if prep.hostIf == "" {
			return fmt.Errorf("pod %s: no veth made for the af_packet interface: %w", pod, ErrInvalid)
		}
		r.HostIf, r.PodMAC = prep.hostIf, prep.podMAC
	} else {
		pm := tapPodMAC(ip)
		r.PodMAC = net.HardwareAddr(pm[:]).String()
		if _, err := os.Stat(req.Netns); err != nil {
			return fmt.Errorf("pod %s: netns %s: %w", pod, req.Netns, ErrNetnsGone)
		}
	}
	j.rec, j.link = r, r.link(m.p.VRF, gw, m.p.Tag(req.Namespace, req.Pod))
	return nil
}

// wireAll makes the jobs' VPP interfaces together, within the latest of
// their deadlines, and writes each pod's record; it returns the jobs
// done (the others failed, undone).
func (m *Manager) wireAll(ctx context.Context, jobs []*addJob) []*addJob {
	deadline, _ := jobs[0].c.ctx.Deadline()
	links := make([]vpp.PodLink, len(jobs))
	for i, j := range jobs {
		links[i] = j.link
		if d, ok := j.c.ctx.Deadline(); !ok || d.After(deadline) {
			deadline = d
		}
	}
	vctx, cancel := ctx, func() {}
	if !deadline.IsZero() {
		vctx, cancel = context.WithDeadline(ctx, deadline)
	}
	pis, errs := m.p.VPP.AddPodInterfaces(vctx, links)
	cancel()
	var done []*addJob
	for i, j := range jobs {
		pod := j.rec.pod()
		if errs[i] != nil {
			m.gwKnown = false // VPP may have restarted: look again
			m.failAdd(j, fmt.Errorf("pod %s: %w", pod, errs[i]))
			continue
		}
		j.rec.SwIfIndex, j.rec.VPPName = pis[i].Index, pis[i].Name
		l, idx := j.link, pis[i].Index
		j.undo = append(j.undo, func(c context.Context) error { return m.p.VPP.DeletePodInterface(c, l, idx) })
		m.step("vpp")
		if err := j.c.ctx.Err(); err != nil {
			m.failAdd(j, fmt.Errorf("pod %s: %w", pod, err))
			continue
		}
		if err := m.setRecord(j.rec); err != nil {
			m.failAdd(j, err)
			continue
		}
		m.log.Info("pods: pod wired in VPP", "pod", pod.String(), "container", j.c.Req.ContainerID, "ip", j.rec.IP, "interface", pis[i].Name, "index", pis[i].Index)
		j.o.rec = j.rec
		j.o.res = m.result(j.rec, m.p.Plan())
		done = append(done, j)
	}
	return done
}

// failAdd undoes what was made for a job, in reverse, and fails it.
func (m *Manager) failAdd(j *addJob, err error) {
	pod := podOf(j.c.Req)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(j.c.ctx), revertTimeout)
	defer cancel()
	for i := len(j.undo) - 1; i >= 0; i-- {
		if uerr := j.undo[i](rctx); uerr != nil {
			m.log.Error("pods: reverting a failed ADD", "pod", pod.String(), "err", uerr)
		}
	}
	m.log.Warn("pods: ADD failed, reverted", "pod", pod.String(), "container", j.c.Req.ContainerID, "err", err)
	j.o.err = err
}

// told tells the service processor of pod's interface (it looks it up
// by tag), in the same batch; the interface cache is re-read first
// (refresh).
func (m *Manager) told(pod addrplan.PodID) {
	if m.events != nil {
		m.events.FollowUp(podInterfaceEvent(pod))
	}
}

// refresh re-reads the agent's interface cache, before the service
// processor looks the pods up.
func (m *Manager) refresh(ctx context.Context) {
	if m.p.Refresh != nil {
		if err := m.p.Refresh(ctx); err != nil {
			m.log.Warn("pods: re-reading VPP's interfaces", "err", err)
		}
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
	m.refresh(ctx)
	m.told(pod)
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
		o = m.addsLoop(c.ctx, []*Call{c})[0]
	case OpDel:
		o = m.delLoop(c.ctx, c.Req)
	case OpCheck:
		o = m.checkLoop(c.ctx, c.Req)
	default:
		o.err = fmt.Errorf("operation %q: %w", c.Op, ErrInvalid)
	}
	return finished(c, o)
}

// finished is o, its error saying when c's deadline passed.
func finished(c *Call, o outcome) outcome {
	if o.err != nil && c.ctx.Err() != nil && !errors.Is(o.err, ErrNotReady) {
		o.err = fmt.Errorf("%w (deadline: %w)", o.err, c.ctx.Err())
	}
	return o
}
