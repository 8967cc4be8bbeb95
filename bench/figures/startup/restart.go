package startup

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"contiv.dev/vpp/agent"
	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// lateInterfaces is how long after a restart the simulated VPP re-creates
// its interfaces in the restart figure (a real VPP 25.02: ~2.2 s after its
// API answers; the target is counted from their appearance).
const lateInterfaces = 500 * time.Millisecond

// restartRun is what one restart measurement found at one N.
type restartRun struct {
	// agentWrites are the VPP writes of an agent restarted against a VPP
	// that holds W(N) already; agentReady its time from start to ready.
	agentWrites int
	agentReady  time.Duration
	// recovery is the time from the restarted VPP's interfaces appearing
	// to VPP holding all of W(N) again and the agent ready; notReadySeen
	// tells that readiness was false in between; reprogramWrites are the
	// writes of the reprogram.
	recovery        time.Duration
	total           time.Duration
	notReadySeen    bool
	reprogramWrites int
	// walked is VPP's main-thread time in the features' walks of the
	// mappings during the reprogram (sim.FeatureWalk).
	walked time.Duration
}

// measureRestart programs W(n) through the real agent into a simulated
// VPP served on its socket (core.ServiceTime per request, the feature walk
// modelled), then restarts the agent (counting its writes), then restarts the
// simulated VPP with its interfaces re-created lateInterfaces later and
// measures when everything is back.
func measureRestart(ctx context.Context, env *core.Env, n int, fastEtcd bool, logOut io.Writer) (*restartRun, error) {
	m, _, _, closeEtcd, err := core.EtcdHolding(ctx, fastEtcd, n)
	if err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	defer closeEtcd()
	cfg, dir, removeDir, err := env.AgentConfig(m.Endpoint(), "restart")
	if err != nil {
		return nil, err
	}
	defer removeDir()
	// VPP as the agent meets it: served on its socket, with a real VPP's
	// round trip and the main thread's walk of every mapping when an
	// outside feature is enabled (FACTS §7).
	v := sim.New(sim.Options{ServiceTime: core.ServiceTime, FeatureWalk: sim.VPP2502FeatureWalk})
	defer v.Close()
	cfg.VPP.Socket = filepath.Join(dir, "api.sock")
	srv, err := v.Serve(cfg.VPP.Socket)
	if err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	defer srv.Close()
	start := func() (*agent.Agent, func(), time.Duration, error) {
		t0 := time.Now()
		a, err := agent.New(ctx, agent.Options{Config: cfg, Dataplane: socketServed{agent.Simulated(v)}, LogOutput: logOut})
		if err != nil {
			return nil, nil, 0, fmt.Errorf("restart: agent: %w", err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.Run(runCtx) }()
		stop := func() { cancel(); <-done }
		if err := core.WaitUntil(ctx, 5*time.Minute, a.Ready); err != nil {
			stop()
			return nil, nil, 0, fmt.Errorf("restart: agent not ready: %w", err)
		}
		took := time.Since(t0)
		if err := core.Quiesce(ctx, a, v); err != nil {
			stop()
			return nil, nil, 0, err
		}
		return a, stop, took, nil
	}
	_, stop, _, err := start()
	if err != nil {
		return nil, err
	}
	want := strings.Join(v.Snapshot().Lines(), "\n")
	stop()

	out := &restartRun{}
	v.ResetCalls()
	a, stop, took, err := start()
	if err != nil {
		return nil, err
	}
	defer stop()
	out.agentWrites, out.agentReady = v.Writes(), took

	have := len(v.Interfaces())
	v.ResetCalls()
	walked := v.Walked()
	restarted := time.Now()
	v.RestartWith(sim.RestartOptions{InterfacesAfter: lateInterfaces})
	var appeared time.Time
	err = core.WaitUntil(ctx, restartWait, func() bool {
		if !a.Ready() {
			out.notReadySeen = true
		}
		if appeared.IsZero() {
			if len(v.Interfaces()) < have {
				return false
			}
			appeared = time.Now()
		}
		return a.Ready() && strings.Join(v.Snapshot().Lines(), "\n") == want
	})
	if err != nil {
		return nil, fmt.Errorf("restart: W(%d) not back after a VPP restart (ready %v; VPP state %s): %w", n, a.Ready(), firstDiff(want, strings.Join(v.Snapshot().Lines(), "\n")), err)
	}
	out.recovery, out.total = time.Since(appeared), time.Since(restarted)
	out.reprogramWrites = v.Writes()
	out.walked = v.Walked() - walked
	if c := v.Crashes(); c != 0 {
		return nil, fmt.Errorf("restart: the simulated VPP crashed: %s", v.LastCrash())
	}
	return out, nil
}

// restartSizes are the N of the restart figure: those of BENCH's
// targets that the run measures.
func restartSizes(sizes []int) []int {
	var out []int
	for _, n := range []int{1000, 10000} {
		if slices.Contains(sizes, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		out = sizes[:1]
	}
	return out
}

// firstDiff names the first line where have differs from want, for an error.
func firstDiff(want, have string) string {
	w, h := strings.Split(want, "\n"), strings.Split(have, "\n")
	for i := range max(len(w), len(h)) {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(h) {
			b = h[i]
		}
		if a != b {
			return fmt.Sprintf("differs at line %d of %d/%d: want %q, have %q", i+1, len(w), len(h), a, b)
		}
	}
	return "as before the restart"
}

// restartWait bounds the wait for a restarted VPP to be reprogrammed (a
// hung benchmark only).
var restartWait = 5 * time.Minute

// RunRestart measures the restarts at restartSizes.
func RunRestart(ctx context.Context, env *core.Env, o core.Options, res *core.Results, into *Results) error {
	for _, n := range restartSizes(res.Sizes) {
		o.Log.Info("restarts", "n", n)
		r, err := measureRestart(ctx, env, n, o.FastEtcd, o.AgentLog)
		if err != nil {
			return err
		}
		if into.Restart == nil {
			into.Restart = map[string]*RestartResult{}
		}
		into.Restart[strconv.Itoa(n)] = &RestartResult{
			AgentWrites: r.agentWrites, AgentReadyS: r.agentReady.Seconds(),
			RecoveryS: r.recovery.Seconds(), TotalS: r.total.Seconds(), NotReadySeen: r.notReadySeen, ReprogramWrites: r.reprogramWrites,
			InterfacesAfterS: lateInterfaces.Seconds(), FeatureWalkS: r.walked.Seconds(),
		}
	}
	return nil
}

// RestartRows are the restart figure's rows, by N.
func RestartRows(_ *core.Results, r *Results, t *core.Rows) {
	for _, n := range slices.Sorted(maps.Keys(r.Restart)) {
		x := r.Restart[n]
		t.AddSingle(fmt.Sprintf("agent restart against W(%s) programmed: VPP writes (start to ready, s)", n),
			fmt.Sprintf("%d (%.2f)", x.AgentWrites, x.AgentReadyS), "0", core.Verdict(true, func() bool { return x.AgentWrites == 0 }))
		limit := restartTarget(n)
		t.AddSingle(fmt.Sprintf("VPP restart, interfaces %.1f s late, W(%s): all back and ready after they appear (s; writes)", x.InterfacesAfterS, n),
			fmt.Sprintf("%.2f (%d)", x.RecoveryS, x.ReprogramWrites), fmt.Sprintf("≤ %g", limit.Seconds()),
			core.Verdict(limit > 0, func() bool { return x.RecoveryS <= limit.Seconds() }))
		t.AddSingle("… counted from the VPP restart (s)", fmt.Sprintf("%.2f", x.TotalS), "", "")
		t.AddSingle("… VPP's main thread walking the mappings for interface features (s)", fmt.Sprintf("%.3f", x.FeatureWalkS), "", "")
		t.AddSingle("… not ready in between", strconv.FormatBool(x.NotReadySeen), "true", core.Verdict(true, func() bool { return x.NotReadySeen }))
	}
}

// restartTarget is the target for the VPP restart recovery at N
// (0: none).
func restartTarget(n string) time.Duration {
	switch n {
	case "1000":
		return time.Second
	case "10000":
		// Issue 22: features before mappings, so that enabling them
		// walks no mapping (FACTS §7).
		return 500 * time.Millisecond
	}
	return 0
}
