package pods

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/vpp"
)

// revertTimeout bounds the undoing of a failed ADD (its own context: the
// request's may be what ended).
const revertTimeout = 10 * time.Second

// Manager wires pods: CNI ADD, DEL and CHECK, run on the controller's
// loop as blocking events (Call), and the pods' re-creation after a
// restart (Resync). It is a controller handler; its getters are safe
// from any goroutine.
type Manager struct {
	p   Params
	log *slog.Logger
	st  records

	// Owned by the loop goroutine (Update, Resync) once running.
	gateway   uint32 // the gateway loopback's index, valid when gwKnown
	gwKnown   bool
	events    controller.FollowUpper
	afterStep func(step string) // tests: called after each step of ADD
	replies   []func()          // outcomes of the batch's calls (Applied)

	mu       sync.Mutex
	pods     map[addrplan.PodID]*record
	restored bool  // the records were reconciled with VPP once
	lastErr  error // of the last reconcile
}

var (
	_ controller.Handler       = (*Manager)(nil)
	_ controller.ReadyHandler  = (*Manager)(nil)
	_ controller.ApplyObserver = (*Manager)(nil)
)

// New loads the records of Params.StateDir (made if missing) and returns
// the manager.
func New(p Params) (*Manager, error) {
	if p.VPP == nil || p.Allocator == nil || p.Plan == nil || p.StateDir == "" {
		return nil, errors.New("pods: VPP, Allocator, Plan and StateDir are required")
	}
	if p.Kind != vpp.PodLinkTap && p.Kind != vpp.PodLinkAFPacket {
		return nil, fmt.Errorf("pods: interface kind %q: want tap or af_packet", p.Kind)
	}
	if p.Tag == nil {
		p.Tag = func(ns, pod string) string { return ns + "/" + pod }
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(p.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("pods: state directory: %w", err)
	}
	m := &Manager{p: p, log: p.Logger, st: records{dir: p.StateDir}}
	var errs []error
	m.pods, errs = m.st.load()
	for _, err := range errs {
		m.log.Warn("pods: record skipped", "err", err)
	}
	m.log.Info("pods: records loaded", "pods", len(m.pods), "kind", p.Kind, "dir", p.StateDir)
	return m, nil
}

// SetEvents gives the manager the controller, to tell the service
// processor of a pod's interface in the batch that made it.
func (m *Manager) SetEvents(f controller.FollowUpper) { m.events = f }

// Name implements controller.Handler.
func (m *Manager) Name() string { return "pods" }

// HandlesEvent implements controller.Handler: the CNI's calls.
func (m *Manager) HandlesEvent(ev controller.Event) bool {
	_, ok := ev.(*Call)
	return ok
}

// Ready implements controller.ReadyHandler: the pods of the records are
// back in VPP (reconciled once).
func (m *Manager) Ready() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.restored
}

// Pods returns a copy of the wired pods' addresses.
func (m *Manager) Pods() map[addrplan.PodID]netip.Addr {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[addrplan.PodID]netip.Addr, len(m.pods))
	for k, r := range m.pods {
		out[k] = r.IP
	}
	return out
}

// Kind is the pod interface kind in use.
func (m *Manager) Kind() vpp.PodLinkKind { return m.p.Kind }

func (m *Manager) record(pod addrplan.PodID) *record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pods[pod]
}

func (m *Manager) setRecord(r *record) error {
	if err := m.st.put(r); err != nil {
		return err
	}
	m.mu.Lock()
	m.pods[r.pod()] = r
	m.mu.Unlock()
	return nil
}

func (m *Manager) dropRecord(pod addrplan.PodID) error {
	if err := m.st.delete(pod); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.pods, pod)
	m.mu.Unlock()
	return nil
}

// hostIfName is the agent's end of a pod's veth pair: "vpp" and 12 hex
// digits of the container ID's hash (15 bytes, Linux's limit).
func hostIfName(containerID string) string {
	h := sha256.Sum256([]byte(containerID))
	return "vpp" + hex.EncodeToString(h[:6])
}

// vppMAC is the VPP end's MAC: locally administered, from the pod's IP.
func vppMAC(ip netip.Addr) [6]byte {
	m := [6]byte{0x02, 0xfe}
	binary.BigEndian.PutUint32(m[2:], binary.BigEndian.Uint32(ip.AsSlice()))
	return m
}

// tapPodMAC is a tap's pod end's MAC (VPP makes that end).
func tapPodMAC(ip netip.Addr) [6]byte {
	m := vppMAC(ip)
	m[1] = 0xfd
	return m
}

func (m *Manager) step(name string) {
	if m.afterStep != nil {
		m.afterStep(name)
	}
}

// ensureGateway makes sure VPP has the gateway loopback.
func (m *Manager) ensureGateway(ctx context.Context, plan *addrplan.Plan) (uint32, error) {
	if m.gwKnown {
		return m.gateway, nil
	}
	idx, err := m.p.VPP.EnsureGateway(ctx, GatewayTag, m.p.VRF, netip.PrefixFrom(plan.PodGateway, 32))
	if err != nil {
		return 0, fmt.Errorf("pod gateway %s: %w", plan.PodGateway, err)
	}
	m.gateway, m.gwKnown = idx, true
	return idx, nil
}

// Add wires a pod (CNI ADD). It is idempotent per pod and container: the
// same call again returns the same result. Another container of the same
// pod replaces the first one's wiring and keeps the address. On failure
// everything it made is undone, the address released.
func (m *Manager) Add(ctx context.Context, req Request) (Result, error) {
	if err := validate(req, true); err != nil {
		return Result{}, err
	}
	plan, alloc := m.p.Plan(), m.p.Allocator()
	if plan == nil || alloc == nil {
		return Result{}, fmt.Errorf("no address plan or IPAM not loaded yet: %w", ErrNotReady)
	}
	pod := podOf(req)
	if old := m.record(pod); old != nil {
		if old.ContainerID == req.ContainerID && old.Netns == req.Netns && old.IfName == req.IfName && m.inPlace(ctx, old) {
			return m.result(old, plan), nil
		}
		m.log.Info("pods: replacing the wiring of another sandbox", "pod", pod.String(), "old", old.ContainerID, "new", req.ContainerID)
		if err := m.unwire(ctx, old); err != nil {
			return Result{}, fmt.Errorf("pod %s: removing the old sandbox's wiring: %w", pod, err)
		}
	}
	r, err := m.add(ctx, req, plan, alloc)
	if err != nil {
		return Result{}, err
	}
	m.told(ctx, pod)
	return m.result(r, plan), nil
}

func (m *Manager) add(ctx context.Context, req Request, plan *addrplan.Plan, alloc *addrplan.Allocator) (_ *record, err error) {
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
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("deadline passed before the request was taken in: %w: %w", ErrNotReady, err)
	}
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
		r.HostIf = hostIfName(req.ContainerID)
		mac, err := makeVeth(req.Netns, req.IfName, r.HostIf)
		if err != nil {
			return nil, fmt.Errorf("pod %s: %w", pod, err)
		}
		r.PodMAC = mac.String()
		undo = append(undo, func(context.Context) error { return deleteHostLink(r.HostIf) })
		m.step("veth")
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
	if r.Kind == vpp.PodLinkTap {
		undo = append(undo, func(context.Context) error { return deletePodLink(req.Netns, req.IfName) })
	}
	m.step("vpp")
	err = configurePod(req.Netns, podConfig{ifName: req.IfName, ip: ip, gateway: plan.PodGateway, gwMAC: net.HardwareAddr(vmac[:])})
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", pod, err)
	}
	m.step("pod")
	if err := m.setRecord(r); err != nil {
		return nil, err
	}
	m.log.Info("pods: pod wired", "pod", pod.String(), "container", req.ContainerID, "ip", ip, "interface", pi.Name, "index", pi.Index)
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

// unwire removes a recorded pod's interface and veth (its address kept).
func (m *Manager) unwire(ctx context.Context, r *record) error {
	var errs []error
	if err := m.p.VPP.DeletePodInterface(ctx, r.link(m.p.VRF, m.gateway, ""), r.SwIfIndex); err != nil {
		errs = append(errs, err)
	}
	if r.Kind == vpp.PodLinkAFPacket {
		errs = append(errs, deleteHostLink(r.HostIf))
	} else if r.Netns != "" {
		errs = append(errs, deletePodLink(r.Netns, r.IfName))
	}
	return errors.Join(errs...)
}

// Del unwires a pod (CNI DEL): its VPP interface, its veth, its address
// and its record. A pod unknown, or known with another container (a
// stale DEL after the pod's sandbox was replaced), is no error: nothing
// is done but releasing an address no record holds. A missing netns or
// interface is no error either.
func (m *Manager) Del(ctx context.Context, req Request) error {
	if err := validate(req, false); err != nil {
		return err
	}
	pod := podOf(req)
	r := m.record(pod)
	if r != nil && r.ContainerID != req.ContainerID {
		m.log.Info("pods: DEL of a sandbox the pod no longer has: nothing to do", "pod", pod.String(), "container", req.ContainerID)
		return nil
	}
	if r != nil {
		if err := m.unwire(ctx, r); err != nil {
			return fmt.Errorf("pod %s: %w", pod, err)
		}
	}
	if alloc := m.p.Allocator(); alloc != nil {
		if err := alloc.Release(ctx, pod); err != nil {
			return fmt.Errorf("pod %s: %w", pod, err)
		}
	} else if r != nil {
		return fmt.Errorf("pod %s: IPAM not loaded, the address cannot be released: %w", pod, ErrNotReady)
	}
	if r == nil {
		return nil
	}
	if err := m.dropRecord(pod); err != nil {
		return err
	}
	m.log.Info("pods: pod unwired", "pod", pod.String(), "container", req.ContainerID, "ip", r.IP)
	m.told(ctx, pod)
	return nil
}

// Check verifies a wired pod (CNI CHECK): its record, its VPP interface
// (up, tagged, with its /32 route) and its eth0 (address, gateway link
// route, default route).
func (m *Manager) Check(ctx context.Context, req Request) error {
	if err := validate(req, true); err != nil {
		return err
	}
	pod := podOf(req)
	r := m.record(pod)
	switch {
	case r == nil:
		return fmt.Errorf("pod %s is not wired: %w", pod, ErrCheckFailed)
	case r.ContainerID != req.ContainerID:
		return fmt.Errorf("pod %s is wired for container %s, not %s: %w", pod, r.ContainerID, req.ContainerID, ErrCheckFailed)
	case !m.inPlace(ctx, r):
		return fmt.Errorf("pod %s: VPP interface %s (index %d) missing, down or untagged: %w", pod, r.VPPName, r.SwIfIndex, ErrCheckFailed)
	}
	ok, err := m.p.VPP.HasPodRoute(ctx, m.p.VRF, r.SwIfIndex, r.IP)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("pod %s: no /32 route to %s in VRF %d: %w", pod, r.IP, m.p.VRF, ErrCheckFailed)
	}
	plan := m.p.Plan()
	if plan == nil {
		return fmt.Errorf("no address plan: %w", ErrNotReady)
	}
	if err := checkPod(req.Netns, podConfig{ifName: r.IfName, ip: r.IP, gateway: plan.PodGateway}); err != nil {
		return fmt.Errorf("pod %s: %w: %w", pod, ErrCheckFailed, err)
	}
	return nil
}
