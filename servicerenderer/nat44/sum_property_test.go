package nat44_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// TestProbabilitySumOnEveryNode: for services of 0 to 1000 endpoints
// spread over up to 4 nodes (and some on no node), any local-endpoint
// weight from 1 to 255, growing and shrinking step by step, each node's
// renderer programs its own simulated VPP 25.02, which meets every
// load-balanced mapping with a packet after every single call
// (sim.Options.Traffic): it never crashes, no call leaves a mapping
// summing past 255, VPP holds what the renderer wants, and when every
// endpoint runs on a node that holds at most 255 of them, the nodes
// together use every endpoint (each node its own first).
func TestProbabilitySumOnEveryNode(t *testing.T) {
	const maxNodes = 4
	// One simulated VPP per node, kept from one check to the next (each
	// ends deleting its service); one that crashed or skewed is replaced,
	// so that rapid's replay of a failure starts as the failure did.
	envs := make([]*simEnv, maxNodes)
	vip := addr("10.96.0.100")
	iteration := 0
	rapid.Check(t, func(rt *rapid.T) {
		iteration++
		nodes := rapid.IntRange(1, maxNodes).Draw(rt, "nodes")
		weight := uint8(rapid.IntRange(1, 255).Draw(rt, "weight"))
		// Where endpoint i runs: node (i mod places), or on none when that
		// is nodes (a host-network endpoint off the cluster, say).
		places := nodes + rapid.IntRange(0, 1).Draw(rt, "someOnNoNode")
		allOnFirst := rapid.Bool().Draw(rt, "allOnFirstNode")
		nodeOf := func(i int) int {
			if allOnFirst {
				return 0
			}
			return i % places
		}
		rs := make([]*nat44.Renderer, nodes)
		for n := range nodes {
			if e := envs[n]; e == nil || e.vpp.Crashes() > 0 || e.vpp.Skews() > 0 {
				envs[n] = newSimEnv(t)
			}
			e := envs[n]
			e.cfg.LocalEndpointWeight = weight
			rs[n] = e.renderer()
			data := cluster()
			data.Services = nil
			data.Node = servicerenderer.LocalNode{Name: fmt.Sprintf("node-%d", n+1), ID: uint32(n + 1), IPs: []netip.Addr{addr("192.168.16.10")}}
			if err := rs[n].Resync(data); err != nil {
				rt.Fatal(err)
			}
			applyOrFail(rt, rs[n], true)
		}
		name := fmt.Sprintf("big-%d", iteration)
		prev := make([]*servicerenderer.ContivService, nodes)
		steps := rapid.IntRange(1, 3).Draw(rt, "steps")
		for range steps {
			count := rapid.OneOf(rapid.IntRange(0, 1000), rapid.IntRange(250, 260), rapid.IntRange(0, 3)).Draw(rt, "endpoints")
			for n := range nodes {
				s := bigSvc(name, vip, count, func(i int) bool { return nodeOf(i) == n })
				var err error
				if prev[n] == nil {
					err = rs[n].AddService(s)
				} else {
					err = rs[n].UpdateService(prev[n], s)
				}
				if err != nil {
					rt.Fatal(err)
				}
				prev[n] = s
				applyOrFail(rt, rs[n], false)
				v := envs[n].vpp
				if v.Crashes() != 0 || v.Skews() != 0 {
					rt.Fatalf("node %d, %d endpoints, weight %d: the simulated VPP 25.02 crashed %d times (%s), %d calls left a skewed mapping",
						n+1, count, weight, v.Crashes(), v.LastCrash(), v.Skews())
				}
				if got, want := v.Snapshot().Lines(), rs[n].Desired().Lines(); !slices.Equal(got, want) {
					rt.Fatalf("node %d holds %d lines, wants %d", n+1, len(got), len(want))
				}
			}
			perNode := make([]int, places)
			for i := range count {
				perNode[nodeOf(i)]++
			}
			if places > nodes || slices.Max(perNode) > nat44.MaxProbabilitySum {
				continue // not enough nodes to promise every endpoint a place
			}
			used := map[netip.Addr]bool{}
			for n := range nodes {
				for _, m := range envs[n].vpp.Snapshot().Mappings {
					if m.IP == vip {
						for _, l := range m.Locals {
							used[l.IP] = true
						}
					}
				}
			}
			for i := range count {
				if ip := bigIP(i); !used[ip] {
					rt.Fatalf("%d endpoints over %d nodes (weight %d): endpoint %v on node %d used by no node", count, nodes, weight, ip, nodeOf(i)+1)
				}
			}
		}
		// The next check starts from an empty VPP: the service goes.
		for n := range nodes {
			if err := rs[n].DeleteService(prev[n]); err != nil {
				rt.Fatal(err)
			}
			applyOrFail(rt, rs[n], false)
		}
	})
}

func applyOrFail(t *rapid.T, r *nat44.Renderer, full bool) {
	if err := r.Apply(context.Background(), full); err != nil {
		t.Fatalf("Apply(full=%v): %v", full, err)
	}
	if fs := r.Failures(); len(fs) != 0 {
		t.Fatalf("failures: %+v", fs)
	}
}

// bigIP is endpoint i's address.
func bigIP(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 2, byte(i / 250), byte(1 + i%250)}) }

// bigSvc is a cluster-IP service of n endpoints (bigIP), local where
// local says.
func bigSvc(name string, vip netip.Addr, n int, local func(int) bool) *servicerenderer.ContivService {
	bs := make([]servicerenderer.Backend, n)
	var loc []servicerenderer.Backend
	for i := range bs {
		bs[i] = backend(bigIP(i).String(), 8080, local(i))
		if bs[i].Local {
			loc = append(loc, bs[i])
		}
	}
	return &servicerenderer.ContivService{
		ID:         servicerenderer.ServiceID{Namespace: "default", Name: name},
		ClusterIPs: []netip.Addr{vip},
		Ports:      []servicerenderer.Port{{Name: "http", Protocol: servicerenderer.TCP, Port: 80, Backends: bs, LocalBackends: loc}},
	}
}
