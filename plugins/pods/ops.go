package pods

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/plugins/vpp"
)

// The caller's side of each operation: the pod-side kernel work (the veth
// pair, the pod's eth0), off the controller's loop, around the loop's part
// (loop.go). The kernel work of different pods runs concurrently, at most
// Params.KernelConcurrency at once; the operations of one pod run one at a
// time, in the order they came.

// DefaultKernelConcurrency is Params.KernelConcurrency's default: the
// kernel serialises most of it (the rtnl lock) anyway; more only pins
// more threads in netns.
const DefaultKernelConcurrency = 16

// runLoop runs a Call's loop part: pushed onto the controller (Submit) or
// at once in the caller's goroutine (Add, Del, Check).
type runLoop func(ctx context.Context, c *Call) outcome

// Add wires a pod (CNI ADD) without a controller: the loop's part runs in
// the caller's goroutine (tests, tools). The agent uses Submit.
func (m *Manager) Add(ctx context.Context, req Request) (Result, error) {
	return m.do(ctx, OpAdd, req, m.now)
}

// Del unwires a pod (CNI DEL) without a controller (see Add).
func (m *Manager) Del(ctx context.Context, req Request) error {
	_, err := m.do(ctx, OpDel, req, m.now)
	return err
}

// Check verifies a wired pod (CNI CHECK) without a controller (see Add).
func (m *Manager) Check(ctx context.Context, req Request) error {
	_, err := m.do(ctx, OpCheck, req, m.now)
	return err
}

func (m *Manager) now(ctx context.Context, c *Call) outcome {
	c.ctx = ctx
	return m.run(c)
}

// do runs one operation: validated, one at a time per pod, the kernel's
// part around the loop's.
func (m *Manager) do(ctx context.Context, op Op, req Request, loop runLoop) (Result, error) {
	switch op {
	case OpAdd, OpCheck:
		if err := validate(req, true); err != nil {
			return Result{}, err
		}
		if op == OpAdd && m.p.Kind == vpp.PodLinkTap && len(req.Netns) > vpp.TapNetnsMax {
			// VPP would read it cut (tap_create_v3's host_namespace is
			// a string[64]) and fail obscurely, or open another netns.
			return Result{}, fmt.Errorf("netns (CNI_NETNS): %q is %d bytes, VPP's tap_create_v3 takes at most %d "+
				"(shorten the runtime's netns path or set cni.podInterface to af_packet): %w", req.Netns, len(req.Netns), vpp.TapNetnsMax, ErrInvalid)
		}
	case OpDel:
		if err := validate(req, false); err != nil {
			return Result{}, err
		}
	default:
		return Result{}, fmt.Errorf("operation %q: %w", op, ErrInvalid)
	}
	unlock, err := m.locks.lock(ctx, podOf(req))
	if err != nil {
		return Result{}, fmt.Errorf("%s of pod %s: another operation of the pod still runs: %w: %w", op, podOf(req), ErrNotReady, err)
	}
	defer unlock()
	switch op {
	case OpAdd:
		return m.addOp(ctx, req, loop)
	case OpDel:
		return Result{}, m.delOp(ctx, req, loop)
	default:
		return Result{}, m.checkOp(ctx, req, loop)
	}
}

// kernel runs f holding one of the kernel work's slots.
func (m *Manager) kernel(ctx context.Context, f func() error) error {
	select {
	case m.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the kernel work of other pods: %w: %w", ErrNotReady, ctx.Err())
	}
	defer func() { <-m.slots }()
	return f()
}

// addOp: the veth (af_packet), then the loop's part, then eth0 in the pod.
// A failure undoes what was made: the loop's part through a DEL on the
// loop, the veth here.
func (m *Manager) addOp(ctx context.Context, req Request, loop runLoop) (Result, error) {
	pod := podOf(req)
	var prep prepared
	if m.p.Kind == vpp.PodLinkAFPacket {
		host := hostIfName(req.ContainerID)
		if old := m.record(pod); old != nil && old.sameSandbox(req) && old.HostIf == host && hostLinkExists(host) {
			prep = prepared{hostIf: host, podMAC: old.PodMAC, reused: true}
		} else {
			err := m.kernel(ctx, func() error {
				// A veth of this sandbox no record holds is a leftover
				// of an ADD the agent did not finish: made again.
				if err := deleteHostLink(host); err != nil {
					return err
				}
				mac, err := makeVeth(req.Netns, req.IfName, host)
				prep = prepared{hostIf: host, podMAC: mac.String()}
				return err
			})
			if err != nil {
				_ = deleteHostLink(host)
				return Result{}, fmt.Errorf("pod %s: %w", pod, err)
			}
			m.step("veth")
		}
	}
	o := loop(ctx, &Call{Op: OpAdd, Req: req, prep: prep})
	if st := o.stale; st != nil && !(st.HostIf != "" && st.HostIf == prep.hostIf) && !(st.Netns == req.Netns && st.IfName == req.IfName) {
		if err := m.kernel(context.WithoutCancel(ctx), func() error { return m.unwireKernel(o.stale) }); err != nil {
			m.log.Warn("pods: removing the old sandbox's veth", "pod", pod.String(), "container", o.stale.ContainerID, "err", err)
		}
	}
	if o.err != nil {
		if prep.hostIf != "" && !prep.reused {
			if err := deleteHostLink(prep.hostIf); err != nil {
				m.log.Error("pods: reverting a failed ADD", "pod", pod.String(), "err", err)
			}
		}
		return Result{}, o.err
	}
	r := o.rec
	err := m.kernel(ctx, func() error {
		vmac, _ := net.ParseMAC(r.VPPMAC)
		return configurePod(req.Netns, podConfig{ifName: req.IfName, ip: r.IP, gateway: o.res.Gateway, gwMAC: vmac})
	})
	if err == nil {
		m.step("pod")
		return o.res, nil
	}
	err = fmt.Errorf("pod %s: %w", pod, err)
	m.revert(ctx, req, loop, err)
	return Result{}, err
}

// revert undoes an ADD whose pod side failed: a DEL of the sandbox (loop
// and kernel), within its own deadline.
func (m *Manager) revert(ctx context.Context, req Request, loop runLoop, cause error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), revertTimeout)
	defer cancel()
	if err := m.delOp(rctx, req, loop); err != nil {
		m.log.Error("pods: reverting a failed ADD", "pod", podOf(req).String(), "err", err)
	}
	m.log.Warn("pods: ADD failed, reverted", "pod", podOf(req).String(), "container", req.ContainerID, "err", cause)
}

// delOp: the loop's part, then the veth (or the tap's pod end). With no
// record, an af_packet sandbox's own veth is removed all the same (an ADD
// that failed past its deadline may have left it).
func (m *Manager) delOp(ctx context.Context, req Request, loop runLoop) error {
	o := loop(ctx, &Call{Op: OpDel, Req: req})
	if o.err != nil {
		return o.err
	}
	err := m.kernel(context.WithoutCancel(ctx), func() error {
		switch {
		case o.rec != nil:
			return m.unwireKernel(o.rec)
		case m.p.Kind == vpp.PodLinkAFPacket:
			return deleteHostLink(hostIfName(req.ContainerID))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pod %s: %w", podOf(req), err)
	}
	return nil
}

// unwireKernel removes a recorded pod's kernel side: its veth (af_packet:
// the pod's end goes with it) or the tap's pod end.
func (m *Manager) unwireKernel(r *record) error {
	if r.Kind == vpp.PodLinkAFPacket {
		return deleteHostLink(r.HostIf)
	}
	if r.Netns != "" {
		return deletePodLink(r.Netns, r.IfName)
	}
	return nil
}

// checkOp: the loop's part, then eth0 (address, gateway route, default
// route).
func (m *Manager) checkOp(ctx context.Context, req Request, loop runLoop) error {
	o := loop(ctx, &Call{Op: OpCheck, Req: req})
	if o.err != nil {
		return o.err
	}
	plan := m.p.Plan()
	if plan == nil {
		return fmt.Errorf("no address plan: %w", ErrNotReady)
	}
	err := m.kernel(ctx, func() error {
		return checkPod(req.Netns, podConfig{ifName: o.rec.IfName, ip: o.rec.IP, gateway: plan.PodGateway})
	})
	if err != nil {
		if errors.Is(err, ErrNotReady) {
			return err
		}
		return fmt.Errorf("pod %s: %w: %w", podOf(req), ErrCheckFailed, err)
	}
	return nil
}

// podLocks runs the operations of one pod one at a time.
type podLocks struct {
	mu sync.Mutex
	m  map[addrplan.PodID]*podLock
}

type podLock struct {
	ch    chan struct{}
	users int
}

// lock takes pod's lock, or fails when ctx ends first; unlock gives it
// back.
func (l *podLocks) lock(ctx context.Context, pod addrplan.PodID) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[addrplan.PodID]*podLock{}
	}
	pl := l.m[pod]
	if pl == nil {
		pl = &podLock{ch: make(chan struct{}, 1)}
		l.m[pod] = pl
	}
	pl.users++
	l.mu.Unlock()
	leave := func() {
		l.mu.Lock()
		if pl.users--; pl.users == 0 {
			delete(l.m, pod)
		}
		l.mu.Unlock()
	}
	select {
	case pl.ch <- struct{}{}:
		return func() { <-pl.ch; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}
