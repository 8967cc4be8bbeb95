package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"go.fd.io/govpp/binapi/ip_types"

	"contiv.dev/vpp/agent/offline"
	"contiv.dev/vpp/agent/packettrace"
	"contiv.dev/vpp/agent/restapi"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/plugins/vpp/sim"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// renderFlags are the flags of an offline render.
type renderFlags struct {
	file   string
	node   string
	config string
	nodeID uint
	// renderer overrides the configuration's renderer when set.
	renderer string
}

func (f *renderFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.file, "f", "", "Kubernetes YAML `file` of the cluster (- for standard input)")
	fs.StringVar(&f.node, "node", "", "`name` of the node to render for")
	fs.StringVar(&f.config, "config", "", "agent configuration `file` (default: the built-in defaults)")
	fs.UintVar(&f.nodeID, "node-id", 0, "the node's ID (default: its position, from 1, among the file's Nodes sorted by name)")
	fs.StringVar(&f.renderer, "renderer", "", "render through `nat44|cnat` (default: the configuration's renderer, nat44)")
}

// render loads the manifests and the configuration and renders for the node.
func (f *renderFlags) render(ctx context.Context, s streams) (*offline.Rendered, error) {
	if f.node == "" {
		return nil, fmt.Errorf("%w: --node NAME is required with -f", errUsage)
	}
	if f.nodeID > 1<<31 {
		return nil, fmt.Errorf("%w: --node-id %d is out of range", errUsage, f.nodeID)
	}
	cfg := contivconf.Defaults()
	if f.config != "" {
		var err error
		if cfg, err = contivconf.Load(f.config); err != nil {
			return nil, err
		}
	}
	cfg.NodeName = f.node
	switch f.renderer {
	case "":
	case contivconf.RendererNAT44, contivconf.RendererCNAT:
		cfg.Renderer = f.renderer
	default:
		return nil, fmt.Errorf("%w: --renderer %q: want nat44 or cnat", errUsage, f.renderer)
	}
	if len(cfg.Etcd.Endpoints) == 0 {
		// An offline render reads no etcd: any choice of one will do.
		cfg.Etcd.Embedded.Enabled = true
	}
	if err := cfg.Validate(); err != nil {
		where := "the default configuration"
		if f.config != "" {
			where = f.config
		}
		return nil, fmt.Errorf("%s with node name %q: %w", where, f.node, err)
	}
	objs, err := readManifests(s, f.file)
	if err != nil {
		return nil, err
	}
	r, err := offline.Render(ctx, offline.Params{Objects: objs, Config: cfg, NodeID: uint32(f.nodeID)})
	if errors.Is(err, offline.ErrUnknownNode) {
		return nil, fmt.Errorf("%s: %w", f.file, err)
	}
	return r, err
}

// describe is one line about the node a render was for.
func (f *renderFlags) describe(r *offline.Rendered) string {
	how := "from --node-id"
	if f.nodeID == 0 {
		file := f.file
		if file == "-" {
			file = "standard input"
		}
		how = "its position among the Nodes of " + file + " sorted by name"
	}
	mgmt := "none"
	if len(r.MgmtIPs) > 0 {
		mgmt = joinStrings(r.MgmtIPs, ",")
	}
	return fmt.Sprintf("node %s: ID %d (%s), pod subnet %s, VPP IP %s, management IPs %s",
		r.Node, r.NodeID, how, r.Plan.PodSubnet, r.NodeIP, mgmt)
}

// renderOutput is what render -o json prints.
type renderOutput struct {
	Node      string           `json:"node"`
	NodeID    uint32           `json:"nodeID"`
	NodeIP    netip.Prefix     `json:"nodeIP"`
	MgmtIPs   []netip.Addr     `json:"mgmtIPs"`
	Desired   []string         `json:"desired"`
	Failures  []nat44.Failure  `json:"failures"`
	Conflicts []nat44.Conflict `json:"conflicts"`
	// Subsets are the frontends served by a subset of their endpoints.
	Subsets []nat44.SubsetStatus `json:"subsets,omitempty"`
	// Skipped is what the service processor left out, and why.
	Skipped []service.Skip `json:"skipped"`
}

func runRender(ctx context.Context, s streams, args []string) error {
	fs := newFlagSet(s, "render", "-f FILE.yaml --node NAME [--config agent.yaml] [--node-id N] [--renderer nat44|cnat] [-o table|json]")
	var rf renderFlags
	var of outputFlag
	rf.register(fs)
	of.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := of.check(); err != nil {
		return err
	}
	if rf.file == "" {
		return fmt.Errorf("%w: -f FILE is required", errUsage)
	}
	r, err := rf.render(ctx, s)
	if err != nil {
		return err
	}
	fmt.Fprintln(s.err, rf.describe(r))
	if r.CNAT != nil {
		if of.json() {
			return writeJSON(s.out, newRenderCNATOutput(r))
		}
		if err := printCNAT(s.out, r.CNAT); err != nil {
			return err
		}
	} else if of.json() {
		return writeJSON(s.out, renderOutput{
			Node: r.Node, NodeID: r.NodeID, NodeIP: r.NodeIP, MgmtIPs: r.MgmtIPs,
			Desired: r.Desired.Lines(), Failures: r.Failures, Conflicts: r.Conflicts, Subsets: r.Subsets,
			Skipped: nonNil(r.Skipped),
		})
	} else if err := printNAT44(s.out, r.Desired.Lines(), r.Failures, r.Conflicts); err != nil {
		return err
	} else if err := printSubsets(s.out, r.Subsets); err != nil {
		return err
	}
	if len(r.Skipped) == 0 {
		return nil
	}
	fmt.Fprintf(s.out, "\nSKIPPED (%d): left out of the rendered state, and why\n", len(r.Skipped))
	return printSkipped(s.out, skipRows(r.Skipped))
}

// skipRows are the processor's skips as the REST view gives them.
func skipRows(skips []service.Skip) []skipRow {
	out := make([]skipRow, len(skips))
	for i, k := range skips {
		out[i] = skipRow{Service: k.Service, Object: k.Object, Port: k.Port, Reason: k.Reason.String(), Detail: k.Detail}
	}
	return out
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// defaultFrom and defaultFrom6 are the source of a traced packet when
// --from gives none: a client outside the cluster (TEST-NET-1, and the
// IPv6 documentation prefix for an IPv6 target).
const (
	defaultFrom  = "192.0.2.1"
	defaultFrom6 = "2001:db8::1"
)

// parseFrom parses --from for target t: an address of t's family, or the
// default source of that family when empty.
func parseFrom(from string, t target) (netip.Addr, error) {
	if from == "" {
		from = defaultFrom
		if t.ip.Is6() {
			from = defaultFrom6
		}
	}
	family := "IPv4"
	if t.ip.Is6() {
		family = "IPv6"
	}
	src, err := netip.ParseAddr(from)
	if err != nil || src.Zone() != "" || src.Is4In6() {
		return netip.Addr{}, fmt.Errorf("%w: --from %q: want an %s address", errUsage, from, family)
	}
	if src.Is4() != t.ip.Is4() {
		return netip.Addr{}, fmt.Errorf("%w: --from %s and target %s are of different families: want an %s address", errUsage, src, t, family)
	}
	return src, nil
}

// errNAT44IPv6 refuses an IPv6 target to a NAT44 trace.
func errNAT44IPv6(t target, how string) error {
	return fmt.Errorf("%w: target %s is IPv6 and NAT44 translates IPv4 only (%s)", errUsage, t, how)
}

// target is what trace asks about: VIP:PORT/PROTO.
type target struct {
	ip    netip.Addr
	port  uint16
	proto sr.Protocol
}

func (t target) String() string {
	return netip.AddrPortFrom(t.ip, t.port).String() + "/" + t.proto.String()
}

// parseTarget parses VIP:PORT/PROTO (PROTO TCP or UDP, any case; TCP when
// left out).
func parseTarget(s string) (target, error) {
	bad := func(why string) (target, error) {
		return target{}, fmt.Errorf("%w: bad target %q: %s; want VIP:PORT/PROTO, e.g. 10.96.0.10:53/UDP", errUsage, s, why)
	}
	hostPort, proto, hasProto := strings.Cut(s, "/")
	t := target{proto: sr.TCP}
	if hasProto {
		switch strings.ToUpper(proto) {
		case "TCP":
		case "UDP":
			t.proto = sr.UDP
		case "SCTP":
			return bad("SCTP is not supported by NAT44-ED")
		default:
			return bad(fmt.Sprintf("unknown protocol %q (TCP or UDP)", proto))
		}
	}
	ap, err := netip.ParseAddrPort(hostPort)
	if err != nil {
		if _, aerr := netip.ParseAddr(hostPort); aerr == nil {
			return bad("no port")
		}
		return bad(strings.TrimPrefix(err.Error(), "invalid AddrPort: "))
	}
	if ap.Addr().Is4In6() {
		return bad("an IPv4-mapped IPv6 address: write it as IPv4")
	}
	if ap.Addr().Zone() != "" {
		return bad("an address with a zone")
	}
	if ap.Port() == 0 {
		return bad("port 0")
	}
	t.ip, t.port = ap.Addr(), ap.Port()
	return t, nil
}

// traceBackend is one backend in trace -o json.
type traceBackend struct {
	IP          netip.Addr `json:"ip"`
	Port        uint16     `json:"port"`
	VRF         uint32     `json:"vrf"`
	Probability float64    `json:"probability"`
	// Src is the source address the backend sees; SourceRewritten tells
	// whether it is not the client's (twice-NAT).
	Src             netip.Addr `json:"src"`
	SourceRewritten bool       `json:"sourceRewritten"`
}

// traceOutput is what trace -o json prints.
type traceOutput struct {
	Target   string         `json:"target"`
	From     netip.Addr     `json:"from"`
	Verdict  string         `json:"verdict"`
	Reason   string         `json:"reason"`
	Tag      string         `json:"tag,omitempty"`
	Affinity uint32         `json:"affinity,omitempty"`
	Backends []traceBackend `json:"backends"`
}

func newTraceOutput(t target, from netip.Addr, res sim.Result) traceOutput {
	out := traceOutput{
		Target: t.String(), From: from, Verdict: res.Verdict.String(), Reason: res.Reason,
		Tag: res.Tag, Affinity: res.Affinity, Backends: []traceBackend{},
	}
	for _, b := range res.Backends {
		out.Backends = append(out.Backends, traceBackend{
			IP: b.IP, Port: b.Port, VRF: b.VRF, Probability: b.Probability, Src: b.Src, SourceRewritten: b.Src != from,
		})
	}
	return out
}

func printTrace(w io.Writer, o traceOutput) error {
	head := fmt.Sprintf("%s from %s: %s (%s)", o.Target, o.From, o.Verdict, o.Reason)
	if o.Tag != "" {
		head += ", tag " + o.Tag
	}
	if o.Affinity > 0 {
		head += fmt.Sprintf(", session affinity %ds", o.Affinity)
	}
	fmt.Fprintln(w, head)
	if len(o.Backends) == 0 {
		return nil
	}
	t := newTable(w, "BACKEND", "VRF", "PROBABILITY", "SOURCE SEEN BY BACKEND")
	how := "twice-NAT"
	if strings.HasPrefix(o.Tag, "cnat ") {
		how = "cnat source NAT"
	}
	for _, b := range o.Backends {
		src := b.Src.String() + " (client's, kept)"
		if b.SourceRewritten {
			src = b.Src.String() + " (rewritten: " + how + ")"
		}
		t.row(netip.AddrPortFrom(b.IP, b.Port).String(), strconv.FormatUint(uint64(b.VRF), 10),
			strconv.FormatFloat(100*b.Probability, 'f', 1, 64)+"%", src)
	}
	return t.flush()
}

func runTrace(ctx context.Context, s streams, args []string) error {
	fs := newFlagSet(s, "trace", "VIP:PORT/PROTO [--from SRC] [-f FILE.yaml --node NAME [--config agent.yaml] [--node-id N] [--renderer nat44|cnat]] [--agent URL] [-o table|json]")
	from := fs.String("from", "", "source `address` of the packet, of the target's family (default: a client outside the cluster, "+defaultFrom+" or "+defaultFrom6+")")
	var rf renderFlags
	var af agentFlags
	var of outputFlag
	rf.register(fs)
	af.register(fs)
	of.register(fs)
	arg, err := parseOneArg(fs, args, "VIP:PORT/PROTO")
	if err != nil {
		return err
	}
	if err := of.check(); err != nil {
		return err
	}
	t, err := parseTarget(arg)
	if err != nil {
		return err
	}
	src, err := parseFrom(*from, t)
	if err != nil {
		return err
	}
	p := sim.Packet{Src: src, Dst: t.ip, Proto: ip_types.IPProto(t.proto), DstPort: t.port}
	var res sim.Result
	if rf.file != "" {
		res, err = traceOffline(ctx, s, &rf, t, p)
	} else {
		if rf.node != "" || rf.config != "" || rf.nodeID != 0 || rf.renderer != "" {
			return fmt.Errorf("%w: --node, --config, --node-id and --renderer render offline: they need -f FILE", errUsage)
		}
		res, err = traceLive(ctx, s, &af, t, p)
	}
	if err != nil {
		return err
	}
	out := newTraceOutput(t, src, res)
	if of.json() {
		return writeJSON(s.out, out)
	}
	return printTrace(s.out, out)
}

// traceOffline renders the manifests and asks the simulated VPP's oracle.
func traceOffline(ctx context.Context, s streams, rf *renderFlags, t target, p sim.Packet) (sim.Result, error) {
	r, err := rf.render(ctx, s)
	if err != nil {
		return sim.Result{}, err
	}
	if r.CNAT == nil && t.ip.Is6() {
		return sim.Result{}, errNAT44IPv6(t, "trace it through --renderer cnat")
	}
	fmt.Fprintln(s.err, rf.describe(r)+"; the packet enters on "+r.MainInterface)
	if r.CNAT != nil {
		return cnatAsResult(r.TranslateCNAT(p), p), nil
	}
	return r.Translate(p), nil
}

// traceLive asks the agent which renderer it runs and answers from the
// state it applied.
func traceLive(ctx context.Context, s streams, af *agentFlags, t target, p sim.Packet) (sim.Result, error) {
	c, err := af.client()
	if err != nil {
		return sim.Result{}, err
	}
	var cfg struct {
		Renderer string `json:"renderer"`
	}
	if _, err := c.view(ctx, "/v1/config", &cfg); err != nil {
		return sim.Result{}, err
	}
	if cfg.Renderer == contivconf.RendererCNAT {
		return traceLiveCNAT(ctx, s, c, t, p)
	}
	if t.ip.Is6() {
		return sim.Result{}, errNAT44IPv6(t, "the agent at "+c.base.String()+" runs renderer nat44")
	}
	var v restapi.NAT44MappingsView
	if _, err := c.view(ctx, "/v1/nat44/mappings", &v); err != nil {
		return sim.Result{}, err
	}
	if v.Applied == nil {
		return sim.Result{}, fmt.Errorf("agent at %s: /v1/nat44/mappings holds no applied state", c.base)
	}
	applied := v.Applied.State()
	if v.Desired != nil {
		if note := pendingNote(v.Desired.State(), applied, t); note != "" {
			fmt.Fprintln(s.err, note)
		}
	}
	return packettrace.NAT44(ctx, applied, p)
}

// traceLiveCNAT answers with packettrace.CNAT from the agent's /v1/cnat
// (what VPP holds) and /v1/ipam (which backends are local) views.
func traceLiveCNAT(ctx context.Context, s streams, c *agentClient, t target, p sim.Packet) (sim.Result, error) {
	var v *restapi.CNATView
	if _, err := c.view(ctx, "/v1/cnat", &v); err != nil {
		return sim.Result{}, err
	}
	var ipam *restapi.IPAMView
	if _, err := c.view(ctx, "/v1/ipam", &ipam); err != nil {
		return sim.Result{}, err
	}
	if v == nil || ipam == nil {
		return sim.Result{}, fmt.Errorf("agent at %s runs renderer cnat but /v1/cnat or /v1/ipam holds no state yet (see contivctl status)", c.base)
	}
	if note := cnatPendingNote(v, t); note != "" {
		fmt.Fprintln(s.err, note)
	}
	st := packettrace.CNATState{Translations: v.Applied, Node: v.AppliedNode, PodSubnets: []netip.Prefix{ipam.PodSubnet}}
	res, err := packettrace.CNAT(ctx, st, p)
	if err != nil {
		return sim.Result{}, err
	}
	return cnatAsResult(res, p), nil
}

// cnatAsResult shows a cnat trace as a NAT44 one: the backends a packet
// may reach, their shares (cnat weighs by repeated paths) and the source
// each backend sees; the tag names the translation by its key (VPP's id
// is known offline only). An untranslated packet that leaves source-NATed
// says so in the reason.
func cnatAsResult(c sim.CnatResult, p sim.Packet) sim.Result {
	res := sim.Result{Verdict: c.Verdict, Reason: c.Reason}
	switch c.Verdict {
	case sim.Translated:
		key := cnat.Key{IP: p.Dst, Port: p.DstPort, Proto: sr.Protocol(p.Proto)}
		res.Reason, res.Tag = "cnat translation", "cnat translation "+key.String()
	case sim.NotTranslated:
		if c.Src.IsValid() && c.Src != p.Src {
			res.Reason += "; it leaves source-NATed to " + c.Src.String()
		}
	}
	for _, b := range c.Backends {
		res.Backends = append(res.Backends, sim.Reach{IP: b.Backend.Addr(), Port: b.Backend.Port(), Probability: b.Weight, Src: b.Src})
	}
	return res
}

// cnatPendingNote warns when VPP does not hold the translation (or the
// node configuration) the agent wants for the traced frontend.
func cnatPendingNote(v *restapi.CNATView, t target) string {
	key := cnat.Key{IP: t.ip, Port: t.port, Proto: t.proto}
	find := func(ts []*cnat.Translation) string {
		for _, tr := range ts {
			if tr != nil && tr.Key == key {
				return cnatTranslationLine(tr)
			}
		}
		return "none"
	}
	var notes []string
	if d, a := find(v.Desired), find(v.Applied); d != a {
		notes = append(notes, fmt.Sprintf("note: VPP does not hold the cnat translation the agent wants for %s (see contivctl status and /v1/cnat); this answer is from what VPP holds\n  wanted: %s\n  held:   %s", t, d, a))
	}
	if d, a := cnatNodeLines(v.DesiredNode), cnatNodeLines(v.AppliedNode); !slices.Equal(d, a) {
		notes = append(notes, "note: VPP does not hold the cnat node configuration (source NAT) the agent wants; this answer is from what VPP holds")
	}
	return strings.Join(notes, "\n")
}

// pendingNote warns when VPP does not hold what the agent wants for the
// traced frontend: the answer, from the applied state, may then change.
func pendingNote(desired, applied *nat44.State, t target) string {
	ip, ok := nat44.IPv4Of(t.ip)
	if !ok {
		return "" // NAT44 maps IPv4 only: there is no mapping to wait for
	}
	key := nat44.MappingKey{IP: ip, Port: t.port, Proto: t.proto}
	d, a := desired.Mappings[key], applied.Mappings[key]
	str := func(m *nat44.Mapping) string {
		if m == nil {
			return "none"
		}
		return m.String()
	}
	if str(d) == str(a) {
		return ""
	}
	return fmt.Sprintf("note: VPP does not hold the mapping the agent wants for %s (see contivctl nat44 and contivctl status); this answer is from what VPP holds\n  wanted: %s\n  held:   %s", t, str(d), str(a))
}

// parseOneArg parses args into fs, allowing flags before and after exactly
// one positional argument, which it returns.
func parseOneArg(fs *flag.FlagSet, args []string, what string) (string, error) {
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		return "", fmt.Errorf("%w: %s is required", errUsage, what)
	}
	arg := fs.Arg(0)
	if err := parse(fs, fs.Args()[1:]); err != nil {
		return "", err
	}
	return arg, nil
}
