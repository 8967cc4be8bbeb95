package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"contiv.dev/vpp/agent/restapi"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/vpp"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// The verdicts of a doctor check, worst last.
const (
	verdictOK   = "ok"
	verdictWarn = "warn"
	verdictFail = "FAIL"
)

// finding is one check of contivctl doctor: what was found and, unless it
// is fine, what to do about it.
type finding struct {
	Verdict string `json:"verdict"`
	Check   string `json:"check"`
	Detail  string `json:"detail"`
	Fix     string `json:"fix,omitempty"`
}

// pendingIf is one nat44.PendingInterface as the agent encodes it.
type pendingIf struct {
	Name     string
	Features nat44.Features
	Since    time.Time
}

// writeStatus is what the agent still owes etcd (nodesync, ipam).
type writeStatus struct {
	Pending   any    `json:"pending"` // a flag for nodesync, a count for ipam
	Failures  int    `json:"failures"`
	LastError string `json:"lastError"`
	Stalled   bool   `json:"stalled"`
	// Clashes (nodesync): this node's VPP addresses that are another
	// node's address.
	Clashes []string `json:"clashes"`
}

// The notReady reasons the agent gives (agent/readiness, agent/health.go, agent.go), by
// a part of their text.
const (
	reasonMainNIC   = "which interface holds the node IP"
	reasonFirstSync = "waiting for the first full sync"
	reasonVPPDown   = "VPP not connected"
	reasonReprogram = "waiting for the full reprogram"
	reasonInterface = "interface "
	reasonTable     = "FIB table "
	reasonOwnAddrs  = "VPP addresses ("
	reasonOwner     = "VPP is managed by another agent"
)

func runDoctor(ctx context.Context, s streams, args []string) error {
	var allowSim bool
	c, of, err := newInspect(s, "doctor", args, inspectSwitch{&allowSim, "allow-simulated", "a simulated VPP is a warning, not a failure (development clusters)"})
	if err != nil {
		return err
	}
	var d doctor
	d.allowSim = allowSim
	if _, err := c.view(ctx, "/v1/status", &d.status); err != nil {
		return err
	}
	// The other views refine the diagnosis; an agent that lacks one is
	// still diagnosed from the rest.
	var cfg contivconf.Config
	if _, err := c.view(ctx, "/v1/config", &cfg); err != nil {
		d.add(verdictWarn, "config", "cannot read /v1/config: "+err.Error(), "")
	} else {
		d.cfg = &cfg
	}
	if _, err := c.view(ctx, "/v1/interfaces", &d.roles); err != nil {
		d.add(verdictWarn, "interfaces", "cannot read /v1/interfaces: "+err.Error(), "")
	}
	if _, err := c.view(ctx, "/v1/renderer", &d.renderer); err != nil {
		d.add(verdictWarn, "renderer", "cannot read /v1/renderer: "+err.Error(), "")
	}
	var pods podsDoctorView
	if _, err := c.view(ctx, "/v1/pods", &pods); err == nil {
		d.pods = &pods
	}
	d.diagnose()
	if of.json() {
		if err := writeJSON(s.out, d.findings); err != nil {
			return err
		}
	} else if err := printFindings(s.out, d.findings); err != nil {
		return err
	}
	if n := d.count(verdictFail); n > 0 {
		return fmt.Errorf("%d problem(s) found on node %s", n, orDash(d.status.Node))
	}
	return nil
}

// doctor diagnoses one agent from its views.
type doctor struct {
	allowSim bool
	status   agentStatus
	cfg      *contivconf.Config // nil: not read
	roles    map[string]sr.InterfaceRole
	// renderer is the renderer-neutral view; nil: not read, or the
	// agent runs no renderer yet.
	renderer *restapi.RendererView
	// pods is /v1/pods (doctorpods.go); nil: not read.
	pods *podsDoctorView
	// built is set once the agent found its main NIC and started its
	// controller.
	built    bool
	findings []finding
}

// failuresHint is where the objects VPP refused are listed.
const failuresHint = "'contivctl renderer' lists every failure"

func (d *doctor) add(verdict, check, detail, fix string) {
	d.findings = append(d.findings, finding{Verdict: verdict, Check: check, Detail: detail, Fix: fix})
}

func (d *doctor) count(verdict string) int {
	n := 0
	for _, f := range d.findings {
		if f.Verdict == verdict {
			n++
		}
	}
	return n
}

// diagnose runs every check; each reason the agent gives for not being
// ready is explained by one check or reported as it is.
func (d *doctor) diagnose() {
	explained := map[string]bool{}
	claim := func(part string) []string {
		var out []string
		for _, r := range d.status.NotReady {
			if strings.Contains(r, part) {
				explained[r] = true
				out = append(out, r)
			}
		}
		return out
	}
	claim(reasonVPPDown) // explained by checkVPP
	d.checkVPP()
	d.checkPlugins()
	d.checkOwner(claim(reasonOwner))
	d.checkSimulated()
	mainNIC := claim(reasonMainNIC)
	// Until the main NIC is known the agent builds nothing: no controller,
	// no NAT44 state; the views of those are empty.
	d.built = len(mainNIC) == 0
	d.checkMainNIC(mainNIC)
	d.checkSync(claim(reasonFirstSync), claim(reasonReprogram))
	d.checkPending(claim(reasonInterface))
	d.checkPendingTables(claim(reasonTable))
	d.checkRenderer()
	d.checkEtcdWrites()
	d.checkAddressClash()
	d.checkOwnAddrs(claim(reasonOwnAddrs))
	d.checkPods()
	for _, r := range d.status.NotReady {
		if !explained[r] {
			d.add(verdictFail, "readiness", r, "")
		}
	}
	if d.status.Ready {
		d.add(verdictOK, "readiness", "the agent is ready: /readyz answers 200", "")
	}
}

func (d *doctor) checkVPP() {
	v := d.status.VPP
	if v.Connected {
		d.add(verdictOK, "vpp", fmt.Sprintf("connected to VPP %s at %s (the agent's VPP %s bindings)", orDash(v.Version), orDash(v.Socket), orDash(v.Release)), "")
		return
	}
	detail := "VPP not connected"
	if v.Socket != "" {
		detail += " at " + v.Socket
	}
	if v.LastError != "" {
		detail += ": " + v.LastError
	}
	if strings.Contains(v.LastError, "incompatible with this agent") {
		// The agent reached VPP and refused it: its version, its messages
		// or the renderer on it (plugins/vpp, docs/vpp-versions.md).
		d.add(verdictFail, "vpp", detail, "run a VPP release this agent supports ("+strings.Join(vpp.SupportedReleases(), ", ")+
			") with the plugins the agent needs, and a renderer that works on it (docs/vpp-versions.md); the agent names what it refused in lastError")
		return
	}
	d.add(verdictFail, "vpp", detail, "start VPP with its API socket at vpp.socket (startup configuration: socksvr { socket-name "+
		cmp.Or(v.Socket, "/run/vpp/api.sock")+" }) and mount its directory into the agent; 'vppctl show version' must answer (docs/vpp-node.md)")
}

// checkPlugins warns of each optional plugin VPP lacks: the agent works
// without it, short of what the plugin does.
func (d *doctor) checkPlugins() {
	if !d.status.VPP.Connected {
		return
	}
	for _, p := range d.status.VPP.MissingPlugins {
		detail := "VPP does not load " + p
		if p == vpp.ACLPluginName {
			detail += ": loadBalancerSourceRanges are NOT enforced on this node (every source reaches the LoadBalancer IPs; 'contivctl services' names the services); everything else is programmed"
		}
		d.add(verdictWarn, "vpp-plugins", detail, "load it: 'plugins { plugin "+p+" { enable } }' in VPP's startup configuration, then restart VPP; the agent uses it at the reconnect (docs/vpp-node.md)")
	}
}

// checkOwner names the other agent that owns VPP (agent/owner.go).
func (d *doctor) checkOwner(reasons []string) {
	for _, r := range reasons {
		d.add(verdictFail, "vpp-owner", r, "this agent programs nothing while another agent's mark is on VPP (local0's tag; docs/vpp-node.md, section 6); "+
			"stop the other agent, or, if it is gone for good, set vpp.takeOver: true (CONTIV_VPP_TAKE_OVER, --vpp-take-over) and restart this agent")
	}
}

func (d *doctor) checkSimulated() {
	v := d.status.VPP
	mode := ""
	if d.cfg != nil {
		mode = string(d.cfg.VPP.Simulate)
	}
	if v.Simulated || strings.Contains(strings.ToUpper(d.status.Note), "SIMULATED") {
		verdict := verdictFail
		if d.allowSim {
			verdict = verdictWarn
		}
		d.add(verdict, "simulated-vpp", fmt.Sprintf("the agent runs a SIMULATED VPP (vpp.simulate: %s): nothing forwards packets", orDash(mode)),
			"on a real node set vpp.simulate: never and run VPP; only development clusters simulate (--allow-simulated)")
		return
	}
	if mode != "" && mode != string(contivconf.SimulateNever) {
		d.add(verdictWarn, "simulated-vpp", "vpp.simulate is "+mode+": a restart without VPP's socket would silently simulate VPP",
			"set vpp.simulate: never on real nodes")
	}
}

func (d *doctor) checkMainNIC(reasons []string) {
	for _, r := range reasons {
		if !d.status.VPP.Connected {
			d.add(verdictWarn, "main-nic", "main NIC not known until VPP connects: "+r, "")
			continue
		}
		d.add(verdictFail, "main-nic", "main NIC not found: "+r,
			"give VPP's uplink the node IP in VPP's startup configuration ('vppctl show interface address' must list it), or name it in nodeConfig[].mainInterface.name")
	}
	if len(reasons) > 0 || d.cfg == nil {
		return
	}
	if name := d.nodeConfig().MainInterface.Name; name != "" {
		d.add(verdictOK, "main-nic", "main NIC configured: "+name, "")
	} else if d.status.VPP.Connected {
		d.add(verdictOK, "main-nic", "main NIC found by the node IP (nodeConfig[].mainInterface.name unset)", "")
	}
}

func (d *doctor) checkSync(first, reprogram []string) {
	c := d.status.Controller
	if d.built && !c.EtcdConnected {
		d.add(verdictFail, "etcd", "the agent is not connected to etcd", "check etcd.endpoints (CONTIV_ETCD_ENDPOINTS): addresses reachable from the host network, no Service names")
	}
	for _, r := range first {
		fix := ""
		if c.LastError != "" {
			fix = "last controller error: " + c.LastError
		}
		d.add(verdictFail, "first-sync", r, fix)
	}
	for _, r := range reprogram {
		d.add(verdictWarn, "reprogram", r, "transient after a VPP restart or reconnect; if it stays, "+failuresHint)
	}
}

func (d *doctor) checkPending(reasons []string) {
	pending := d.pending()
	for _, p := range pending {
		verdict := verdictWarn // within the grace: VPP or the CNI may be about to create it
		for _, r := range reasons {
			if strings.Contains(r, "interface "+p.Name+" ") {
				verdict = verdictFail
			}
		}
		role, fix := d.interfaceRole(p.Name)
		d.add(verdict, "interface", fmt.Sprintf("%s %s is pending: VPP has no such interface (%s wait, since %s)",
			role, p.Name, orDash(p.Waits), p.Since.UTC().Format(time.RFC3339)), fix)
	}
	if len(pending) == 0 && d.built && d.status.VPP.Connected {
		d.add(verdictOK, "interface", "no interface configuration of the renderer waits for an interface", "")
	}
}

// pending lists the interfaces the renderer's configuration waits for,
// sorted by name: from the renderer view, or, without it, from the
// status (an older agent's NAT44 features).
func (d *doctor) pending() []restapi.RendererPending {
	if d.renderer != nil {
		return d.renderer.Pending
	}
	var out []restapi.RendererPending
	for _, p := range d.status.Pending {
		waits := "its configuration"
		if p.Features != 0 {
			waits = "NAT44 features " + p.Features.String()
		}
		out = append(out, restapi.RendererPending{Name: p.Name, Since: p.Since, Waits: waits})
	}
	slices.SortFunc(out, func(a, b restapi.RendererPending) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// checkPendingTables names the FIB tables whose routes wait for VPP to
// make them; without the renderer view, the reasons as they are.
func (d *doctor) checkPendingTables(reasons []string) {
	if d.renderer == nil {
		for _, r := range reasons {
			d.add(verdictFail, "fib-table", r, "")
		}
		return
	}
	for _, p := range d.renderer.PendingTables {
		vrf := strconv.FormatUint(uint64(p.VRF), 10)
		verdict := verdictWarn
		for _, r := range reasons {
			if strings.Contains(r, reasonTable+vrf+" ") {
				verdict = verdictFail
			}
		}
		d.add(verdict, "fib-table", fmt.Sprintf("FIB table %s is pending: VPP has no such table (%d routes wait, since %s)",
			vrf, len(p.Routes), p.Since.UTC().Format(time.RFC3339)),
			"VPP's startup configuration must make table "+vrf+" ('vppctl show ip fib table "+vrf+"'); the routes are added once it exists")
	}
}

// interfaceRole says what a named interface is to the agent and how VPP
// comes to have it.
func (d *doctor) interfaceRole(name string) (role, fix string) {
	if d.cfg == nil {
		return "interface", "check 'vppctl show interface' and the CNI"
	}
	nc := d.nodeConfig()
	switch {
	case name == nc.MainInterface.Name:
		return "main NIC", "VPP's startup configuration must bring up " + name + " ('vppctl show interface " + name + "')"
	case name == nc.HostInterconnectInterface:
		return "host interconnect (routing.hostInterconnectInterface)", "create the tap to the host in VPP's startup configuration (VPP names it tapN: 'create tap id N host-if-name ...'; " +
			"a tap needs /dev/vhost-net), or an af_packet veth instead (VPP names it host-<veth>: 'create host-interface name <veth>'), " +
			"then set routing.hostInterconnectInterface to the name VPP gave it (docs/vpp-node.md)"
	case name == nc.VXLANBVIInterface && d.cfg.Routing.NodeToNodeTransport == contivconf.TransportVXLAN:
		return "VXLAN BVI (routing.vxlanBVIInterface)", "create the loopback that serves as the VXLAN bridge's BVI (VPP names it loopN or bviN), or set routing.vxlanBVIInterface to its name"
	}
	for _, o := range nc.OtherInterfaces {
		if o.Name == name {
			return "other NIC (nodeConfig[].otherInterfaces)", "VPP's startup configuration must bring up " + name
		}
	}
	return "pod interface", "the CNI creates pod interfaces and tags them \"" + d.cfg.NAT44.PodInterfaceTag + "\"; check 'vppctl show interface' and the CNI's logs"
}

// checkRenderer reports the objects VPP refused and the contested
// frontends, the same way under every renderer.
func (d *doctor) checkRenderer() {
	v := d.renderer
	if v == nil || !d.built {
		return
	}
	for _, f := range v.Failures {
		svc, op := "", ""
		if f.Service != nil {
			svc = " of " + f.Service.String()
		}
		if f.Op != "" {
			op = " (" + f.Op + ")"
		}
		d.add(verdictFail, v.Renderer, fmt.Sprintf("VPP refused %s%s%s: %s", f.Object, svc, op, f.Error),
			"not retried until the object changes or a full resync; "+failuresHint)
	}
	for _, c := range v.Conflicts {
		d.add(verdictWarn, v.Renderer, fmt.Sprintf("frontend %s is claimed by %s and %s; %s wins", c.Frontend, c.Winner, joinStrings(c.Losers, ","), c.Winner), "")
	}
	if len(v.Failures) == 0 {
		d.add(verdictOK, v.Renderer, "VPP accepted every object the "+v.Renderer+" renderer programmed", "")
	}
}

func (d *doctor) checkEtcdWrites() {
	for _, w := range []struct {
		name string
		st   writeStatus
	}{{"nodesync", d.status.NodeSync}, {"ipam", d.status.IPAM}} {
		switch {
		case w.st.Stalled:
			d.add(verdictFail, w.name, "writes to etcd refused for good: "+orDash(w.st.LastError), "see docs/operations.md, \"etcd down\"")
		case w.st.Failures > 0:
			d.add(verdictWarn, w.name, fmt.Sprintf("writes to etcd failing (%d failures): %s", w.st.Failures, orDash(w.st.LastError)), "they are retried; check etcd")
		}
	}
}

// checkAddressClash names this node's VPP addresses that are another
// node's address (plugins/nodesync clash.go).
func (d *doctor) checkAddressClash() {
	for _, c := range d.status.NodeSync.Clashes {
		d.add(verdictWarn, "address-clash", c, "the node ID gives this node's VPP another node's address: keep ipam.nodeInterconnectCIDR off the nodes' network (docs/operations.md, \"Node IDs\")")
	}
}

// checkOwnAddrs explains the wait for this node's own NodeSync record to
// come back from etcd with its VPP addresses (their NodePorts wait for it).
func (d *doctor) checkOwnAddrs(reasons []string) {
	for _, r := range reasons {
		verdict, fix := verdictWarn, "normally a moment on a node's first start; if it lasts, check that the agent is connected to etcd and can write (contivctl status, docs/operations.md)"
		if !d.status.Controller.EtcdConnected || d.status.NodeSync.Failures > 0 || d.status.NodeSync.Stalled {
			verdict, fix = verdictFail, "the node record cannot reach etcd: make etcd reachable and writable for the agent (docs/operations.md, \"etcd down\")"
		}
		d.add(verdict, "own-addresses", r, fix)
	}
}

// nodeConfig is this node's effective per-node configuration.
func (d *doctor) nodeConfig() contivconf.NodeConfig {
	return d.cfg.ForNode(d.status.Node)
}

// printFindings writes the findings, failures first.
func printFindings(w io.Writer, fs []finding) error {
	rank := map[string]int{verdictFail: 0, verdictWarn: 1, verdictOK: 2}
	fs = slices.Clone(fs)
	slices.SortStableFunc(fs, func(a, b finding) int { return cmp.Compare(rank[a.Verdict], rank[b.Verdict]) })
	t := newTable(w, "VERDICT", "CHECK", "DETAIL")
	for _, f := range fs {
		t.row(f.Verdict, f.Check, f.Detail)
		if f.Fix != "" {
			t.row("", "", "  fix: "+f.Fix)
		}
	}
	return t.flush()
}
