package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"contiv.dev/vpp/agent"
	"contiv.dev/vpp/agent/simnode"
	"contiv.dev/vpp/bench/workload"
	"contiv.dev/vpp/contivconf"
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
// request, with Tables and Interfaces made first.
type vppChildSpec struct {
	Socket      string              `json:"socket"`
	ServiceTime time.Duration       `json:"service_time"`
	Tables      []uint32            `json:"tables"`
	Interfaces  []sim.InterfaceSpec `json:"interfaces"`
}

// vppSpec is node 1's VPP for cfg holding W(n)'s local pods: the node's
// interfaces as the simulated dataplane makes them, the pod VRF, and each
// local pod's interface as the simulated CNI makes it.
func vppSpec(env *nodeEnv, cfg contivconf.Config, w *workload.Workload) vppChildSpec {
	node := env.node(cfg.Renderer)
	s := vppChildSpec{Socket: cfg.VPP.Socket, ServiceTime: serviceTime, Tables: []uint32{cfg.Routing.PodVRFID}}
	for _, i := range simnode.Interfaces(&node) {
		s.Tables = append(s.Tables, i.VRF)
		if i.Name != "" {
			s.Interfaces = append(s.Interfaces, sim.InterfaceSpec{Name: i.Name, Address: i.Address, VRF: i.VRF})
		}
	}
	for _, p := range w.Pods {
		name, tag := env.podInterface(p.Namespace, p.Name)
		spec := sim.InterfaceSpec{Name: name, Tag: tag, VRF: cfg.Routing.PodVRFID}
		for _, ip := range p.IPs {
			if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
				spec.Address = netip.PrefixFrom(a, 32)
				break
			}
		}
		s.Interfaces = append(s.Interfaces, spec)
	}
	return s
}

// runVPPChild serves the simulated VPP of the spec at path: its stats
// are the VPP writes since the last "reset" and the crashes.
func runVPPChild(path string) (endpoint string, stats func() childStats, reset func(), closeAll func(), err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, nil, nil, err
	}
	var spec vppChildSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return "", nil, nil, nil, fmt.Errorf("vpp child spec: %w", err)
	}
	v := sim.New(sim.Options{ServiceTime: spec.ServiceTime})
	for _, t := range spec.Tables {
		v.CreateTable(t)
	}
	for _, i := range spec.Interfaces {
		if _, err := v.CreateInterface(i); err != nil {
			v.Close()
			return "", nil, nil, nil, fmt.Errorf("vpp child: interface %s: %w", i.Name, err)
		}
	}
	srv, err := v.Serve(spec.Socket)
	if err != nil {
		v.Close()
		return "", nil, nil, nil, err
	}
	stats = func() childStats { return childStats{Writes: int64(v.Writes()), Crashes: int64(v.Crashes())} }
	return srv.Path(), stats, v.ResetCalls, func() { _ = srv.Close(); v.Close() }, nil
}

// startTwiceApart is startTwice with the simulated VPP in a child process
// (spec) and the agent as deployed against a real VPP: no simulated
// dataplane, the configured socket dialled.
func startTwiceApart(ctx context.Context, cfg contivconf.Config, spec vppChildSpec, logOut io.Writer) (empty, programmed started, err error) {
	path := filepath.Join(filepath.Dir(cfg.VPP.Socket), "vpp-child.json")
	b, err := json.Marshal(spec)
	if err != nil {
		return empty, programmed, err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return empty, programmed, err
	}
	c, err := startChild(roleVPP, childVPPEnv+"="+path)
	if err != nil {
		return empty, programmed, err
	}
	defer c.close()
	start := func() (s started, err error) {
		if _, err := c.stats("reset"); err != nil {
			return s, err
		}
		t0, cpu0 := time.Now(), cpuTime()
		a, err := agent.New(ctx, agent.Options{Config: cfg, LogOutput: logOut})
		if err != nil {
			return s, fmt.Errorf("startup: agent: %w", err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.Run(runCtx) }()
		defer func() { cancel(); <-done }()
		if err := waitUntil(ctx, 5*time.Minute, a.Ready); err != nil {
			return s, fmt.Errorf("startup: agent not ready: %w", err)
		}
		s.took, s.cpu = time.Since(t0), cpuTime()-cpu0
		st, err := c.stats("cpu")
		if err != nil {
			return s, err
		}
		s.writes = int(st.Writes)
		if fs := a.Renderer().Failures(); len(fs) > 0 {
			return s, fmt.Errorf("startup: NAT44 objects VPP refused: %d, first %+v", len(fs), fs[0])
		}
		return s, nil
	}
	if empty, err = start(); err != nil {
		return empty, programmed, err
	}
	if programmed, err = start(); err != nil {
		return empty, programmed, err
	}
	if empty.writes == 0 || programmed.writes != 0 {
		return empty, programmed, fmt.Errorf("startup: %d VPP writes to program W(N), %d on the programmed VPP (want some, then none)", empty.writes, programmed.writes)
	}
	st, err := c.stats("cpu")
	if err == nil && st.Crashes != 0 {
		err = fmt.Errorf("startup: the simulated VPP crashed %d times", st.Crashes)
	}
	return empty, programmed, err
}
