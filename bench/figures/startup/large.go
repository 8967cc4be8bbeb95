package startup

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/internal/workload"
)

// Targets of issue 25 at N = 50 000.
const (
	targetLargePipelinedMS  = 1500
	targetLargeEmptyMS      = 2000
	targetLargeProgrammedMS = 1000
	targetLargeHeapMiB      = 150
)

// LargeResult is W(N) at the large N over the simulated VPP's socket
// (core.ServiceTime per request): the full programming, pipelined; the real
// agent's start to ready, empty and programmed; the agent's live heap.
type LargeResult struct {
	N int `json:"n"`
	// Calls are the binary-API calls of the full programming.
	Calls       int     `json:"calls"`
	ServiceUS   float64 `json:"service_us"`
	PipelinedMS float64 `json:"pipelined_ms"`
	// StartupEmptyMS and StartupProgrammedMS: the agent's start to ready
	// against an empty VPP and against one holding W(N).
	StartupEmptyMS      float64 `json:"startup_empty_ms"`
	StartupProgrammedMS float64 `json:"startup_programmed_ms"`
	// StartupApart is the same start with etcd in a process of its own,
	// as it is deployed (a StatefulSet): its CPU and garbage off the
	// agent's clock (the simulated VPP stays in the agent's process).
	StartupApart *LargeStartup `json:"startup_etcd_apart,omitempty"`
	// StartupAllApart is the same start with etcd and the simulated VPP
	// each in a process of its own, the agent dialling VPP's socket as
	// against a real VPP: the agent's process holds the agent alone.
	StartupAllApart *LargeStartup `json:"startup_etcd_vpp_apart,omitempty"`
	// StartupAgentApart is the same start with the agent in a process of
	// its own too: its heap starts empty, its CPU and peak resident set
	// are its own (the memory figures of its programmed start in Mem).
	StartupAgentApart *LargeStartup `json:"startup_agent_apart,omitempty"`
	// StartupEmptyCPUMS and StartupProgrammedCPUMS: the process's CPU
	// from the start to ready, etcd in it.
	StartupEmptyCPUMS      float64 `json:"startup_empty_cpu_ms"`
	StartupProgrammedCPUMS float64 `json:"startup_programmed_cpu_ms"`
	// AgentHeapMiB is the running agent's live heap holding W(N): its
	// decoded view, processor and renderer.
	AgentHeapMiB float64 `json:"agent_heap_mib"`
	EmptyWrites  int     `json:"-"`
	Runs         int     `json:"-"`
}

// LargeStartup is a figure of the agent's start at W(N), against an empty
// VPP and against one holding W(N).
type LargeStartup struct {
	EmptyMS      float64 `json:"empty_ms"`
	ProgrammedMS float64 `json:"programmed_ms"`
	// EmptyCPUMS and ProgrammedCPUMS: the process's CPU from the start to
	// ready.
	EmptyCPUMS      float64 `json:"empty_cpu_ms,omitempty"`
	ProgrammedCPUMS float64 `json:"programmed_cpu_ms,omitempty"`
	// ProgrammedMem is the agent's process's memory over its programmed
	// start (the last run's; with the agent apart, its own process's).
	ProgrammedMem *startMem `json:"programmed_mem,omitempty"`
	// ProgrammedEtcdCPUMS and ProgrammedVPPCPUMS: the etcd and simulated
	// VPP processes' CPU over the programmed start (with VPP apart).
	ProgrammedEtcdCPUMS float64 `json:"programmed_etcd_cpu_ms,omitempty"`
	ProgrammedVPPCPUMS  float64 `json:"programmed_vpp_cpu_ms,omitempty"`
}

// measureLarge measures the large figure at n, runs times each (medians).
// The start-ups are measured twice: etcd in this process, then in a
// process of its own (StartupApart). With profileDir, the first start-ups'
// CPU profile goes to large-startup.pprof there, the running agent's heap to
// large-heap.pprof, and the last programmed start's with etcd and VPP apart
// (the agent alone in this process) to large-startup-apart.pprof.
func measureLarge(ctx context.Context, env *core.Env, n, runs int, fastEtcd bool, profileDir string, logOut io.Writer, log *slog.Logger) (*LargeResult, error) {
	out := &LargeResult{N: n, ServiceUS: core.US(core.ServiceTime), Runs: runs}
	if err := func() error {
		w := workload.New(n)
		evs, err := core.AllEvents(w)
		if err != nil {
			return err
		}
		var pipe []float64
		for run := range runs {
			took, calls, err := core.ProgramOnce(ctx, env, w, evs, true, false)
			if err != nil {
				return fmt.Errorf("large: N=%d pipelined: %w", n, err)
			}
			log.Info("large: W(N) programmed over the socket, pipelined", "n", n, "run", run+1, "took", took, "calls", calls)
			pipe = append(pipe, core.MS(took))
			out.Calls = calls
		}
		out.PipelinedMS = core.Median(pipe)
		return nil
	}(); err != nil {
		return nil, err
	}
	heap := heapProbe{measure: true}
	stopProfile := func() {}
	if profileDir != "" {
		heap.profile = filepath.Join(profileDir, "large-heap.pprof")
		var err error
		if stopProfile, err = core.StartCPUProfile(filepath.Join(profileDir, "large-startup.pprof")); err != nil {
			return nil, err
		}
		defer stopProfile()
	}
	s, err := measureStartupOf(ctx, env, n, runs, startupOpts{fastEtcd: fastEtcd, heap: heap}, logOut, log)
	if err != nil {
		return nil, fmt.Errorf("large: %w", err)
	}
	out.StartupEmptyMS, out.StartupProgrammedMS, out.EmptyWrites = s.emptyMS, s.programmedMS, s.emptyWrites
	out.AgentHeapMiB = s.heapMiB
	out.StartupEmptyCPUMS, out.StartupProgrammedCPUMS = s.emptyCPUMS, s.programmedCPUMS
	stopProfile()
	for _, l := range []struct {
		what, profile string
		opts          startupOpts
		into          **LargeStartup
	}{
		{"etcd apart", "", startupOpts{etcdApart: true}, &out.StartupApart},
		{"etcd and VPP apart", "large-startup-apart.pprof", startupOpts{etcdApart: true, vppApart: true}, &out.StartupAllApart},
		{"every part apart", "large-startup-agent-apart.pprof", startupOpts{etcdApart: true, vppApart: true, agentApart: true}, &out.StartupAgentApart},
	} {
		l.opts.fastEtcd = fastEtcd
		if profileDir != "" && l.profile != "" {
			l.opts.profile = filepath.Join(profileDir, l.profile)
		}
		r, err := measureStartupOf(ctx, env, n, runs, l.opts, logOut, log)
		if err != nil {
			return nil, fmt.Errorf("large, %s: %w", l.what, err)
		}
		*l.into = r.apart()
	}
	return out, nil
}

// apart is r as a LargeStartup: a start with some of its parts in processes
// of their own.
func (r *startupRun) apart() *LargeStartup {
	return &LargeStartup{EmptyMS: r.emptyMS, ProgrammedMS: r.programmedMS, EmptyCPUMS: r.emptyCPUMS, ProgrammedCPUMS: r.programmedCPUMS,
		ProgrammedMem: &r.programmedMem, ProgrammedEtcdCPUMS: r.programmedEtcdCPUMS, ProgrammedVPPCPUMS: r.programmedVPPCPUMS}
}

// RunLarge measures the large figure.
func RunLarge(ctx context.Context, env *core.Env, o core.Options, _ *core.Results, into *Results) error {
	runs := min(o.Runs, 3)
	o.Log.Info("large: W(N) over the socket: programming, start-up, agent heap", "n", o.LargeSize, "runs", runs)
	var err error
	into.Large, err = measureLarge(ctx, env, o.LargeSize, runs, o.FastEtcd, o.ProfileDir, o.AgentLog, o.Log)
	return err
}

// LargeRows are the large figure's rows.
func LargeRows(_ *core.Results, r *Results, t *core.Rows) {
	l := r.Large
	if l == nil {
		return
	}
	judged := l.N == core.LargeSize
	t.AddSingle(fmt.Sprintf("W(%d) programmed over the VPP socket, %.0f µs per request, pipelined, median of %d (ms; calls)", l.N, l.ServiceUS, l.Runs),
		fmt.Sprintf("%.0f (%d)", l.PipelinedMS, l.Calls), "≤ 1500", core.Verdict(judged, func() bool { return l.PipelinedMS <= targetLargePipelinedMS }))
	startRows(t, judged, fmt.Sprintf("agent start to ready, W(%d), empty VPP over its socket (ms; VPP writes)", l.N),
		fmt.Sprintf("%.0f (%d)", l.StartupEmptyMS, l.EmptyWrites), l.StartupEmptyMS, "… VPP already programmed (ms)", l.StartupProgrammedMS)
	t.AddSingle("… the process's CPU from start to ready, empty / programmed VPP (ms; etcd, agent and simulated VPP)",
		fmt.Sprintf("%.0f / %.0f", l.StartupEmptyCPUMS, l.StartupProgrammedCPUMS), "", "")
	if a := l.StartupApart; a != nil {
		startRows(t, judged, "… etcd in a process of its own, as deployed: start to ready, empty VPP (ms)", fmt.Sprintf("%.0f", a.EmptyMS), a.EmptyMS,
			"… etcd in a process of its own: VPP already programmed (ms)", a.ProgrammedMS)
		t.AddSingle("… etcd in a process of its own: the agent's process's CPU, empty / programmed (ms; agent and simulated VPP)",
			fmt.Sprintf("%.0f / %.0f", a.EmptyCPUMS, a.ProgrammedCPUMS), "", "")
	}
	if a := l.StartupAllApart; a != nil {
		startRows(t, judged, "… etcd and the simulated VPP each in a process of its own, the agent as against a real VPP: start to ready, empty VPP (ms)",
			fmt.Sprintf("%.0f", a.EmptyMS), a.EmptyMS, "… etcd and VPP apart: VPP already programmed (ms)", a.ProgrammedMS)
		t.AddSingle("… etcd and VPP apart: the agent's process's CPU, empty / programmed (ms; the agent alone)",
			fmt.Sprintf("%.0f / %.0f", a.EmptyCPUMS, a.ProgrammedCPUMS), "", "")
	}
	if a := l.StartupAgentApart; a != nil {
		startRows(t, judged, "… etcd, the simulated VPP and the agent each in a process of its own: start to ready, empty VPP (ms)",
			fmt.Sprintf("%.0f", a.EmptyMS), a.EmptyMS, "… every part apart: VPP already programmed (ms)", a.ProgrammedMS)
		if m := a.ProgrammedMem; m != nil {
			t.AddSingle("… every part apart: the agent's CPU, empty / programmed (ms); its programmed start's allocations, collections, peak resident set (MiB; -; MiB)",
				fmt.Sprintf("%.0f / %.0f; %.0f, %d, %.0f", a.EmptyCPUMS, a.ProgrammedCPUMS, m.AllocMiB, m.GCs, m.PeakRSSMiB), "", "")
		}
		t.AddSingle("… every part apart, programmed: etcd's and the simulated VPP's CPU meanwhile (ms)",
			fmt.Sprintf("%.0f / %.0f", a.ProgrammedEtcdCPUMS, a.ProgrammedVPPCPUMS), "", "")
	}
	t.AddSingle(fmt.Sprintf("agent's live heap holding W(%d): decoded view, processor, renderer (MiB)", l.N), fmt.Sprintf("%.1f", l.AgentHeapMiB),
		"≤ 150", core.Verdict(judged, func() bool { return l.AgentHeapMiB <= targetLargeHeapMiB }))
}

// startRows are the two judged rows of one way of starting the agent:
// against an empty VPP and against a programmed one.
func startRows(t *core.Rows, judged bool, emptyName, emptyValue string, empty float64, programmedName string, programmed float64) {
	t.AddSingle(emptyName, emptyValue, "≤ 2000", core.Verdict(judged, func() bool { return empty <= targetLargeEmptyMS }))
	t.AddSingle(programmedName, fmt.Sprintf("%.0f", programmed), "≤ 1000", core.Verdict(judged, func() bool { return programmed <= targetLargeProgrammedMS }))
}
