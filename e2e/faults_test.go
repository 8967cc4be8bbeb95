package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/kubestate"
)

// hasNodeRecord tells whether etcd holds NodeSync's record of node name.
func (s *system) hasNodeRecord(ctx context.Context, name string) bool {
	key := kubestate.Key{Resource: kubestate.ResVppNode, Name: name}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := s.etcdCli.Get(ctx, key.String(), clientv3.WithCountOnly())
	return err == nil && resp.Count > 0
}

// lossWatch samples every node's VPP every 5 ms and records each line of
// want (what the API still asks for) that was missing at some sample: a
// mapping removed that should not have been.
type lossWatch struct {
	stop    chan struct{}
	done    sync.WaitGroup
	mu      sync.Mutex
	lost    map[string]map[string]bool // node -> line
	removed map[string]uint64          // node -> MappingsRemoved at the start
	nodes   []*node
}

func (s *system) watchLoss(want map[string][]string) *lossWatch {
	w := &lossWatch{stop: make(chan struct{}), lost: map[string]map[string]bool{}, removed: map[string]uint64{}, nodes: s.nodes}
	for _, n := range s.nodes {
		w.removed[n.name] = n.a.Renderer().Stats().MappingsRemoved
	}
	w.done.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			for _, n := range s.nodes {
				for _, l := range missing(n.lines(), want[n.name]) {
					w.mu.Lock()
					if w.lost[n.name] == nil {
						w.lost[n.name] = map[string]bool{}
					}
					w.lost[n.name][l] = true
					w.mu.Unlock()
				}
			}
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	})
	return w
}

// end stops the sampling and describes the losses ("" when none) and the
// mappings each agent removed meanwhile.
func (w *lossWatch) end() (lost string, removed map[string]uint64) {
	close(w.stop)
	w.done.Wait()
	removed = map[string]uint64{}
	for _, n := range w.nodes {
		removed[n.name] = n.a.Renderer().Stats().MappingsRemoved - w.removed[n.name]
	}
	var b strings.Builder
	for node, lines := range w.lost {
		ls := slices.Sorted(func(yield func(string) bool) {
			for l := range lines {
				if !yield(l) {
					return
				}
			}
		})
		fmt.Fprintf(&b, "%s lost %d lines the API still has, e.g. %q\n", node, len(ls), ls[:min(3, len(ls))])
	}
	return b.String(), removed
}

// currentWant reads the API and renders every node (failing the test on
// error).
func (s *system) currentWant() *expectation {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := s.expect(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	return e
}

// stopReplicas stops every reflector replica gracefully.
func (s *system) stopReplicas() {
	for _, r := range s.replicas {
		if err := r.p.stop(30 * time.Second); err != nil {
			s.t.Errorf("%s stopped with %v", r.id, err)
		}
	}
}

// startReplicas starts every stopped replica again.
func (s *system) startReplicas() {
	for _, r := range s.replicas {
		if !r.p.running() {
			r.p.start()
		}
	}
}
