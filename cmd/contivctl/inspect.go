package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"contiv.dev/vpp/agent/restapi"
	"contiv.dev/vpp/kubestate"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// inspectSwitch is a boolean flag of an inspecting command: --name sets *p.
type inspectSwitch struct {
	p           *bool
	name, usage string
}

// newInspect parses the flags of an inspecting command (--agent, -o and
// its switches) and returns its agent client.
func newInspect(s streams, name string, args []string, switches ...inspectSwitch) (*agentClient, outputFlag, error) {
	synopsis := ""
	for _, sw := range switches {
		synopsis += "[--" + sw.name + "] "
	}
	fs := newFlagSet(s, name, synopsis+"[--agent URL] [-o table|json]")
	var af agentFlags
	var of outputFlag
	af.register(fs)
	of.register(fs)
	for _, sw := range switches {
		fs.BoolVar(sw.p, sw.name, false, sw.usage)
	}
	if err := parse(fs, args); err != nil {
		return nil, of, err
	}
	if err := of.check(); err != nil {
		return nil, of, err
	}
	c, err := af.client()
	return c, of, err
}

func runServices(ctx context.Context, s streams, args []string) error {
	var skipped bool
	c, of, err := newInspect(s, "services", args, inspectSwitch{&skipped, "skipped", "list the services and ports left out, and why, instead"})
	if err != nil {
		return err
	}
	if skipped {
		var rows []skipRow
		if printed, err := c.show(ctx, s.out, of, "/v1/skipped", &rows); printed || err != nil {
			return err
		}
		return printSkipped(s.out, rows)
	}
	var svcs []*sr.ContivService
	if printed, err := c.show(ctx, s.out, of, "/v1/services", &svcs); printed || err != nil {
		return err
	}
	// Which services' source ranges this node does not enforce, and why:
	// best effort (an older agent's notes say what each renderer does).
	var notEnforced map[sr.ServiceID]string
	var skips []skipRow
	if _, err := c.view(ctx, "/v1/skipped", &skips); err == nil {
		notEnforced = map[sr.ServiceID]string{}
		for _, k := range skips {
			if k.Reason == "source-ranges-not-enforced" {
				_, why, _ := strings.Cut(k.Detail, " NOT enforced: ")
				notEnforced[k.Service] = why
			}
		}
	}
	if err := printServices(s.out, svcs, notEnforced); err != nil {
		return err
	}
	// The NAT44 renderer's subsets (VPP's u8 probability sum): best effort,
	// an agent running cnat (409) or an older one has none to show.
	var v restapi.NAT44View
	if _, err := c.view(ctx, "/v1/nat44", &v); err != nil {
		return nil
	}
	return printSubsetNotes(s.out, v.Subsets)
}

// printSubsetNotes writes a line per frontend that this node serves with
// part of its endpoints (contivctl nat44 has the table).
func printSubsetNotes(w io.Writer, subsets []nat44.SubsetStatus) error {
	var b strings.Builder
	for _, sub := range subsets {
		fmt.Fprintf(&b, "%s: %s served by %d of its %d endpoints on this node (%d of %d local): VPP 25.02 sums a NAT44 mapping's probabilities in a u8 (see contivctl nat44)\n",
			sub.Service, sub.Frontend, sub.Used, sub.Endpoints, sub.UsedLocal, sub.Local)
	}
	if b.Len() == 0 {
		return nil
	}
	_, err := io.WriteString(w, "\n"+b.String())
	return err
}

// printServices writes one row per service port; the service's own
// columns are on its first row.
func printServices(w io.Writer, svcs []*sr.ContivService, notEnforced map[sr.ServiceID]string) error {
	t := newTable(w, "SERVICE", "CLUSTER-IPS", "EXTERNAL-IPS", "PORT", "BACKENDS", "NODEPORT", "POLICY EXT/INT", "AFFINITY")
	for _, svc := range svcs {
		if svc == nil {
			continue
		}
		head := []string{
			svc.ID.String(),
			orDash(joinStrings(svc.ClusterIPs, ",")),
			orDash(joinStrings(svc.ExternalIPs, ",")),
		}
		tail := []string{svc.ExternalPolicy.String() + "/" + svc.InternalPolicy.String(), "-"}
		if svc.AffinityTimeout > 0 {
			tail[1] = "ClientIP " + strconv.FormatUint(uint64(svc.AffinityTimeout), 10) + "s"
		}
		if len(svc.Ports) == 0 {
			t.row(append(append(head, "-", "-", "-"), tail...)...)
		}
		for i, p := range svc.Ports {
			if i > 0 {
				head = []string{"", "", ""}
				tail = []string{"", ""}
			}
			port := fmt.Sprintf("%s %d/%s", orDash(p.Name), p.Port, p.Protocol)
			np := "-"
			if p.NodePort != 0 {
				np = strconv.Itoa(int(p.NodePort))
			}
			t.row(append(append(head, port, backendCount(svc, &p), np), tail...)...)
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	return printServiceNotes(w, svcs, notEnforced)
}

// printServiceNotes writes, under the table, what a row cannot say: a
// service's health-check NodePort, and source ranges the agent does not
// enforce (said loudly: the operator believes traffic is filtered), with
// the reason notEnforced gives (nil: unknown, what each renderer does).
func printServiceNotes(w io.Writer, svcs []*sr.ContivService, notEnforced map[sr.ServiceID]string) error {
	var b strings.Builder
	for _, svc := range svcs {
		if svc == nil {
			continue
		}
		if svc.HealthCheckNodePort != 0 {
			fmt.Fprintf(&b, "%s: health-check NodePort %d (answered by the agent on every node)\n", svc.ID, svc.HealthCheckNodePort)
		}
		if len(svc.SourceRanges) > 0 {
			ranges := joinStrings(svc.SourceRanges, ",")
			why, not := notEnforced[svc.ID]
			switch {
			case notEnforced == nil:
				fmt.Fprintf(&b, "%s: source ranges %s: enforced under renderer nat44 (input ACL on the main NIC, VPP's acl_plugin.so), NOT enforced under cnat (every client reaches the service)\n",
					svc.ID, ranges)
			case not:
				fmt.Fprintf(&b, "%s: source ranges %s: NOT enforced on this node: %s\n", svc.ID, ranges, orDash(why))
			default:
				fmt.Fprintf(&b, "%s: source ranges %s: enforced (input ACL on the main NIC)\n", svc.ID, ranges)
			}
		}
	}
	if b.Len() == 0 {
		return nil
	}
	_, err := io.WriteString(w, "\n"+b.String())
	return err
}

// backendCount is "N", with how many are local, and the local set's size
// when a Local policy uses it.
func backendCount(svc *sr.ContivService, p *sr.Port) string {
	local := 0
	for _, b := range p.Backends {
		if b.Local {
			local++
		}
	}
	s := strconv.Itoa(len(p.Backends))
	if local > 0 {
		s += fmt.Sprintf(" (%d local)", local)
	}
	if svc.ExternalPolicy == sr.PolicyLocal || svc.InternalPolicy == sr.PolicyLocal {
		s += fmt.Sprintf(", Local policy: %d", len(p.LocalBackends))
	}
	return s
}

// skipRow is one entry of the /v1/skipped view (service.Skip; its Reason
// arrives as its name).
type skipRow struct {
	Service sr.ServiceID
	Object  kubestate.Key
	Port    string
	Reason  string
	Detail  string
}

func printSkipped(w io.Writer, rows []skipRow) error {
	if len(rows) == 0 {
		_, err := io.WriteString(w, "nothing skipped\n")
		return err
	}
	t := newTable(w, "SERVICE", "OBJECT", "PORT", "REASON", "DETAIL")
	for _, r := range rows {
		obj := string(r.Object.Resource) + " " + r.Object.Name
		if r.Object.Namespace != "" {
			obj = string(r.Object.Resource) + " " + r.Object.Namespace + "/" + r.Object.Name
		}
		t.row(r.Service.String(), obj, orDash(r.Port), r.Reason, orDash(r.Detail))
	}
	return t.flush()
}

func runNAT44(ctx context.Context, s streams, args []string) error {
	var applied bool
	c, of, err := newInspect(s, "nat44", args, inspectSwitch{&applied, "applied", "the state VPP holds (as the agent applied it) instead of the desired state"})
	if err != nil {
		return err
	}
	var v restapi.NAT44View
	if printed, err := c.show(ctx, s.out, of, "/v1/nat44", &v); printed || err != nil {
		return err
	}
	lines := v.Desired
	if applied {
		lines = v.Applied
	}
	if err := printNAT44(s.out, lines, v.Failures, v.Conflicts); err != nil {
		return err
	}
	return printSubsets(s.out, v.Subsets)
}

// printSubsets writes the frontends served by a subset of their
// endpoints, when there are any.
func printSubsets(w io.Writer, subsets []nat44.SubsetStatus) error {
	return section(w, "SUBSETS (%d): frontends served by part of their endpoints (VPP 25.02 sums a mapping's probabilities in a u8: at most 255)", subsets,
		[]string{"FRONTEND", "SERVICE", "ENDPOINTS", "USED", "LEFT-OUT", "LOCAL USED/ALL", "LOCAL WEIGHT"}, func(s nat44.SubsetStatus) []string {
			return []string{s.Frontend.String(), s.Service.String(), strconv.Itoa(s.Endpoints), strconv.Itoa(s.Used), strconv.Itoa(s.LeftOut()),
				strconv.Itoa(s.UsedLocal) + "/" + strconv.Itoa(s.Local), strconv.Itoa(int(s.LocalWeight))}
		})
}

// printNAT44 writes the state lines, then the failures and the conflicts
// when there are any.
func printNAT44(w io.Writer, lines []string, failures []nat44.Failure, conflicts []nat44.Conflict) error {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	err := section(w, failuresTitle, failures, []string{"OBJECT", "SERVICE", "CALL", "REASON"}, func(f nat44.Failure) []string {
		svc, op := "-", "-"
		if f.Service != (sr.ServiceID{}) {
			svc = f.Service.String()
		}
		if f.Op != 0 {
			op = f.Op.String()
		}
		return []string{f.Object.String(), svc, op, f.Reason}
	})
	if err == nil {
		err = section(w, conflictsTitle, conflicts, conflictHeader, func(c nat44.Conflict) []string {
			return []string{c.Key.String(), c.Winner.String(), joinStrings(c.Losers, ",")}
		})
	}
	return err
}

func runNodes(ctx context.Context, s streams, args []string) error {
	c, of, err := newInspect(s, "nodes", args)
	if err != nil {
		return err
	}
	var nodes []*kubestate.VppNode
	if printed, err := c.show(ctx, s.out, of, "/v1/nodes", &nodes); printed || err != nil {
		return err
	}
	nodes = slices.DeleteFunc(nodes, func(n *kubestate.VppNode) bool { return n == nil })
	slices.SortFunc(nodes, func(a, b *kubestate.VppNode) int { return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Name, b.Name)) })
	t := newTable(s.out, "NAME", "ID", "VPP-IPS", "MGMT-IPS")
	for _, n := range nodes {
		t.row(n.Name, strconv.FormatUint(uint64(n.ID), 10), orDash(strings.Join(n.VppIPs, ",")), orDash(strings.Join(n.MgmtIPs, ",")))
	}
	return t.flush()
}

func runIPAM(ctx context.Context, s streams, args []string) error {
	c, of, err := newInspect(s, "ipam", args)
	if err != nil {
		return err
	}
	var v restapi.IPAMView
	if printed, err := c.show(ctx, s.out, of, "/v1/ipam", &v); printed || err != nil {
		return err
	}
	str := func(x fmt.Stringer, valid bool) string {
		if !valid {
			return "-"
		}
		return x.String()
	}
	t := newTable(s.out)
	t.row("NODE ID", strconv.FormatUint(uint64(v.NodeID), 10))
	t.row("POD SUBNET", str(v.PodSubnet, v.PodSubnet.IsValid())+" (of "+str(v.PodSubnetAll, v.PodSubnetAll.IsValid())+")")
	t.row("POD GATEWAY", str(v.PodGateway, v.PodGateway.IsValid()))
	t.row("NAT LOOPBACK", str(v.NATLoopback, v.NATLoopback.IsValid()))
	t.row("HOST INTERCONNECT", str(v.HostInterconnect, v.HostInterconnect.IsValid()))
	t.row("NODE IP", str(v.NodeIP, v.NodeIP.IsValid()))
	t.row("VXLAN IP", str(v.VXLANIP, v.VXLANIP.IsValid()))
	t.row("SERVICE CIDR", str(v.ServiceCIDR, v.ServiceCIDR.IsValid()))
	if err := t.flush(); err != nil {
		return err
	}
	switch {
	case v.Pods == nil:
		_, err := io.WriteString(s.out, "\npod allocations: not known yet (IPAM has not started)\n")
		return err
	case len(v.Pods) == 0:
		_, err := io.WriteString(s.out, "\npod allocations: none (this agent has allocated no pod IP)\n")
		return err
	}
	fmt.Fprintf(s.out, "\nPOD ALLOCATIONS (%d)\n", len(v.Pods))
	t = newTable(s.out, "POD", "IP")
	pods := slices.Collect(maps.Keys(v.Pods))
	slices.SortFunc(pods, func(a, b string) int { return cmp.Or(v.Pods[a].Compare(v.Pods[b]), cmp.Compare(a, b)) })
	for _, p := range pods {
		t.row(p, v.Pods[p].String())
	}
	return t.flush()
}

// agentStatus is the /v1/status view (restapi.StatusView) as contivctl
// reads it, for status and doctor: the resync kind arrives as its name, and
// a field an older agent does not send stays zero.
type agentStatus struct {
	Node     string   `json:"node"`
	NodeID   uint32   `json:"nodeID"`
	Ready    bool     `json:"ready"`
	NotReady []string `json:"notReady"`
	// FirstSyncApplied is false from agents before it: Controller.Ready
	// then stands for it.
	FirstSyncApplied bool `json:"firstSyncApplied"`
	Controller       struct {
		Ready          bool      `json:"ready"`
		LastResync     time.Time `json:"lastResync"`
		LastResyncKind string    `json:"lastResyncKind"`
		Resyncs        uint64    `json:"resyncs"`
		Batches        uint64    `json:"batches"`
		Events         uint64    `json:"events"`
		QueueDepth     int       `json:"queueDepth"`
		Revision       int64     `json:"revision"`
		Relists        uint64    `json:"relists"`
		EtcdConnected  bool      `json:"etcdConnected"`
		DecodeErrors   uint64    `json:"decodeErrors"`
		LastError      string    `json:"lastError"`
		LastErrorTime  time.Time `json:"lastErrorTime"`
		Errors         uint64    `json:"errors"`
	} `json:"controller"`
	VPP struct {
		Connected      bool      `json:"connected"`
		Simulated      bool      `json:"simulated"`
		Socket         string    `json:"socket"`
		Version        string    `json:"version"`
		Release        string    `json:"release"`
		PID            uint32    `json:"pid"`
		Since          time.Time `json:"since"`
		Connects       int       `json:"connects"`
		Restarts       int       `json:"restarts"`
		LastError      string    `json:"lastError"`
		MissingPlugins []string  `json:"missingPlugins"`
	} `json:"vpp"`
	Pending     []pendingIf `json:"pending"`
	NodeSync    writeStatus `json:"nodesync"`
	IPAM        writeStatus `json:"ipam"`
	ProxyHealth *struct {
		LastUpdated  time.Time `json:"lastUpdated"`
		Healthy      bool      `json:"healthy"`
		NodeEligible bool      `json:"nodeEligible"`
	} `json:"proxyHealth"`
	Note string `json:"note"`
}

// proxyHealthLine tells what /healthz and /livez answer: /livez follows
// the proxy's health, /healthz also fails while the node is to be deleted
// by the cluster autoscaler (draining).
func proxyHealthLine(healthy, eligible bool) string {
	code := func(ok bool) string {
		if ok {
			return "200"
		}
		return "503"
	}
	s := "/healthz " + code(healthy && eligible) + ", /livez " + code(healthy)
	if !eligible {
		s += " (node DRAINING: tainted " + kubestate.TaintToBeDeleted + ")"
	}
	return s
}

func runStatus(ctx context.Context, s streams, args []string) error {
	c, of, err := newInspect(s, "status", args)
	if err != nil {
		return err
	}
	var v agentStatus
	if printed, err := c.show(ctx, s.out, of, "/v1/status", &v); printed || err != nil {
		return err
	}
	// The renderer's counters, in one shape whichever runs.
	var rv *restapi.RendererView
	rend := ""
	if _, err := c.view(ctx, "/v1/renderer", &rv); err != nil {
		rend = "unknown: " + err.Error()
	} else {
		rend = rendererLine(rv)
	}
	yesNo := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	when := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.Format(time.RFC3339)
	}
	t := newTable(s.out)
	t.row("NODE", fmt.Sprintf("%s (ID %d)", v.Node, v.NodeID))
	// A held listing makes the controller not ready, yet what it applied
	// before stays applied (the held listing is among the NOT READY rows).
	applied := v.FirstSyncApplied || v.Controller.Ready
	t.row("READY", yesNo(v.Ready)+" (first full sync applied: "+yesNo(applied)+", VPP connected: "+yesNo(v.VPP.Connected)+")")
	for _, why := range v.NotReady {
		t.row("NOT READY", why)
	}
	vpp := "not connected"
	if v.VPP.Connected {
		vpp = fmt.Sprintf("connected to %s, pid %d, since %s", orDash(v.VPP.Version), v.VPP.PID, when(v.VPP.Since))
	}
	if v.VPP.Simulated {
		vpp += ", SIMULATED"
	} else if v.VPP.Socket != "" {
		vpp += ", socket " + v.VPP.Socket
	}
	t.row("VPP", fmt.Sprintf("%s; %d connects, %d restarts seen", vpp, v.VPP.Connects, v.VPP.Restarts))
	if len(v.VPP.MissingPlugins) > 0 {
		t.row("VPP LACKS", strings.Join(v.VPP.MissingPlugins, ",")+" (optional: what needs it is not done; contivctl doctor)")
	}
	if v.VPP.LastError != "" {
		t.row("VPP LAST ERROR", v.VPP.LastError)
	}
	cs := v.Controller
	t.row("LAST RESYNC", fmt.Sprintf("%s (%s); %d resyncs, %d relists of etcd", when(cs.LastResync), orDash(cs.LastResyncKind), cs.Resyncs, cs.Relists))
	t.row("CONTROLLER", fmt.Sprintf("%d batches, %d events, queue depth %d, revision %d, etcd connected: %s, undecodable values: %d",
		cs.Batches, cs.Events, cs.QueueDepth, cs.Revision, yesNo(cs.EtcdConnected), cs.DecodeErrors))
	errs := strconv.FormatUint(cs.Errors, 10)
	if cs.LastError != "" {
		errs += fmt.Sprintf("; last at %s: %s", when(cs.LastErrorTime), cs.LastError)
	}
	t.row("ERRORS", errs)
	for _, c := range v.NodeSync.Clashes {
		t.row("ADDRESS CLASH", c)
	}
	t.row("RENDERER", rend)
	if ph := v.ProxyHealth; ph != nil {
		t.row("PROXY HEALTH", proxyHealthLine(ph.Healthy, ph.NodeEligible)+"; last update "+when(ph.LastUpdated))
	}
	if v.Note != "" {
		t.row("NOTE", v.Note)
	}
	return t.flush()
}
