package core

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// ServiceTime is the simulated VPP's service time in the figures over its
// socket: about a real VPP 25.02's synchronous round trip (FACTS §7:
// ~0.23 ms per request/reply on the measuring machine).
const ServiceTime = 200 * time.Microsecond

// ProgramSize is the N of the programming and start-up figures.
const ProgramSize = 10000

// ProgramRun is W(N) programmed in full into an empty VPP served on a
// unix socket, through the agent's VPP client (govpp's socket client).
type ProgramRun struct {
	Calls               int
	SyncMS, PipelinedMS float64
}

// MeasureProgram times the full apply of W(n) into a fresh simulated VPP
// served on a socket with ServiceTime per request, through the NAT44
// renderer or (useCNAT) the cnat renderer, with every call waiting for its
// answer and pipelined, taking turns, runs times each; the medians are
// kept.
func MeasureProgram(ctx context.Context, env *Env, n, runs int, useCNAT bool, log *slog.Logger) (*ProgramRun, error) {
	w := workload.New(n)
	evs, err := AllEvents(w)
	if err != nil {
		return nil, err
	}
	out := &ProgramRun{}
	var syncMS, pipeMS []float64
	for run := range runs {
		for _, pipelined := range []bool{false, true} {
			took, calls, err := ProgramOnce(ctx, env, w, evs, pipelined, useCNAT)
			if err != nil {
				return nil, fmt.Errorf("n=%d (pipelined %v): %w", n, pipelined, err)
			}
			log.Info("W(N) programmed over the socket", "n", n, "run", run+1, "cnat", useCNAT, "pipelined", pipelined, "took", took, "calls", calls)
			if pipelined {
				pipeMS = append(pipeMS, MS(took))
			} else {
				syncMS = append(syncMS, MS(took))
			}
			if out.Calls != 0 && calls != out.Calls {
				return nil, fmt.Errorf("n=%d: %d calls and %d calls for the same programming", n, out.Calls, calls)
			}
			out.Calls = calls
		}
	}
	out.SyncMS, out.PipelinedMS = Median(syncMS), Median(pipeMS)
	return out, nil
}

// synchronous hides a VPP client's Pipeline: the renderer then waits for
// every answer. Its ACL port stays: source ranges are enforced either way.
type synchronous struct {
	nat44.VPP
	nat44.ACLVPP
}

// synchronousCNAT is synchronous for the cnat client.
type synchronousCNAT struct{ cnat.VPP }

// ProgramOnce is one full apply of W(N) into an empty socket-served VPP:
// its wall time and the binary-API calls the VPP received; with useCNAT
// through the cnat renderer.
func ProgramOnce(ctx context.Context, env *Env, w *workload.Workload, evs *Events, pipelined, useCNAT bool) (time.Duration, int, error) {
	quiet := slog.New(slog.DiscardHandler)
	v, err := NodeVPP(env, w, sim.Options{ServiceTime: ServiceTime})
	if err != nil {
		return 0, 0, err
	}
	defer v.Close()
	dir, err := os.MkdirTemp("", "contiv-bench-vpp-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	srv, err := v.Serve(filepath.Join(dir, "api.sock"))
	if err != nil {
		return 0, 0, err
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	vc := vpp.Config{Socket: srv.Path(), Logger: quiet, HealthInterval: time.Minute}
	if useCNAT {
		vc.ExtraMessages = vpp.CNATMessages()
	}
	conn := vpp.New(vc)
	conn.Start(ctx)
	defer conn.Close()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := conn.WaitConnected(wctx); err != nil {
		return 0, 0, fmt.Errorf("simulated VPP on its socket: %w", err)
	}
	ifaces := vpp.NewInterfaces(conn, nil)
	if err := ifaces.Refresh(ctx); err != nil {
		return 0, 0, fmt.Errorf("simulated VPP interfaces: %w", err)
	}
	var p *Pipeline
	if useCNAT {
		var client cnat.VPP = vpp.NewCNAT(conn, ifaces, quiet)
		if !pipelined {
			client = synchronousCNAT{client}
		}
		p, err = env.NewCNATPipeline(client, ifaces)
	} else {
		nc := vpp.NewNAT44(conn, ifaces, quiet)
		var client nat44.VPP = nc
		if !pipelined {
			client = synchronous{nc, nc}
		}
		p, err = env.NewPipeline(client, ifaces)
	}
	if err != nil {
		return 0, 0, err
	}
	if err := p.Proc.Resync(ctx, &controller.ResyncEvent{Kind: controller.ResyncStartup, State: evs.Snap}); err != nil {
		return 0, 0, err
	}
	v.ResetCalls()
	t0 := time.Now()
	if err := p.Apply(ctx, true); err != nil {
		return 0, 0, err
	}
	took := time.Since(t0)
	if err := p.Check(); err != nil {
		return 0, 0, err
	}
	calls := 0
	for _, c := range v.CallCounts() {
		calls += c
	}
	return took, calls, nil
}

// NodeVPP is a simulated VPP with node 1's interfaces and W's local pods'.
func NodeVPP(env *Env, w *workload.Workload, opts sim.Options) (*sim.VPP, error) {
	v := sim.New(opts)
	v.CreateTable(env.Config.Routing.PodVRFID) // the startup configuration's pod VRF
	if err := env.AddInterfaces(v, w); err != nil {
		return nil, err
	}
	return v, nil
}

// addInterfaces gives v node 1's interfaces and those of W's local pods.
func (e *Env) AddInterfaces(v *sim.VPP, w *workload.Workload) error {
	for _, name := range []string{MainNIC, e.Config.Routing.HostInterconnectInterface, e.Config.Routing.VXLANBVIInterface} {
		if _, err := v.AddInterface(name, ""); err != nil {
			return err
		}
	}
	for _, p := range w.Pods {
		name, tag := e.PodInterface(p.Namespace, p.Name)
		if _, err := v.AddInterface(name, tag); err != nil {
			return err
		}
	}
	return nil
}

// ProgramRows are the rows of W(N) programmed over the socket (p nil: none).
func ProgramRows(t *Rows, prefix string, p *VPPProgramResult) {
	if p == nil {
		return
	}
	t.AddSingle(fmt.Sprintf("%sW(%d) programmed over the VPP socket, %.0f µs per request, median of %d: synchronous (ms; calls)", prefix, p.N, p.ServiceUS, p.Runs),
		fmt.Sprintf("%.0f (%d)", p.SyncMS, p.Calls), "", "")
	t.AddSingle("… pipelined (ms; calls/s)", fmt.Sprintf("%.0f (%.0f/s)", p.PipelinedMS, float64(p.Calls)/(p.PipelinedMS/1000)),
		"≤ 500", Verdict(p.N == TargetSize, func() bool { return p.PipelinedMS <= targetPipelinedMS }))
}

// VPPProgramResult is W(N) programmed in full into an empty simulated
// VPP served on a unix socket, through the agent's client.
type VPPProgramResult struct {
	// Calls are the binary-API calls the VPP received (dumps included).
	Calls int `json:"calls"`
	// ServiceUS is the VPP's service time per request, µs.
	ServiceUS float64 `json:"service_us"`
	// SyncMS: every call waits for its answer; PipelinedMS: calls in
	// flight on one connection. Wall time of the full apply, ms.
	SyncMS      float64 `json:"sync_ms"`
	PipelinedMS float64 `json:"pipelined_ms"`
	N           int     `json:"-"`
	// Runs is the number of runs of each (medians).
	Runs int `json:"-"`
}

// targetPipelinedMS is issue 14's target for W(10000) programmed
// pipelined over the socket.
const targetPipelinedMS = 500
