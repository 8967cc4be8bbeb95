package pods

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/pods/cniapi"
	"contiv.dev/vpp/plugins/service"
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
	// waitStartup: the last reconcile left pods to re-create until VPP's
	// startup configuration has made its interfaces (Params.StartupInterfaces).
	waitStartup bool

	// ADDs queued for the next addBatch (Submit), any goroutine.
	qmu         sync.Mutex
	queued      []*Call
	batchPushed bool

	locks podLocks      // one operation a pod at a time
	slots chan struct{} // the kernel work's (KernelConcurrency)

	mu       sync.Mutex
	pods     map[addrplan.PodID]*record
	restored bool  // the records were reconciled with VPP once
	lastErr  error // of the last reconcile
	notBack  int   // pods the last reconcile did not bring back
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
	if p.KernelConcurrency <= 0 {
		p.KernelConcurrency = DefaultKernelConcurrency
	}
	m := &Manager{p: p, log: p.Logger, st: records{dir: p.StateDir}, slots: make(chan struct{}, p.KernelConcurrency)}
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

// HandlesEvent implements controller.Handler: the CNI's calls, and, while
// pods wait for VPP's startup configuration, VPP's interface changes.
func (m *Manager) HandlesEvent(ev controller.Event) bool {
	switch ev.(type) {
	case *Call, *addBatch:
		return true
	case *service.InterfaceEvent:
		return m.waitStartup
	}
	return false
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

// Wired tells whether pod has a record: its address is in use (on its
// interfaces in VPP and in the pod) whatever the cluster state says
// (IPAM's SetInUse).
func (m *Manager) Wired(pod addrplan.PodID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.pods[pod]
	return ok
}

// Stale returns a DEL for every pod wired for a sandbox whose interface
// is not among valid (CNI GC: the attachments the runtime still uses),
// sorted by pod.
func (m *Manager) Stale(valid []cniapi.Attachment) []Request {
	keep := make(map[cniapi.Attachment]bool, len(valid))
	for _, a := range valid {
		keep[a] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Request
	for _, r := range m.pods {
		if !keep[cniapi.Attachment{ContainerID: r.ContainerID, IfName: r.IfName}] {
			out = append(out, Request{ContainerID: r.ContainerID, Netns: r.Netns, IfName: r.IfName, Namespace: r.Namespace, Pod: r.Pod})
		}
	}
	slices.SortFunc(out, func(a, b Request) int { return strings.Compare(a.Namespace+"/"+a.Pod, b.Namespace+"/"+b.Pod) })
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
