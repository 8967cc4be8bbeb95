package startup

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"contiv.dev/vpp/agent"
	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/contivconf"
)

// The large figure's start-up with every part apart runs the agent in a
// process of its own too (role agent), as it runs on a node: its heap
// starts empty (the collector's work at start is the deployed agent's, not
// that of an agent beside the benchmark's own heap) and its process's CPU
// and peak resident set are the agent's alone. The child starts the agent
// at once and prints "ready" with the start's figures (agentChildResult)
// when the agent is ready; it stops the agent when its stdin closes.
const (
	roleAgent     = "agent"
	childAgentEnv = "CONTIV_BENCH_CHILD_AGENT" // the path of the agentChildSpec
)

// agentChildSpec is the agent child's configuration; with Profile, the
// CPU profile of its start to ready is written there.
type agentChildSpec struct {
	Config  contivconf.Config `json:"config"`
	Profile string            `json:"profile,omitempty"`
}

// agentChildResult is the agent child's start: to ready, its process's CPU
// over it, its memory.
type agentChildResult struct {
	TookNS int64    `json:"took_ns"`
	CPUNS  int64    `json:"cpu_ns"`
	Mem    startMem `json:"mem"`
}

// agentRole starts the agent of the spec at $CONTIV_BENCH_CHILD_AGENT and
// waits until it is ready: the "endpoint" it serves is the
// agentChildResult's JSON.
func agentRole(ctx context.Context) (*core.Served, error) {
	spec, err := readSpec[agentChildSpec](childAgentEnv)
	if err != nil {
		return nil, err
	}
	stopProfile := func() {}
	if spec.Profile != "" {
		if stopProfile, err = core.StartCPUProfile(spec.Profile); err != nil {
			return nil, err
		}
	}
	defer stopProfile()
	m0 := memNow(true)
	a, took, cpu, stop, err := runUntilReady(ctx, agent.Options{Config: spec.Config, LogOutput: io.Discard})
	if err != nil {
		return nil, err
	}
	stopProfile()
	res := agentChildResult{TookNS: int64(took), CPUNS: int64(cpu), Mem: memNow(false).since(m0)}
	if fs := a.Renderer().Failures(); len(fs) > 0 {
		stop()
		return nil, fmt.Errorf("startup: NAT44 objects VPP refused: %d, first %+v", len(fs), fs[0])
	}
	out, err := json.Marshal(res)
	if err != nil {
		stop()
		return nil, err
	}
	return &core.Served{Endpoint: string(out), Close: stop}, nil
}

// startAgentApart runs the agent of cfg in a child process until it is
// ready; dir holds its spec.
func startAgentApart(cfg contivconf.Config, dir, profile string) (s started, err error) {
	path := filepath.Join(dir, "agent-child.json")
	if err := writeSpec(path, agentChildSpec{Config: cfg, Profile: profile}); err != nil {
		return s, err
	}
	c, err := core.StartChild(roleAgent, childAgentEnv+"="+path)
	if err != nil {
		return s, err
	}
	defer c.Close()
	var res agentChildResult
	if err := json.NewDecoder(strings.NewReader(c.Endpoint)).Decode(&res); err != nil {
		return s, fmt.Errorf("agent child: %w", err)
	}
	return started{took: time.Duration(res.TookNS), cpu: time.Duration(res.CPUNS), mem: res.Mem}, nil
}
