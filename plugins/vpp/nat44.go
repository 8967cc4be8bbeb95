package vpp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// noIndex is VPP's "none" for interface indices (~0).
const noIndex = ^uint32(0)

// maxTag is the longest tag VPP keeps (string[64] with its NUL).
const maxTag = 63

// retvalAlreadyEnabled is NAT44-ED's answer to enabling an enabled plugin
// in VPP 25.02 (corpus plugin.jsonl; disabling a disabled one answers
// -169): the plugin already is as asked.
// The client never disables the plugin, so only the first is used.
const retvalAlreadyEnabled api.VPPApiError = -170

// NAT44 programs VPP's NAT44-ED plugin over the binary API; it is the
// nat44.VPP the renderer's apply step calls.
//
// VPP keeps neither a probability nor an affinity for a static mapping
// (one local): they are not sent, and Dump reports them as 0; VPP 25.02
// never dumps the affinity of a load-balanced mapping either (the renderer
// keeps it in the tag). Zero timeouts in SetGlobal keep VPP's current
// value. Optional interface indexes are always sent as ~0 (0 is local0).
type NAT44 struct{ port }

var _ nat44.VPP = (*NAT44)(nil)

// NewNAT44 returns a NAT44 client; ifaces resolves interface names.
func NewNAT44(conn *Conn, ifaces *Interfaces, log *slog.Logger) *NAT44 {
	return &NAT44{newPort(conn, ifaces, log)}
}

// port is what a renderer's client to VPP holds: the connection, the
// interface cache that resolves names, its log.
type port struct {
	conn   *Conn
	ifaces *Interfaces
	log    *slog.Logger
}

func newPort(conn *Conn, ifaces *Interfaces, log *slog.Logger) port {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return port{conn: conn, ifaces: ifaces, log: log}
}

// invalidRetvals are VPP's answers to a call that cannot succeed as made.
var invalidRetvals = []api.VPPApiError{
	api.NO_SUCH_ENTRY, api.INVALID_VALUE, api.INVALID_VALUE_2, api.INVALID_SW_IF_INDEX,
	api.INVALID_ARGUMENT, api.VALUE_EXIST,
}

// classify wraps a failed call: VPP refusing it as invalid wraps
// nat44.ErrInvalid (and the api.VPPApiError), -3 (no such FIB table)
// nat44.ErrNoTable too (noTable); anything else is transient.
// unspecifiedInvalid also counts VPP's unspecified error (-1) as invalid,
// which is how it refuses to remove one of a mapping's last two locals.
func classify(err error, what string, unspecifiedInvalid bool) error {
	if err == nil {
		return nil
	}
	if e := noTable(err, what, nat44.ErrInvalid); e != nil {
		return e
	}
	var rv api.VPPApiError
	if errors.As(err, &rv) && (slices.Contains(invalidRetvals, rv) || (unspecifiedInvalid && rv == api.UNSPECIFIED)) {
		return fmt.Errorf("%s: %w: %w", what, nat44.ErrInvalid, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// noTable is err, VPP's -3 (no such FIB table), as both renderers take
// it: servicerenderer.ErrNoTable (nat44.ErrNoTable, cnat.ErrNoTable) and
// invalid, the renderer's ErrInvalid (the call cannot succeed before the
// table is made); nil for any other error.
func noTable(err error, what string, invalid error) error {
	var rv api.VPPApiError
	if errors.As(err, &rv) && rv == api.NO_SUCH_FIB {
		return fmt.Errorf("%s: %w: %w: %w", what, servicerenderer.ErrNoTable, invalid, err)
	}
	return nil
}

// invalid reports bad input found before calling VPP.
func invalid(what, why string) error {
	return fmt.Errorf("%s: %w: %s", what, nat44.ErrInvalid, why)
}

func addDel(add bool) string {
	if add {
		return "add"
	}
	return "delete"
}

// ip4 converts an IPv4 address, accepting the IPv4-mapped IPv6 form.
func ip4(a netip.Addr) (ip_types.IP4Address, bool) {
	a = a.Unmap()
	if !a.Is4() {
		return ip_types.IP4Address{}, false
	}
	return a.As4(), true
}

func fromIP4(a ip_types.IP4Address) netip.Addr { return netip.AddrFrom4(a) }

// SetGlobal enables the plugin when VPP has it disabled (with the session
// limit), then sets forwarding and timeouts where they differ. The
// session limit of an enabled plugin cannot change without re-enabling it
// (which drops every mapping): a different limit is reported as invalid
// and takes effect when VPP restarts.
func (n *NAT44) SetGlobal(ctx context.Context, g nat44.Global) error {
	rc := &nat44_ed.Nat44ShowRunningConfigReply{}
	if err := n.conn.invoke(ctx, &nat44_ed.Nat44ShowRunningConfig{}, rc); err != nil {
		return classify(err, "reading NAT44 running config", false)
	}
	var errs []error
	if rc.Sessions == 0 { // disabled
		if err := n.enable(ctx, g.SessionLimit); err != nil {
			return err
		}
		// Enabling resets forwarding and timeouts (and forwarding or timeouts
		// set while it was disabled were lost): read them again, then set.
		if err := n.conn.invoke(ctx, &nat44_ed.Nat44ShowRunningConfig{}, rc); err != nil {
			return classify(err, "reading NAT44 running config", false)
		}
	} else if g.SessionLimit != 0 && g.SessionLimit != rc.Sessions {
		errs = append(errs, invalid(fmt.Sprintf("NAT44 session limit %d", g.SessionLimit),
			fmt.Sprintf("VPP runs with %d and takes a new limit only when the plugin is re-enabled (VPP restart)", rc.Sessions)))
	}
	if rc.ForwardingEnabled != g.Forwarding {
		err := n.conn.invoke(ctx, &nat44_ed.Nat44ForwardingEnableDisable{Enable: g.Forwarding}, &nat44_ed.Nat44ForwardingEnableDisableReply{})
		errs = append(errs, classify(err, fmt.Sprintf("setting NAT44 forwarding %v", g.Forwarding), false))
	}
	want := mergeTimeouts(rc.Timeouts, g.Timeouts)
	if want != rc.Timeouts {
		err := n.conn.invoke(ctx, &nat44_ed.NatSetTimeouts{
			UDP: want.UDP, TCPEstablished: want.TCPEstablished, TCPTransitory: want.TCPTransitory, ICMP: want.ICMP,
		}, &nat44_ed.NatSetTimeoutsReply{})
		errs = append(errs, classify(err, fmt.Sprintf("setting NAT44 timeouts %+v", want), false))
	}
	return errors.Join(errs...)
}

// EnablePlugin enables NAT44-ED with the session limit when VPP has it
// disabled, as SetGlobal would, and sets nothing else (SetGlobal then sets
// forwarding and timeouts). VPP allocates and clears the session tables
// as it enables the plugin (0.9 s for 262 144 sessions on a 2-CPU VM,
// docs/real-vpp.md), all that while answering no other call: the agent
// enables it ahead, while it lists etcd (agent/prefetch).
func (n *NAT44) EnablePlugin(ctx context.Context, sessions uint32) error {
	rc := &nat44_ed.Nat44ShowRunningConfigReply{}
	if err := n.conn.invoke(ctx, &nat44_ed.Nat44ShowRunningConfig{}, rc); err != nil {
		return classify(err, "reading NAT44 running config", false)
	}
	if rc.Sessions != 0 {
		return nil
	}
	return n.enable(ctx, sessions)
}

// enable enables the plugin; already enabled (another caller was first)
// is as good.
func (n *NAT44) enable(ctx context.Context, sessions uint32) error {
	err := n.conn.invoke(ctx, &nat44_ed.Nat44EdPluginEnableDisable{Enable: true, Sessions: sessions}, &nat44_ed.Nat44EdPluginEnableDisableReply{})
	if err != nil && !isRetval(err, retvalAlreadyEnabled) {
		return classify(err, fmt.Sprintf("enabling NAT44-ED (sessions %d)", sessions), false)
	}
	n.log.Info("NAT44-ED plugin enabled", "sessions", sessions)
	return nil
}

// isRetval tells whether err is VPP's answer rv.
func isRetval(err error, rv api.VPPApiError) bool {
	var got api.VPPApiError
	return errors.As(err, &got) && got == rv
}

// mergeTimeouts overlays the non-zero wanted timeouts on VPP's.
func mergeTimeouts(have nat_types.NatTimeouts, want nat44.Timeouts) nat_types.NatTimeouts {
	pick := func(h, w uint32) uint32 {
		if w != 0 {
			return w
		}
		return h
	}
	return nat_types.NatTimeouts{
		UDP:            pick(have.UDP, want.UDP),
		TCPEstablished: pick(have.TCPEstablished, want.TCPEstablished),
		TCPTransitory:  pick(have.TCPTransitory, want.TCPTransitory),
		ICMP:           pick(have.ICMP, want.ICMP),
	}
}

// AddDelPoolAddress adds or deletes one NAT pool or twice-NAT pool address.
func (n *NAT44) AddDelPoolAddress(ctx context.Context, a nat44.PoolAddress, add bool) error {
	what := fmt.Sprintf("%s NAT44 pool address %v (vrf %d, twice-NAT %v)", addDel(add), a.IP, a.VRF, a.TwiceNAT)
	req, err := poolRequest(a, add)
	if err != nil {
		return invalid(what, err.Error())
	}
	err = n.conn.invoke(ctx, req, &nat44_ed.Nat44AddDelAddressRangeReply{})
	n.log.Debug("NAT44 pool address", "op", addDel(add), "ip", a.IP, "vrf", a.VRF, "twiceNAT", a.TwiceNAT, "err", err)
	return classify(err, what, false)
}

// SetInterfaceFeatures changes an interface's NAT44 features from old to
// new: features are removed first (VPP keeps in/out and output-feature
// interfaces apart), then added. Every step is tried; errors are joined.
func (n *NAT44) SetInterfaceFeatures(ctx context.Context, ifName string, old, new nat44.Features) (uint32, error) {
	if old == new {
		return 0, nil
	}
	what := fmt.Sprintf("NAT44 features of interface %q", ifName)
	idx, ok, err := n.ifaces.index(ctx, ifName)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%s: %w", what, err)
	case !ok:
		return 0, fmt.Errorf("%s: %w: %w", what, nat44.ErrNoInterface, nat44.ErrInvalid)
	}
	var errs []error
	for _, c := range featureCalls(ifName, idx, old, new) {
		err := n.conn.invoke(ctx, c.req, c.reply)
		n.log.Debug("NAT44 interface feature", "call", c.what, "err", err)
		errs = append(errs, classify(err, c.what, false))
	}
	return idx, errors.Join(errs...)
}

// featureCall is one request of an interface's feature change.
type featureCall struct {
	req, reply api.Message
	what       string
}

// featureCalls are the requests that change interface idx's features from
// old to new: removals first (VPP keeps in/out and output-feature
// interfaces apart), then additions.
func featureCalls(ifName string, idx uint32, old, new nat44.Features) []featureCall {
	del, add := old&^new, new&^old
	type step struct {
		f   nat44.Features
		add bool
	}
	var steps []step
	for _, f := range []nat44.Features{nat44.FeatureOutput, nat44.FeatureIn, nat44.FeatureOut} {
		if del&f != 0 {
			steps = append(steps, step{f, false})
		}
	}
	for _, f := range []nat44.Features{nat44.FeatureIn, nat44.FeatureOut, nat44.FeatureOutput} {
		if add&f != 0 {
			steps = append(steps, step{f, true})
		}
	}
	calls := make([]featureCall, 0, len(steps))
	for _, s := range steps {
		var req, reply api.Message
		name := "output"
		switch s.f {
		case nat44.FeatureOutput:
			req = &nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: s.add, SwIfIndex: interface_types.InterfaceIndex(idx)}
			reply = &nat44_ed.Nat44EdAddDelOutputInterfaceReply{}
		case nat44.FeatureIn:
			name = "inside"
			req = &nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: s.add, Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: interface_types.InterfaceIndex(idx)}
			reply = &nat44_ed.Nat44InterfaceAddDelFeatureReply{}
		default:
			name = "outside"
			req = &nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: s.add, Flags: nat_types.NAT_IS_OUTSIDE, SwIfIndex: interface_types.InterfaceIndex(idx)}
			reply = &nat44_ed.Nat44InterfaceAddDelFeatureReply{}
		}
		calls = append(calls, featureCall{req: req, reply: reply,
			what: fmt.Sprintf("%s NAT44 %s feature on interface %q", addDel(s.add), name, ifName)})
	}
	return calls
}

// describe names a mapping in errors and logs.
func describe(k nat44.MappingKey) string {
	return fmt.Sprintf("%v:%d/%v", k.IP, k.Port, k.Proto)
}

// mappingFlags are the flags of the agent's mappings: always out2in-only.
func mappingFlags(t nat44.TwiceNAT) nat_types.NatConfigFlags {
	f := nat_types.NAT_IS_OUT2IN_ONLY
	switch t {
	case nat44.TwiceNATOn:
		f |= nat_types.NAT_IS_TWICE_NAT
	case nat44.TwiceNATSelf:
		f |= nat_types.NAT_IS_SELF_TWICE_NAT
	}
	return f
}

func checkProto(p nat44.Protocol) bool { return p == servicerenderer.TCP || p == servicerenderer.UDP }

// AddDelMapping adds or deletes a whole mapping, always out2in-only: a
// static mapping when it has one local, a load-balanced one otherwise.
func (n *NAT44) AddDelMapping(ctx context.Context, m *nat44.Mapping, add bool) error {
	kind := mappingKind(m)
	what := mappingWhat(m, add)
	req, reply, err := mappingRequest(m, add)
	if err != nil {
		return invalid(what, err.Error())
	}
	err = n.conn.invoke(ctx, req, reply)
	n.log.Debug("NAT44 mapping", "op", addDel(add), "kind", kind, "mapping", describe(m.MappingKey), "locals", len(m.Locals), "tag", m.Tag, "err", err)
	return classify(err, what, false)
}

// mappingKind names the kind of mapping m makes.
func mappingKind(m *nat44.Mapping) string {
	if len(m.Locals) == 1 {
		return "static mapping"
	}
	return "load-balanced mapping"
}

// mappingWhat names a mapping add or delete in errors.
func mappingWhat(m *nat44.Mapping, add bool) string {
	return fmt.Sprintf("%s %s %s (tag %q)", addDel(add), mappingKind(m), describe(m.MappingKey), m.Tag)
}

// mappingRequest is the request (and its reply) that adds or deletes m: a
// static_mapping_v2 for one local, an lb_static_mapping for more, as the
// corpus records them (static.jsonl, lb.jsonl, agent_flow.jsonl). The error
// says why m cannot be sent.
func mappingRequest(m *nat44.Mapping, add bool) (req, reply api.Message, _ error) {
	switch {
	case m.Port == 0:
		return nil, nil, errors.New("port 0")
	case !checkProto(m.Proto):
		return nil, nil, fmt.Errorf("protocol %d is neither TCP nor UDP", m.Proto)
	case len(m.Tag) > maxTag:
		return nil, nil, fmt.Errorf("tag longer than %d bytes", maxTag)
	case len(m.Locals) == 0:
		return nil, nil, errors.New("no locals")
	case add && len(m.Locals) > nat44.MaxLocalsPerAdd:
		// 256 or more locals in one add abort VPP 25.02 (FACTS §1).
		return nil, nil, fmt.Errorf("%d locals: at most %d in one add", len(m.Locals), nat44.MaxLocalsPerAdd)
	case add && len(m.Locals) > 1 && !slices.ContainsFunc(m.Locals, func(l nat44.Local) bool { return l.Probability > 0 }):
		// Only probability-0 locals crash VPP 25.02 on the first packet.
		return nil, nil, errors.New("every local has probability 0")
	}
	locals := make([]nat44_ed.Nat44LbAddrPort, 0, len(m.Locals))
	for _, l := range m.Locals {
		locals = append(locals, nat44_ed.Nat44LbAddrPort{Addr: ip_types.IP4Address(l.IP), Port: l.Port, Probability: l.Probability, VrfID: l.VRF})
	}
	if len(locals) == 1 {
		l := locals[0]
		req = &nat44_ed.Nat44AddDelStaticMappingV2{
			IsAdd:             add,
			Flags:             mappingFlags(m.TwiceNAT),
			LocalIPAddress:    l.Addr,
			ExternalIPAddress: ip_types.IP4Address(m.IP),
			Protocol:          uint8(m.Proto),
			LocalPort:         l.Port,
			ExternalPort:      m.Port,
			ExternalSwIfIndex: interface_types.InterfaceIndex(noIndex),
			VrfID:             l.VrfID,
			Tag:               m.Tag,
		}
		reply = &nat44_ed.Nat44AddDelStaticMappingV2Reply{}
	} else {
		lb := &nat44_ed.Nat44AddDelLbStaticMapping{
			IsAdd:        add,
			Flags:        mappingFlags(m.TwiceNAT),
			ExternalAddr: ip_types.IP4Address(m.IP),
			ExternalPort: m.Port,
			Protocol:     uint8(m.Proto),
		}
		if add {
			// A delete ignores locals, affinity and tag (corpus lb.jsonl), and
			// must not carry 256 or more locals: it carries none.
			lb.Affinity, lb.Tag = m.Affinity, m.Tag
			lb.LocalNum, lb.Locals = uint32(len(locals)), locals
		}
		req = lb
		reply = &nat44_ed.Nat44AddDelLbStaticMappingReply{}
	}
	return req, reply, nil
}

// AddDelLBLocal adds or removes one local of a load-balanced mapping in place.
func (n *NAT44) AddDelLBLocal(ctx context.Context, key nat44.MappingKey, l nat44.Local, add bool) error {
	what := localWhat(key, l, add)
	err := n.conn.invoke(ctx, localRequest(key, l, add), &nat44_ed.Nat44LbStaticMappingAddDelLocalReply{})
	n.log.Debug("NAT44 load-balanced local", "op", addDel(add), "mapping", describe(key), "local", l.IP, "port", l.Port, "err", err)
	return classify(err, what, !add)
}

// localWhat names a local add or delete in errors.
func localWhat(key nat44.MappingKey, l nat44.Local, add bool) string {
	return fmt.Sprintf("%s local %v:%d (vrf %d) of load-balanced mapping %s", addDel(add), l.IP, l.Port, l.VRF, describe(key))
}

// localRequest is the request that adds or removes local l of the
// load-balanced mapping on key (corpus lb_local.jsonl, agent_flow.jsonl).
func localRequest(key nat44.MappingKey, l nat44.Local, add bool) *nat44_ed.Nat44LbStaticMappingAddDelLocal {
	return &nat44_ed.Nat44LbStaticMappingAddDelLocal{
		IsAdd:        add,
		ExternalAddr: ip_types.IP4Address(key.IP),
		ExternalPort: key.Port,
		Protocol:     uint8(key.Proto),
		Local:        nat44_ed.Nat44LbAddrPort{Addr: ip_types.IP4Address(l.IP), Port: l.Port, Probability: l.Probability, VrfID: l.VRF},
	}
}

// AddDelIdentity adds or deletes an identity mapping (port 0: address only).
func (n *NAT44) AddDelIdentity(ctx context.Context, id *nat44.Identity, add bool) error {
	what := identityWhat(id, add)
	req, err := identityRequest(id, add)
	if err != nil {
		return invalid(what, err.Error())
	}
	err = n.conn.invoke(ctx, req, &nat44_ed.Nat44AddDelIdentityMappingReply{})
	n.log.Debug("NAT44 identity mapping", "op", addDel(add), "ip", id.IP, "port", id.Port, "vrf", id.VRF, "err", err)
	return classify(err, what, false)
}

// identityWhat names an identity mapping add or delete in errors.
func identityWhat(id *nat44.Identity, add bool) string {
	target := fmt.Sprintf("%v:%d/%v", id.IP, id.Port, id.Proto)
	if id.Port == 0 {
		target = fmt.Sprintf("%v (address only)", id.IP)
	}
	return fmt.Sprintf("%s identity mapping %s (vrf %d, tag %q)", addDel(add), target, id.VRF, id.Tag)
}

// identityRequest is the request that adds or deletes identity mapping id
// (corpus identity.jsonl, agent_flow.jsonl): sw_if_index always ~0 (0 would
// make a pending record on local0).
func identityRequest(id *nat44.Identity, add bool) (*nat44_ed.Nat44AddDelIdentityMapping, error) {
	ip, ok := ip4(id.IP)
	switch {
	case !ok:
		return nil, errors.New("not an IPv4 address")
	case len(id.Tag) > maxTag:
		return nil, fmt.Errorf("tag longer than %d bytes", maxTag)
	case id.Port != 0 && !checkProto(id.Proto):
		return nil, fmt.Errorf("protocol %d is neither TCP nor UDP", id.Proto)
	}
	req := &nat44_ed.Nat44AddDelIdentityMapping{
		IsAdd:     add,
		IPAddress: ip,
		Protocol:  uint8(id.Proto),
		Port:      id.Port,
		SwIfIndex: interface_types.InterfaceIndex(noIndex),
		VrfID:     id.VRF,
		Tag:       id.Tag,
	}
	if id.Port == 0 {
		req.Flags = nat_types.NAT_IS_ADDR_ONLY
		req.Protocol = 0
	}
	return req, nil
}

// Dump reads the whole NAT44 state VPP holds: global settings (session
// limit 0 while the plugin is disabled), pools sorted by address,
// interface features by interface name, and every static, load-balanced
// and identity mapping (foreign ones included; tags tell the owner).
func (n *NAT44) Dump(ctx context.Context) (*nat44.State, error) {
	st := &nat44.State{
		Interfaces: make(map[string]nat44.Features),
		Mappings:   make(map[nat44.MappingKey]*nat44.Mapping),
		Identities: make(map[nat44.IdentityKey]*nat44.Identity),
	}
	rc := &nat44_ed.Nat44ShowRunningConfigReply{}
	if err := n.conn.invoke(ctx, &nat44_ed.Nat44ShowRunningConfig{}, rc); err != nil {
		return nil, classify(err, "dumping NAT44 running config", false)
	}
	st.Global = nat44.Global{
		SessionLimit: rc.Sessions,
		Forwarding:   rc.ForwardingEnabled,
		Timeouts: nat44.Timeouts{
			UDP: rc.Timeouts.UDP, TCPEstablished: rc.Timeouts.TCPEstablished,
			TCPTransitory: rc.Timeouts.TCPTransitory, ICMP: rc.Timeouts.ICMP,
		},
	}
	steps := []struct {
		what string
		run  func() error
	}{
		{"pool addresses", func() error { return n.dumpPool(ctx, st) }},
		{"interfaces", func() error { return n.dumpInterfaces(ctx, st) }},
		{"static mappings", func() error { return n.dumpStatic(ctx, st) }},
		{"load-balanced mappings", func() error { return n.dumpLB(ctx, st) }},
		{"identity mappings", func() error { return n.dumpIdentities(ctx, st) }},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			return nil, classify(err, "dumping NAT44 "+s.what, false)
		}
	}
	return st, nil
}

// unexpected is the error for a message a dump should not carry.
func unexpected(m api.Message) error { return fmt.Errorf("unexpected %s", m.GetMessageName()) }

func (n *NAT44) dumpPool(ctx context.Context, st *nat44.State) error {
	err := n.conn.dump(ctx, &nat44_ed.Nat44AddressDump{}, func(m api.Message) error {
		d, ok := m.(*nat44_ed.Nat44AddressDetails)
		if !ok {
			return unexpected(m)
		}
		st.Pool = append(st.Pool, nat44.PoolAddress{
			IP: fromIP4(d.IPAddress), VRF: d.VrfID, TwiceNAT: d.Flags&nat_types.NAT_IS_TWICE_NAT != 0,
		})
		return nil
	})
	slices.SortFunc(st.Pool, nat44.PoolAddress.Compare)
	return err
}

func (n *NAT44) dumpInterfaces(ctx context.Context, st *nat44.State) error {
	features := make(map[uint32]nat44.Features)
	err := n.conn.dump(ctx, &nat44_ed.Nat44InterfaceDump{}, func(m api.Message) error {
		d, ok := m.(*nat44_ed.Nat44InterfaceDetails)
		if !ok {
			return unexpected(m)
		}
		var f nat44.Features
		if d.Flags&nat_types.NAT_IS_INSIDE != 0 {
			f |= nat44.FeatureIn
		}
		if d.Flags&nat_types.NAT_IS_OUTSIDE != 0 {
			f |= nat44.FeatureOut
		}
		features[uint32(d.SwIfIndex)] |= f
		return nil
	})
	if err != nil {
		return err
	}
	// The output-feature interfaces come from a cursor-based "get".
	err = n.conn.stream(ctx, []api.Message{&nat44_ed.Nat44EdOutputInterfaceGet{Cursor: 0}}, func(m api.Message) (bool, error) {
		switch d := m.(type) {
		case *nat44_ed.Nat44EdOutputInterfaceDetails:
			features[uint32(d.SwIfIndex)] |= nat44.FeatureOutput
			return false, nil
		case *nat44_ed.Nat44EdOutputInterfaceGetReply:
			if d.Retval != 0 {
				return true, fmt.Errorf("nat44_ed_output_interface_get: %w", api.VPPApiError(d.Retval))
			}
			return true, nil
		}
		return true, unexpected(m)
	})
	if err != nil {
		return err
	}
	for idx, f := range features {
		name, ok, err := n.ifaces.name(ctx, idx)
		if err != nil {
			return err
		}
		if !ok {
			n.log.Warn("NAT44 features on an interface VPP does not list; ignored", "swIfIndex", idx)
			continue
		}
		st.Interfaces[name] = f
	}
	return nil
}

func mappingKey(ip ip_types.IP4Address, port uint16, proto uint8) nat44.MappingKey {
	return nat44.MappingKey{IP: nat44.IPv4(ip), Port: port, Proto: nat44.Protocol(proto)}
}

func twiceNAT(f nat_types.NatConfigFlags) nat44.TwiceNAT {
	switch {
	case f&nat_types.NAT_IS_TWICE_NAT != 0:
		return nat44.TwiceNATOn
	case f&nat_types.NAT_IS_SELF_TWICE_NAT != 0:
		return nat44.TwiceNATSelf
	}
	return nat44.TwiceNATOff
}

func (n *NAT44) dumpStatic(ctx context.Context, st *nat44.State) error {
	return n.conn.dump(ctx, &nat44_ed.Nat44StaticMappingDump{}, func(m api.Message) error {
		d, ok := m.(*nat44_ed.Nat44StaticMappingDetails)
		if !ok {
			return unexpected(m)
		}
		k := mappingKey(d.ExternalIPAddress, d.ExternalPort, d.Protocol)
		st.Mappings[k] = &nat44.Mapping{
			MappingKey: k,
			Locals:     []nat44.Local{{IP: nat44.IPv4(d.LocalIPAddress), Port: d.LocalPort, VRF: d.VrfID}},
			TwiceNAT:   twiceNAT(d.Flags),
			Tag:        d.Tag,
		}
		return nil
	})
}

func (n *NAT44) dumpLB(ctx context.Context, st *nat44.State) error {
	var a dumpArena
	return n.conn.dump(ctx, &nat44_ed.Nat44LbStaticMappingDump{}, func(m api.Message) error {
		d, ok := m.(*nat44_ed.Nat44LbStaticMappingDetails)
		if !ok {
			return unexpected(m)
		}
		k := mappingKey(d.ExternalAddr, d.ExternalPort, d.Protocol)
		out := a.mapping()
		*out = nat44.Mapping{MappingKey: k, TwiceNAT: twiceNAT(d.Flags), Affinity: d.Affinity, Tag: d.Tag}
		if len(d.Locals) > 0 {
			out.Locals = a.locals(len(d.Locals))
		}
		for i, l := range d.Locals {
			out.Locals[i] = nat44.Local{IP: nat44.IPv4(l.Addr), Port: l.Port, VRF: l.VrfID, Probability: l.Probability}
		}
		if !slices.IsSortedFunc(out.Locals, nat44.Local.Compare) {
			slices.SortFunc(out.Locals, nat44.Local.Compare)
		}
		st.Mappings[k] = out
		return nil
	})
}

// dumpArena hands out a dump's mappings and their locals from blocks of
// many, not one allocation each (a start's dump reads ~55 000 mappings).
// A mapping the renderer keeps keeps its block: the renderer keeps few
// (those VPP holds differently from the desired ones), and the blocks
// are small.
type dumpArena struct {
	ms []nat44.Mapping
	ls []nat44.Local
}

// Block sizes of a dumpArena.
const (
	arenaMappings = 256
	arenaLocals   = 2048
)

// mapping is a new zero mapping.
func (a *dumpArena) mapping() *nat44.Mapping {
	if len(a.ms) == cap(a.ms) {
		a.ms = make([]nat44.Mapping, 0, arenaMappings)
	}
	a.ms = a.ms[:len(a.ms)+1]
	return &a.ms[len(a.ms)-1]
}

// locals is n new zero locals, a slice no append reaches beyond.
func (a *dumpArena) locals(n int) []nat44.Local {
	if cap(a.ls)-len(a.ls) < n {
		a.ls = make([]nat44.Local, 0, max(n, arenaLocals))
	}
	i := len(a.ls)
	a.ls = a.ls[:i+n]
	return a.ls[i : i+n : i+n]
}

func (n *NAT44) dumpIdentities(ctx context.Context, st *nat44.State) error {
	return n.conn.dump(ctx, &nat44_ed.Nat44IdentityMappingDump{}, func(m api.Message) error {
		d, ok := m.(*nat44_ed.Nat44IdentityMappingDetails)
		if !ok {
			return unexpected(m)
		}
		k := nat44.IdentityKey{IP: fromIP4(d.IPAddress), Port: d.Port, Proto: nat44.Protocol(d.Protocol), VRF: d.VrfID}
		if d.Flags&nat_types.NAT_IS_ADDR_ONLY != 0 {
			k.Port, k.Proto = 0, 0
		}
		st.Identities[k] = &nat44.Identity{IdentityKey: k, Tag: d.Tag}
		return nil
	})
}
