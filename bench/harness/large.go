package harness

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"

	"contiv.dev/vpp/bench/workload"
)

// largeSize is the N of the large figure: W(50 000), issue 25.
const largeSize = 50000

// Targets of issue 25 at N = 50 000.
const (
	targetLargePipelinedMS  = 1500
	targetLargeEmptyMS      = 2000
	targetLargeProgrammedMS = 1000
	targetLargeHeapMiB      = 150
)

// LargeResult is W(N) at the large N over the simulated VPP's socket
// (serviceTime per request): the full programming, pipelined; the real
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
	// AgentHeapMiB is the running agent's live heap holding W(N): its
	// decoded view, the controller's digests, processor and renderer.
	AgentHeapMiB float64 `json:"agent_heap_mib"`
	EmptyWrites  int     `json:"-"`
	Runs         int     `json:"-"`
}

// measureLarge measures the large figure at n, runs times each (medians).
// With profileDir, the start-ups' CPU profile goes to
// large-startup.pprof there and the running agent's heap to
// large-heap.pprof.
func measureLarge(ctx context.Context, env *nodeEnv, n, runs int, fastEtcd bool, profileDir string, logOut io.Writer, log *slog.Logger) (*LargeResult, error) {
	out := &LargeResult{N: n, ServiceUS: us(serviceTime), Runs: runs}
	if err := func() error {
		w := workload.New(n)
		evs, err := allEvents(w)
		if err != nil {
			return err
		}
		var pipe []float64
		for run := range runs {
			took, calls, err := programOnce(ctx, env, w, evs, true, false)
			if err != nil {
				return fmt.Errorf("large: N=%d pipelined: %w", n, err)
			}
			log.Info("large: W(N) programmed over the socket, pipelined", "n", n, "run", run+1, "took", took, "calls", calls)
			pipe = append(pipe, ms(took))
			out.Calls = calls
		}
		out.PipelinedMS = median(pipe)
		return nil
	}(); err != nil {
		return nil, err
	}
	heap := heapProbe{measure: true}
	if profileDir != "" {
		heap.profile = filepath.Join(profileDir, "large-heap.pprof")
		f, err := os.Create(filepath.Join(profileDir, "large-startup.pprof"))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	s, err := measureStartupOf(ctx, env, n, runs, fastEtcd, heap, logOut, log)
	if err != nil {
		return nil, fmt.Errorf("large: %w", err)
	}
	out.StartupEmptyMS, out.StartupProgrammedMS, out.EmptyWrites = s.emptyMS, s.programmedMS, s.emptyWrites
	out.AgentHeapMiB = s.heapMiB
	return out, nil
}
