package agent

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"

	"contiv.dev/vpp/plugins/controller"
	ipamplugin "contiv.dev/vpp/plugins/ipam"
	nsplugin "contiv.dev/vpp/plugins/nodesync"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// NAT44View is the /v1/nat44 view: the desired and the applied NAT44
// state, one line per object (nat44.State.Lines), the objects VPP refused,
// the frontends claimed by more than one service and those served by a
// subset of their endpoints (VPP 25.02's u8 probability sum).
type NAT44View struct {
	Desired   []string             `json:"desired"`
	Applied   []string             `json:"applied"`
	Failures  []nat44.Failure      `json:"failures"`
	Conflicts []nat44.Conflict     `json:"conflicts"`
	Subsets   []nat44.SubsetStatus `json:"subsets"`
}

// NAT44MappingsView is the /v1/nat44/mappings view: the desired and the
// applied NAT44 state as structured values, for tools (contivctl trace)
// rather than people.
type NAT44MappingsView struct {
	Desired *NAT44Objects `json:"desired"`
	Applied *NAT44Objects `json:"applied"`
}

// NAT44Objects is a NAT44 state as sorted lists, which JSON can carry
// (nat44.State keys its maps by structs).
type NAT44Objects struct {
	Global     nat44.Global              `json:"global"`
	Pool       []nat44.PoolAddress       `json:"pool"`
	Interfaces map[string]nat44.Features `json:"interfaces"`
	// Identities are sorted by address, port, protocol and VRF; Mappings
	// by address, port and protocol.
	Identities []*nat44.Identity `json:"identities"`
	Mappings   []*nat44.Mapping  `json:"mappings"`
	// Routes are the agent's routes (drop, reject, lookup), sorted by VRF
	// and prefix.
	Routes []nat44.Route `json:"routes,omitempty"`
}

// NewNAT44Objects lists the objects of s. The result shares s's mappings
// and identities.
func NewNAT44Objects(s *nat44.State) *NAT44Objects {
	o := &NAT44Objects{
		Global:     s.Global,
		Pool:       slices.Clone(s.Pool),
		Interfaces: maps.Clone(s.Interfaces),
		Identities: slices.Collect(maps.Values(s.Identities)),
		Mappings:   slices.Collect(maps.Values(s.Mappings)),
	}
	sortPool(o.Pool)
	slices.SortFunc(o.Identities, func(a, b *nat44.Identity) int {
		return cmp.Or(a.IP.Compare(b.IP), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Proto, b.Proto), cmp.Compare(a.VRF, b.VRF))
	})
	slices.SortFunc(o.Mappings, func(a, b *nat44.Mapping) int { return compareMappingKeys(a.MappingKey, b.MappingKey) })
	for _, r := range s.Routes {
		o.Routes = append(o.Routes, *r)
	}
	slices.SortFunc(o.Routes, func(a, b nat44.Route) int {
		return cmp.Or(cmp.Compare(a.VRF, b.VRF), a.Prefix.Addr().Compare(b.Prefix.Addr()), cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits()))
	})
	return o
}

// sortPool sorts pool addresses by IP, plain before twice-NAT, then VRF.
func sortPool(p []nat44.PoolAddress) {
	slices.SortFunc(p, func(a, b nat44.PoolAddress) int {
		return cmp.Or(a.IP.Compare(b.IP), cmpBool(a.TwiceNAT, b.TwiceNAT), cmp.Compare(a.VRF, b.VRF))
	})
}

func compareMappingKeys(a, b nat44.MappingKey) int {
	return cmp.Or(a.IP.Compare(b.IP), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Proto, b.Proto))
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// State turns the lists back into a state; nil entries are left out.
func (o *NAT44Objects) State() *nat44.State {
	s := &nat44.State{
		Global:     o.Global,
		Pool:       slices.Clone(o.Pool),
		Interfaces: maps.Clone(o.Interfaces),
		Mappings:   make(map[nat44.MappingKey]*nat44.Mapping, len(o.Mappings)),
		Identities: make(map[nat44.IdentityKey]*nat44.Identity, len(o.Identities)),
	}
	if s.Interfaces == nil {
		s.Interfaces = map[string]nat44.Features{}
	}
	for _, m := range o.Mappings {
		if m != nil {
			s.Mappings[m.MappingKey] = m
		}
	}
	for _, id := range o.Identities {
		if id != nil {
			s.Identities[id.IdentityKey] = id
		}
	}
	if len(o.Routes) > 0 {
		s.Routes = make(map[nat44.RouteKey]*nat44.Route, len(o.Routes))
		for _, r := range o.Routes {
			s.Routes[r.RouteKey] = &r
		}
	}
	return s
}

// IPAMView is the /v1/ipam view: this node's address plan and the pod IPs
// allocated, by "namespace/pod" (null before IPAM has started).
type IPAMView struct {
	NodeID           uint32                `json:"nodeID"`
	PodSubnet        netip.Prefix          `json:"podSubnet"`
	PodSubnetAll     netip.Prefix          `json:"podSubnetAll"`
	PodGateway       netip.Addr            `json:"podGateway"`
	NATLoopback      netip.Addr            `json:"natLoopback"`
	HostInterconnect netip.Prefix          `json:"hostInterconnect"`
	NodeIP           netip.Prefix          `json:"nodeIP"`
	VXLANIP          netip.Prefix          `json:"vxlanIP"`
	ServiceCIDR      netip.Prefix          `json:"serviceCIDR"`
	Pods             map[string]netip.Addr `json:"pods"`
}

// StatusView is the /v1/status view: this node, readiness, the
// controller, the VPP connection and the NAT44 apply step's counters.
// Note says loudly when the VPP is simulated.
type StatusView struct {
	Node       string            `json:"node"`
	NodeID     uint32            `json:"nodeID"`
	Ready      bool              `json:"ready"`
	NotReady   []string          `json:"notReady,omitempty"`
	Controller controller.Status `json:"controller"`
	VPP        vpp.Status        `json:"vpp"`
	NAT44      nat44.Stats       `json:"nat44"`
	// CNAT is the cnat renderer's counters (renderer: cnat).
	CNAT *cnat.Stats `json:"cnat,omitempty"`
	// Pending lists the NAT44 interface features waiting for VPP to
	// create their interface.
	Pending []nat44.PendingInterface `json:"pending,omitempty"`
	// NodeSync and IPAM say what the agent still owes etcd.
	NodeSync nsplugin.WriteStatus   `json:"nodesync"`
	IPAM     ipamplugin.WriteStatus `json:"ipam"`
	// ProxyHealth is what the proxy health endpoint answers (/livez:
	// Healthy; /healthz: Healthy and NodeEligible, false while the node is
	// to be deleted by the cluster autoscaler).
	ProxyHealth *ProxyHealthStatus `json:"proxyHealth,omitempty"`
	Note        string             `json:"note"`
}

// TraceState answers, from a NAT44 state alone, what NAT44-ED does with a
// packet, with the rules of the simulated VPP's translation oracle
// (sim.VPP.Translate, which tests hold it to): a mapping of the
// destination address, port and protocol (or of the address alone)
// translates it to its locals, with their probabilities; twice-NAT
// rewrites the source to the first twice-NAT pool address, self-twice-NAT
// only towards a backend that is the source itself. Otherwise an identity
// mapping or forwarding lets it pass untranslated, and it is dropped with
// forwarding off. An empty p.Ingress is taken for an interface with the
// outside feature. contivctl trace uses it on an agent's applied state.
func TraceState(s *nat44.State, p sim.Packet) sim.Result {
	if p.Ingress != "" && s.Interfaces[p.Ingress]&(nat44.FeatureOut|nat44.FeatureOutput) == 0 {
		return sim.Result{Reason: "ingress interface " + p.Ingress + " has neither the NAT44 outside nor the output feature"}
	}
	if !p.Dst.Is4() || !p.Src.Is4() {
		return sim.Result{Reason: "not IPv4"}
	}
	m := s.Mappings[nat44.MappingKey{IP: p.Dst, Port: p.DstPort, Proto: p.Proto}]
	if m == nil {
		m = s.Mappings[nat44.MappingKey{IP: p.Dst}]
	}
	if m != nil {
		return traceMapping(s, m, p)
	}
	for k := range s.Identities {
		if k.IP == p.Dst && (k.Port == 0 || k.Port == p.DstPort && k.Proto == p.Proto) {
			return sim.Result{Reason: "identity mapping"}
		}
	}
	if s.Global.Forwarding {
		return sim.Result{Reason: "no mapping; forwarding passes it"}
	}
	return sim.Result{Verdict: sim.Dropped, Reason: "no mapping and forwarding off (no translation)"}
}

func traceMapping(s *nat44.State, m *nat44.Mapping, p sim.Packet) sim.Result {
	lb := len(m.Locals) > 1
	res := sim.Result{Verdict: sim.Translated, Reason: "static mapping", Tag: m.Tag}
	if lb {
		res.Reason = "load-balanced mapping"
		res.Affinity = m.Affinity
	}
	weight := func(l nat44.Local) float64 {
		if lb {
			return float64(l.Probability)
		}
		return 1
	}
	total := 0.0
	for _, l := range m.Locals {
		total += weight(l)
	}
	if total == 0 {
		return sim.Result{Verdict: sim.Dropped, Reason: "load-balanced mapping whose locals all have probability 0: VPP 25.02 crashes (SIGFPE) on the first packet", Tag: m.Tag, Affinity: res.Affinity}
	}
	var pool netip.Addr
	sorted := slices.Clone(s.Pool)
	sortPool(sorted)
	for _, a := range sorted {
		if a.TwiceNAT {
			pool = a.IP
			break
		}
	}
	locals := slices.Clone(m.Locals)
	slices.SortFunc(locals, func(a, b nat44.Local) int {
		return cmp.Or(a.IP.Compare(b.IP), cmp.Compare(a.Port, b.Port), cmp.Compare(a.VRF, b.VRF))
	})
	for _, l := range locals {
		if weight(l) == 0 {
			continue // never picked: the placeholder local of a one-backend mapping
		}
		src := p.Src
		if m.TwiceNAT == nat44.TwiceNATOn || m.TwiceNAT == nat44.TwiceNATSelf && l.IP == p.Src {
			if !pool.IsValid() {
				return sim.Result{Verdict: sim.Dropped, Reason: "twice-NAT needs a twice-NAT pool address and there is none", Tag: m.Tag}
			}
			src = pool
		}
		port := l.Port
		if m.Port == 0 {
			port = p.DstPort // address-only mappings keep the port
		}
		res.Backends = append(res.Backends, sim.Reach{IP: l.IP, Port: port, VRF: l.VRF, Probability: weight(l) / total, Src: src})
	}
	return res
}
