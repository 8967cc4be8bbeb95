package startup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"contiv.dev/vpp/agent"
	"contiv.dev/vpp/agent/simnode"
	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// The large figure's most faithful start-up runs the simulated VPP in a
// process of its own too (role vpp), as VPP runs beside the agent on a
// node with cores of its own: the agent's process then holds the agent
// alone, which dials the VPP socket as against a real VPP (no simulated
// dataplane: the node's and this node's pods' interfaces are made in the
// child first, as VPP's startup configuration and the CNI make them).
const (
	roleVPP     = "vpp"
	childVPPEnv = "CONTIV_BENCH_CHILD_VPP" // the path of the vppChildSpec
)

// vppChildSpec is what the VPP child serves: on Socket, ServiceTime per
// request, the node's interfaces (as the simulated dataplane makes them)
// and its pods' (as the simulated CNI does) made first.
type vppChildSpec struct {
	Socket      string              `json:"socket"`
	ServiceTime time.Duration       `json:"service_time"`
	PodVRF      uint32              `json:"pod_vrf"`
	Node        []simnode.Interface `json:"node"`
	Pods        []sim.InterfaceSpec `json:"pods"`
}

// vppSpec is node 1's VPP for cfg holding W(n)'s local pods.
func vppSpec(env *core.Env, cfg contivconf.Config, w *workload.Workload) vppChildSpec {
	node := env.Node(cfg.Renderer)
	s := vppChildSpec{Socket: cfg.VPP.Socket, ServiceTime: core.ServiceTime, PodVRF: cfg.Routing.PodVRFID, Node: simnode.Interfaces(&node)}
	for _, p := range w.Pods {
		_, tag := env.PodInterface(p.Namespace, p.Name)
		s.Pods = append(s.Pods, simnode.PodSpec(p.Namespace, p.Name, p, tag, s.PodVRF))
	}
	return s
}

// vppRole serves the simulated VPP of the spec at $CONTIV_BENCH_CHILD_VPP:
// its stats are the VPP writes since the last "reset" and the crashes.
func vppRole(context.Context) (*core.Served, error) {
	spec, err := readSpec[vppChildSpec](childVPPEnv)
	if err != nil {
		return nil, err
	}
	v := sim.New(sim.Options{ServiceTime: spec.ServiceTime})
	v.CreateTable(spec.PodVRF)
	err = simnode.EnsureInterfaces(v, spec.Node)
	for _, p := range spec.Pods {
		if err == nil {
			_, err = v.CreateInterface(p)
		}
	}
	var srv *sim.Server
	if err == nil {
		srv, err = v.Serve(spec.Socket)
	}
	if err != nil {
		v.Close()
		return nil, fmt.Errorf("vpp child: %w", err)
	}
	return &core.Served{
		Endpoint: srv.Path(),
		Stats:    func() core.ChildStats { return core.ChildStats{Writes: int64(v.Writes()), Crashes: int64(v.Crashes())} },
		Reset:    v.ResetCalls,
		Close:    func() { _ = srv.Close(); v.Close() },
	}, nil
}

// startTwiceApart is startTwice with the simulated VPP in a child process
// (spec) and the agent as deployed against a real VPP: no simulated
// dataplane, the configured socket dialled.
// With opts.profile, the programmed start's CPU profile is written there;
// with opts.agentApart, the agent runs in a child too (startAgentApart).
func startTwiceApart(ctx context.Context, cfg contivconf.Config, spec vppChildSpec, opts startupOpts, logOut io.Writer) (empty, programmed started, err error) {
	path := filepath.Join(filepath.Dir(cfg.VPP.Socket), "vpp-child.json")
	if err := writeSpec(path, spec); err != nil {
		return empty, programmed, err
	}
	c, err := core.StartChild(roleVPP, childVPPEnv+"="+path)
	if err != nil {
		return empty, programmed, err
	}
	defer c.Close()
	// others reads the etcd and VPP children's CPU (VPP's writes since
	// reset with it).
	others := func(what string) (etcdCPU time.Duration, vpp core.ChildStats, err error) {
		if opts.etcdCPU != nil {
			if etcdCPU, err = opts.etcdCPU(); err != nil {
				return 0, vpp, err
			}
		}
		vpp, err = c.Stats(what)
		return etcdCPU, vpp, err
	}
	start := func(profile string) (s started, err error) {
		etcd0, vpp0, err := others("reset")
		if err != nil {
			return s, err
		}
		defer func() {
			etcd1, vpp1, oerr := others("cpu")
			s.writes = int(vpp1.Writes)
			s.etcdCPU, s.vppCPU = etcd1-etcd0, time.Duration(vpp1.CPUNS-vpp0.CPUNS)
			err = errors.Join(err, oerr)
		}()
		if opts.agentApart {
			s, err = startAgentApart(cfg, filepath.Dir(path), profile)
			return s, err
		}
		stopProfile := func() {}
		if profile != "" {
			if stopProfile, err = core.StartCPUProfile(profile); err != nil {
				return s, err
			}
			defer stopProfile()
		}
		m0 := memNow(true)
		a, took, cpu, stop, err := runUntilReady(ctx, agent.Options{Config: cfg, LogOutput: logOut})
		if err != nil {
			return s, err
		}
		defer stop()
		stopProfile()
		s.mem = memNow(false).since(m0)
		s.took, s.cpu = took, cpu
		if fs := a.Renderer().Failures(); len(fs) > 0 {
			return s, fmt.Errorf("startup: NAT44 objects VPP refused: %d, first %+v", len(fs), fs[0])
		}
		return s, nil
	}
	if empty, err = start(""); err != nil {
		return empty, programmed, err
	}
	if programmed, err = start(opts.profile); err != nil {
		return empty, programmed, err
	}
	if empty.writes == 0 || programmed.writes != 0 {
		return empty, programmed, fmt.Errorf("startup: %d VPP writes to program W(N), %d on the programmed VPP (want some, then none)", empty.writes, programmed.writes)
	}
	st, err := c.Stats("cpu")
	if err == nil && st.Crashes != 0 {
		err = fmt.Errorf("startup: the simulated VPP crashed %d times", st.Crashes)
	}
	return empty, programmed, err
}

// startMem is the agent's process's memory over a start: what it
// allocated, its collections, its heap when ready and its peak resident
// set (Linux's VmHWM, reset at the start).
type startMem struct {
	AllocMiB   float64 `json:"alloc_mib"`
	GCs        uint32  `json:"gcs"`
	HeapMiB    float64 `json:"heap_mib"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
}

func (m startMem) String() string {
	return fmt.Sprintf("alloc=%.0fMiB gcs=%d heap=%.0fMiB peakRSS=%.0fMiB", m.AllocMiB, m.GCs, m.HeapMiB, m.PeakRSSMiB)
}

// memNow is this process's memory now; reset resets its peak resident
// set first (where Linux allows it).
func memNow(reset bool) startMem {
	if reset {
		_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := startMem{AllocMiB: mib(ms.TotalAlloc), GCs: ms.NumGC, HeapMiB: mib(ms.HeapAlloc)}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for l := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				var kb float64
				if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb); err == nil {
					m.PeakRSSMiB = kb / 1024
				}
			}
		}
	}
	return m
}

// since is m less what was at m0 (allocations and collections).
func (m startMem) since(m0 startMem) startMem {
	m.AllocMiB -= m0.AllocMiB
	m.GCs -= m0.GCs
	return m
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// writeSpec writes spec as JSON to path, for a child to read (readSpec).
func writeSpec(path string, spec any) error {
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// readSpec is the JSON spec (writeSpec) at the path the environment
// variable env names.
func readSpec[T any](env string) (T, error) {
	var spec T
	b, err := os.ReadFile(os.Getenv(env))
	if err != nil {
		return spec, err
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		return spec, fmt.Errorf("child spec $%s: %w", env, err)
	}
	return spec, nil
}
