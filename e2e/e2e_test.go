package e2e

import (
	"testing"
	"time"
)

// TestE2E runs the scenarios in order on one system: the API changes, the
// defects of issue 26, failovers and restarts; then it checks every request
// the reflector made against deploy/base's RBAC.
func TestE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("the control plane takes minutes to build and start: not under -short")
	}
	start := time.Now()
	s := startSystem(t)
	t.Logf("system up in %v", time.Since(start).Round(time.Millisecond))

	s.run(t, "readiness", s.readinessFlip)
	s.run(t, "scale-and-delete", s.scaleUpAndDelete)
	s.run(t, "service-types", s.serviceTypes)
	s.run(t, "selectorless", s.selectorless)
	s.run(t, "named-ports", s.namedPorts)
	s.run(t, "serving-terminating", s.servingTerminating)
	s.run(t, "publish-not-ready", s.notReadyAddresses)
	s.run(t, "host-network-and-binding", s.hostNetworkAndBinding)
	s.run(t, "120-pods", s.manyPods)
	s.run(t, "pods-wired-by-cni", func() { s.t.Logf("%d pods running and wired", s.checkPods()) })
	s.run(t, "pod-churn-with-service-changes", s.podChurn)

	s.run(t, "defect1-node-deleted-without-leader", s.nodeDeletedWithoutLeader)
	s.run(t, "defect2-empty-etcd-no-reflector", func() { s.emptyEtcd(false) })
	s.run(t, "defect2-empty-etcd-reflectors-running", func() { s.emptyEtcd(true) })
	s.run(t, "defect3-etcd-outage-10s", func() { s.etcdOutage(10 * time.Second) })
	s.run(t, "defect3-etcd-outage-10s-again", func() { s.etcdOutage(10 * time.Second) })
	s.run(t, "defect3-etcd-outage-30s", func() { s.etcdOutage(30 * time.Second) })
	s.run(t, "defect3-etcd-outage-60s", func() { s.etcdOutage(60 * time.Second) })
	s.run(t, "defect5-no-leader", s.noLeader)

	s.run(t, "node-reregister", s.nodeReregister)
	s.run(t, "failover-sigterm", func() { s.failover(false) })
	s.run(t, "failover-sigkill", func() { s.failover(true) })
	s.run(t, "apiserver-restart", s.apiServerRestart)
	s.run(t, "apiserver-etcd-restart", s.apiEtcdRestart)

	s.run(t, "namespace-deleted", s.namespaceDeleted)
	s.run(t, "no-pod-left", func() {
		if n := s.checkPods(); n != 0 {
			s.t.Errorf("%d pods still run after their namespace was deleted", n)
		}
	})
	s.run(t, "rbac", func() { checkKSRAccess(s.t, s.cp) })
	t.Logf("figures:\n%s", s.figures.table())
}

// run runs scenario f as subtest name of t, with s failing that subtest.
func (s *system) run(t *testing.T, name string, f func()) {
	t.Run(name, func(t *testing.T) {
		prev := s.t
		s.t = t
		defer func() { s.t = prev }()
		f()
		// A program that died unseen would fail every later scenario with
		// a symptom (no EndpointSlice) far from its cause.
		for _, p := range []*proc{s.cp.api, s.cp.cm} {
			if !p.running() {
				t.Fatalf("%s exited during %s: %v\n%s", p.name, name, p.err, p.out)
			}
		}
	})
}
