package e2e

import (
	"context"
	"time"
)

// failover stops the leading replica, hard (SIGKILL: it releases nothing,
// the Lease must expire) or gracefully (SIGTERM: it releases the Lease),
// changes a pod's readiness right away, and measures when the other
// replica leads in sync and when the change reached the agents. The
// stopped replica is started again as a follower.
func (s *system) failover(kill bool) {
	how := "SIGTERM"
	if kill {
		how = "SIGKILL"
	}
	s.waitConverged(time.Now(), time.Minute)
	leader, _ := s.waitLeader(nil, time.Minute)
	start := time.Now()
	if kill {
		leader.p.kill()
	} else if err := leader.p.stop(30 * time.Second); err != nil {
		s.t.Errorf("%s stopped with %v", leader.id, err)
	}
	s.step("leader "+how+": change reached agents", func(ctx context.Context) error {
		return s.setReady(ctx, "web-b", false)
	}, s.count("web", 1, isReady))
	_, _ = s.waitLeader(leader, 2*time.Minute)
	s.figures.add("leader "+how+": new leader in sync", time.Since(start))
	leader.p.start()
	s.step("readiness flip", func(ctx context.Context) error { return s.setReady(ctx, "web-b", true) }, s.count("web", 2, isReady))
}

// apiServerRestart stops the API server for 5 s and starts it again: no
// agent may remove anything meanwhile, and a change after it converges.
func (s *system) apiServerRestart() {
	s.waitConverged(time.Now(), time.Minute)
	w := s.watchLoss(s.currentWant().want)
	start := time.Now()
	s.cp.restartAPIServer(5 * time.Second)
	s.figures.add("API-server restart (5 s down): ready again", time.Since(start))
	time.Sleep(2 * time.Second) // the informers re-list
	lost, removed := w.end()
	if lost != "" {
		s.t.Errorf("agents removed what the API has during its restart:\n%s", lost)
	}
	s.t.Logf("mappings removed during the API-server restart: %v", removed)
	s.step("change after API-server restart", func(ctx context.Context) error { return s.setReady(ctx, "web-b", false) }, s.count("web", 1, isReady))
	s.step("readiness flip", func(ctx context.Context) error { return s.setReady(ctx, "web-b", true) }, s.count("web", 2, isReady))
}

// apiEtcdRestart restarts the API server's etcd; a change after it converges.
func (s *system) apiEtcdRestart() {
	s.cp.etcd.Restart()
	s.step("change after the API's etcd restart", func(ctx context.Context) error { return s.setReady(ctx, "web-b", false) }, s.count("web", 1, isReady))
	s.step("readiness flip", func(ctx context.Context) error { return s.setReady(ctx, "web-b", true) }, s.count("web", 2, isReady))
}
