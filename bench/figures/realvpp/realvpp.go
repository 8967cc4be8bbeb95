package realvpp

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/vlib"
	govpp "go.fd.io/govpp/core"

	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/vpp"
)

// FigRealVPP is the family's one figure.
const FigRealVPP core.FigureName = "real-vpp"

// Check refuses options without a real VPP's socket.
func Check(o core.Options) error {
	if o.VPPSocket == "" {
		return fmt.Errorf("%w: figure %q needs the socket of a real VPP (-vpp-socket)", core.ErrOptions, FigRealVPP)
	}
	return nil
}

// Results are the family's figure; its JSON field is a key of
// bench/results.json.
type Results struct {
	RealVPP *Result `json:"real_vpp,omitempty"`
}

// Result is W(N) programmed by the agent's pipeline into a real VPP
// (figure real-vpp, -vpp-socket): never in CI, which has no VPP.
type Result struct {
	N int `json:"n"`
	// Interfaces is the loopbacks made first: node 1's main NIC, host
	// interconnect and VXLAN BVI, and one per local pod (tagged as the
	// CNI tags them, in the pod VRF).
	Interfaces int `json:"interfaces"`
	// ProgramMS is the renderer's full apply into the VPP, pipelined, as
	// the agent's start-up does it.
	ProgramMS float64 `json:"program_ms"`
	// ReapplyMS is a second pipeline's full apply into the programmed VPP
	// (an agent restart's: VPP's dump read and compared, nothing to
	// write), through a connection of its own.
	ReapplyMS float64 `json:"reapply_ms"`
	// ReapplyCalls and ReapplyWrites are the VPP calls of that apply
	// (dumps included) and the mappings it added, removed or updated.
	ReapplyCalls  uint64 `json:"reapply_calls"`
	ReapplyWrites uint64 `json:"reapply_mapping_writes"`
	// Mappings is the NAT44 static mappings the VPP holds after it.
	Mappings int `json:"mappings"`
	// MainHeapUsedMB before and after the programming (`show memory
	// main-heap`: used), and the heap's size.
	MainHeapBeforeMB float64 `json:"main_heap_before_mb"`
	MainHeapAfterMB  float64 `json:"main_heap_after_mb"`
	MainHeapSizeMB   float64 `json:"main_heap_size_mb"`
	Version          string  `json:"vpp_version"`
}

// measureRealVPP programs W(n) into the real VPP on socket, which must be
// freshly started and used by nothing else (the figure makes loopbacks and
// tables in it): one run, since a second would find it programmed.
func measureRealVPP(ctx context.Context, env *core.Env, n int, socket string, log *slog.Logger) (*Result, error) {
	w := workload.New(n)
	evs, err := core.AllEvents(w)
	if err != nil {
		return nil, err
	}
	setup, err := govpp.Connect(socketclient.NewVppClient(socket))
	if err != nil {
		return nil, fmt.Errorf("VPP on %s: %w", socket, err)
	}
	defer setup.Disconnect()
	ch, err := setup.NewAPIChannel()
	if err != nil {
		return nil, err
	}
	defer ch.Close()
	res := &Result{N: n}
	if res.Version, err = cli(ch, "show version"); err != nil {
		return nil, err
	}
	res.Version = strings.TrimSpace(res.Version)

	// Node 1's interfaces, named as VPP names loopbacks.
	renv := *env
	names := make([]string, 3)
	for i := range names {
		idx, err := loopback(ch, "", 0)
		if err != nil {
			return nil, err
		}
		names[i] = "loop" + strconv.Itoa(int(idx))
	}
	renv.Config.Routing.HostInterconnectInterface, renv.Config.Routing.VXLANBVIInterface = names[1], names[2]
	renv.Config.NodeConfig = append(renv.Config.NodeConfig, contivconf.NodeOverride{
		NodeName: renv.Config.NodeName, MainInterface: &contivconf.InterfaceConfig{Name: names[0]}})
	podVRF := renv.Config.Routing.PodVRFID
	if err := do(ch, &ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: podVRF}}, &ip.IPTableAddDelReply{}); err != nil {
		return nil, fmt.Errorf("pod VRF %d: %w", podVRF, err)
	}
	for _, p := range w.Pods {
		_, tag := renv.PodInterface(p.Namespace, p.Name)
		if _, err := loopback(ch, tag, podVRF); err != nil {
			return nil, err
		}
	}
	res.Interfaces = len(names) + len(w.Pods)
	log.Info("real VPP: interfaces made", "n", n, "interfaces", res.Interfaces)

	p, closeP, err := realPipeline(ctx, &renv, socket, evs)
	if err != nil {
		return nil, err
	}
	defer closeP()
	if res.MainHeapSizeMB, res.MainHeapBeforeMB, err = mainHeap(ch); err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := p.Apply(ctx, true); err != nil {
		return nil, err
	}
	res.ProgramMS = core.MS(time.Since(t0))
	if err := p.Check(); err != nil {
		return nil, err
	}
	if _, res.MainHeapAfterMB, err = mainHeap(ch); err != nil {
		return nil, err
	}
	again, closeAgain, err := realPipeline(ctx, &renv, socket, evs)
	if err != nil {
		return nil, err
	}
	defer closeAgain()
	t1 := time.Now()
	if err := again.Apply(ctx, true); err != nil {
		return nil, err
	}
	res.ReapplyMS = core.MS(time.Since(t1))
	if r := again.NAT44(); r != nil {
		st := r.Stats()
		res.ReapplyCalls, res.ReapplyWrites = st.Calls, st.MappingsAdded+st.MappingsRemoved+st.MappingsUpdated+st.LocalsChanged
	}
	if res.Mappings, err = countMappings(ch); err != nil {
		return nil, err
	}
	log.Info("real VPP: W(N) programmed", "n", n, "took", time.Since(t0), "mappings", res.Mappings, "mainHeapMB", res.MainHeapAfterMB)
	return res, nil
}

// realPipeline is node 1's pipeline over an agent's VPP client of its own
// on socket, with W(N) taken in (not applied); close ends the client.
func realPipeline(ctx context.Context, env *core.Env, socket string, evs *core.Events) (*core.Pipeline, func(), error) {
	quiet := slog.New(slog.DiscardHandler)
	conn := vpp.New(vpp.Config{Socket: socket, Logger: quiet, HealthInterval: time.Minute})
	conn.Start(ctx)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := conn.WaitConnected(wctx); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("the agent's VPP client on %s: %w", socket, err)
	}
	ifaces := vpp.NewInterfaces(conn, nil)
	p, err := env.NewPipeline(vpp.NewNAT44(conn, ifaces, quiet), ifaces)
	if err == nil {
		err = ifaces.Refresh(ctx)
	}
	if err == nil {
		err = p.Proc.Resync(ctx, &controller.ResyncEvent{Kind: controller.ResyncStartup, State: evs.Snap})
	}
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return p, conn.Close, nil
}

// loopback makes a loopback, tagged when tag is set, in table vrf.
func loopback(ch api.Channel, tag string, vrf uint32) (interface_types.InterfaceIndex, error) {
	r := &interfaces.CreateLoopbackReply{}
	if err := do(ch, &interfaces.CreateLoopback{}, r); err != nil {
		return 0, fmt.Errorf("create_loopback: %w", err)
	}
	if tag != "" {
		if err := do(ch, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: r.SwIfIndex, Tag: tag}, &interfaces.SwInterfaceTagAddDelReply{}); err != nil {
			return 0, fmt.Errorf("tag %s: %w", tag, err)
		}
	}
	if vrf != 0 {
		if err := do(ch, &interfaces.SwInterfaceSetTable{SwIfIndex: r.SwIfIndex, VrfID: vrf}, &interfaces.SwInterfaceSetTableReply{}); err != nil {
			return 0, fmt.Errorf("loopback %d into VRF %d: %w", r.SwIfIndex, vrf, err)
		}
	}
	return r.SwIfIndex, nil
}

// do sends req and waits for its reply; a reply's non-zero retval is an
// error (govpp's ReceiveReply returns it).
func do(ch api.Channel, req, reply api.Message) error {
	return ch.SendRequest(req).ReceiveReply(reply)
}

// cli runs a debug CLI command in VPP (cli_inband) and returns its output.
func cli(ch api.Channel, cmd string) (string, error) {
	r := &vlib.CliInbandReply{}
	if err := do(ch, &vlib.CliInband{Cmd: cmd}, r); err != nil {
		return "", fmt.Errorf("cli %q: %w", cmd, err)
	}
	return r.Reply, nil
}

// heapLine is the totals line of `show memory main-heap`, e.g.
// "total: 1023.99M, used: 172.06M, free: 851.93M, trimmable: 850.91M".
var heapLine = regexp.MustCompile(`total: ([0-9.]+)([KMG]), used: ([0-9.]+)([KMG])`)

// mainHeap is VPP's main heap: its size and the part used, in MB.
func mainHeap(ch api.Channel) (sizeMB, usedMB float64, err error) {
	out, err := cli(ch, "show memory main-heap")
	if err != nil {
		return 0, 0, err
	}
	m := heapLine.FindStringSubmatch(out)
	if m == nil {
		return 0, 0, fmt.Errorf("show memory main-heap: no totals line in %q", out)
	}
	return megabytes(m[1], m[2]), megabytes(m[3], m[4]), nil
}

func megabytes(v, unit string) float64 {
	f, _ := strconv.ParseFloat(v, 64)
	switch unit {
	case "K":
		return f / 1024
	case "G":
		return f * 1024
	}
	return f
}

// countMappings is the NAT44 static mappings VPP holds, load-balanced or
// not.
func countMappings(ch api.Channel) (int, error) {
	lb, err := countDetails(ch, &nat44_ed.Nat44LbStaticMappingDump{}, &nat44_ed.Nat44LbStaticMappingDetails{})
	if err != nil {
		return 0, err
	}
	sm, err := countDetails(ch, &nat44_ed.Nat44StaticMappingDump{}, &nat44_ed.Nat44StaticMappingDetails{})
	return lb + sm, err
}

// countDetails is how many details the dump req is answered with (each
// read into reply).
func countDetails(ch api.Channel, req, reply api.Message) (int, error) {
	rc := ch.SendMultiRequest(req)
	for n := 0; ; n++ {
		last, err := rc.ReceiveReply(reply)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", req.GetMessageName(), err)
		}
		if last {
			return n, nil
		}
	}
}

// Run measures W(LargeSize) programmed into the real VPP.
func Run(ctx context.Context, env *core.Env, o core.Options, _ *core.Results, into *Results) error {
	o.Log.Info("real-vpp: W(N) programmed into the VPP on its socket", "n", o.LargeSize, "socket", o.VPPSocket)
	var err error
	into.RealVPP, err = measureRealVPP(ctx, env, o.LargeSize, o.VPPSocket, o.Log)
	return err
}

// Rows are the real-vpp figure's rows.
func Rows(_ *core.Results, r *Results, t *core.Rows) {
	if v := r.RealVPP; v != nil {
		t.AddSingle(fmt.Sprintf("W(%d) programmed into a real VPP (%s), pipelined (ms; NAT44 mappings; interfaces made first)", v.N, v.Version),
			fmt.Sprintf("%.0f (%d; %d)", v.ProgramMS, v.Mappings, v.Interfaces), "", "")
		t.AddSingle("… the same applied again by a second pipeline (a restart's full apply: dump read and compared) (ms; VPP calls; mapping writes)", fmt.Sprintf("%.0f (%d; %d)", v.ReapplyMS, v.ReapplyCalls, v.ReapplyWrites), "", "")
		t.AddSingle("… VPP main heap used before / after / size (MB)", fmt.Sprintf("%.1f / %.1f / %.0f", v.MainHeapBeforeMB, v.MainHeapAfterMB, v.MainHeapSizeMB), "", "")
	}
}
