package e2e

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The scenarios of the defects issue 26 found; each failed before its fix.

// reconnectBound is how soon after the contiv etcd is back a change made
// during its outage must reach every agent (issue 26, defect 3).
const reconnectBound = 3 * time.Second

// nodeDeletedWithoutLeader: node-3's agent claims an ID and goes away; its
// Node is deleted while no reflector runs. The next leader's mark and sweep
// must release the ID, which needs `get nodes` (defect 1: with deploy/
// base's RBAC every sweep failed with 403 and the leader stayed unready).
func (s *system) nodeDeletedWithoutLeader() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n3 := startNode(s.t, "node-3", s.etcd.Endpoint())
	if err := s.kubelet.registerNode(ctx, n3.name, n3.a.NodeID()); err != nil {
		s.t.Fatal(err)
	}
	if !s.hasNodeRecord(ctx, n3.name) {
		s.t.Fatal("node-3's agent is ready but holds no node record")
	}
	if err := n3.stop(); err != nil {
		s.t.Fatalf("agent node-3 stopped with %v", err)
	}
	s.stopReplicas()
	if err := s.cp.kube.CoreV1().Nodes().Delete(ctx, n3.name, metav1.DeleteOptions{}); err != nil {
		s.t.Fatal(err)
	}
	start := time.Now()
	s.startReplicas()
	d := waitFor(s.t, time.Minute, func() (bool, string) {
		leader := ""
		for _, r := range s.replicas {
			if st, ok := r.status(); ok && st.Leader {
				leader = fmt.Sprintf("%s synced=%v lastError=%q", r.id, st.Synced, st.LastError)
				if st.Synced && !s.hasNodeRecord(ctx, n3.name) {
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("node-3's ID not released by a leader in sync (leader: %s)", leader)
	})
	s.figures.add("Node deleted without leader: ID released", d)
	s.figures.add("Node deleted without leader: converged", s.waitConverged(start, time.Minute))
}

// emptyEtcd wipes the contiv etcd (data loss; a restore of an old snapshot)
// with or without the reflectors running. Defect 2: agents relisted the
// empty etcd and removed every mapping. Now no agent may remove a mapping
// the API still has, agents without a reflector's complete output must say
// NOT READY, and all converge once a reflector swept.
func (s *system) emptyEtcd(reflectors bool) {
	name := "empty etcd, reflectors running"
	if !reflectors {
		name = "empty etcd, no reflector"
	}
	s.waitConverged(time.Now(), time.Minute)
	e := s.currentWant()
	if !reflectors {
		s.stopReplicas()
	}
	w := s.watchLoss(e.want)
	s.etcd.Wipe()
	start := time.Now()
	if !reflectors {
		// A while without any reflector: the agents keep what they applied
		// and report not ready.
		notReady := map[string]bool{}
		for time.Since(start) < 5*time.Second {
			for _, n := range s.nodes {
				if !n.a.Ready() {
					notReady[n.name] = true
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, n := range s.nodes {
			if !notReady[n.name] {
				s.t.Errorf("agent %s stayed ready for 5 s on an empty etcd without a reflector", n.name)
			}
		}
		start = time.Now()
		s.startReplicas()
	}
	d := s.waitConverged(start, 2*time.Minute)
	lost, removed := w.end()
	s.figures.add(name+": converged", d)
	s.t.Logf("%s: mappings removed meanwhile per agent: %v", name, removed)
	if lost != "" {
		s.t.Errorf("%s: agents removed what the API still has:\n%s", name, lost)
	}
}

// etcdOutage stops the contiv etcd for down while a pod turns not ready in
// the API; the change must reach every agent within reconnectBound of etcd
// being back (defect 3: gRPC's default backoff let it take 6.7-43.5 s).
// The pod is made ready again afterwards.
func (s *system) etcdOutage(down time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*down+2*time.Minute)
	defer cancel()
	s.waitConverged(time.Now(), time.Minute)
	s.etcd.Stop()
	stopped := time.Now()
	if err := s.setReady(ctx, "web-a", false); err != nil {
		s.t.Fatal(err)
	}
	waitFor(s.t, time.Minute, func() (bool, string) { return s.count("web", 1, isReady)(ctx) })
	time.Sleep(time.Until(stopped.Add(down)))
	s.etcd.Restart()
	back := time.Now()
	// When the reflector wrote the change, then when the agents took it.
	s.figures.add(fmt.Sprintf("etcd outage %v: change in etcd after etcd back", down), waitFor(s.t, 2*time.Minute, func() (bool, string) {
		api, err := apiObjects(ctx, s.cp.kube)
		if err != nil {
			return false, err.Error()
		}
		st, err := readEtcd(ctx, s.etcdCli)
		if err != nil {
			return false, err.Error()
		}
		d := objectsDiff(api, st.k8s)
		return d == "", "etcd is not the API: " + d
	}))
	d := s.waitConverged(back, 2*time.Minute)
	s.figures.add(fmt.Sprintf("etcd outage %v: change reached agents after etcd back", down), d)
	if d > reconnectBound {
		s.t.Errorf("a change made during a %v etcd outage reached the agents %v after etcd was back; the bound is %v", down, d.Round(time.Millisecond), reconnectBound)
	}
	s.step("readiness flip", func(ctx context.Context) error { return s.setReady(ctx, "web-a", true) }, s.count("web", 2, isReady))
}

// missingLeaseNamespace is a namespace that does not exist: the Lease of
// the noLeader scenario. deploy/base grants nothing there, so the 403s of
// that replica are expected and not counted by checkKSRAccess.
const missingLeaseNamespace = "e2e-missing"

// noLeader runs a replica whose Lease namespace does not exist: it can never
// lead, and must not report ready once no leader was seen for longer than
// the lease (defect 5: it said healthy and ready).
func (s *system) noLeader() {
	r := startReplica(s.t, s.ksrBin, s.kubeconfig, s.etcd.Endpoint(), "ksr-lost", "--lease-namespace="+missingLeaseNamespace)
	d := waitFor(s.t, 45*time.Second, func() (bool, string) {
		_, serving := r.status()
		return serving && !r.ready(), "a replica that cannot lead still reports ready (or does not answer) after 45 s"
	})
	s.t.Logf("replica without a Lease namespace: not ready after %v", d.Round(time.Millisecond))
	_ = r.p.stop(10 * time.Second)
}
