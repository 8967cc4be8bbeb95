package chaos

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// progress samples every agent's handler revision (the etcd revision of
// what its handlers took in) and keeps when each agent first reached each
// value, to tell how long each churned write took to reach each agent.
type progress struct {
	nodes []*node

	mu   sync.Mutex
	seen [][]sample // per node, revisions increasing
}

type sample struct {
	rev int64
	at  time.Time
}

func newProgress(nodes []*node) *progress {
	return &progress{nodes: nodes, seen: make([][]sample, len(nodes))}
}

// run samples every 5 ms until ctx ends; it keeps a sample only when a
// revision grew, so its memory is bounded by the writes.
func (p *progress) run(ctx context.Context) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		for i, n := range p.nodes {
			rev := n.a.Controller().Status().Revision
			now := time.Now()
			p.mu.Lock()
			if s := p.seen[i]; len(s) == 0 || rev > s[len(s)-1].rev {
				p.seen[i] = append(s, sample{rev: rev, at: now})
			}
			p.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// reached is when node i's handlers first reached rev.
func (p *progress) reached(i int, rev int64) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.seen[i]
	j, _ := slices.BinarySearchFunc(s, rev, func(x sample, r int64) int { return int(x.rev - r) })
	if j == len(s) {
		return time.Time{}, false
	}
	return s[j].at, true
}

// lags summarises, for the writes made between from and to, how long each
// took to reach every agent's handlers (the slowest agent counts): the
// median, the maximum and when the slowest write was made, after from.
func (p *progress) lags(log []written, from, to time.Time) string {
	var lags []time.Duration
	var worst time.Duration
	var worstAt time.Time
	missing := 0
	for _, w := range log {
		if w.rev == 0 || w.at.Before(from) || w.at.After(to) {
			continue
		}
		var lag time.Duration
		for i := range p.nodes {
			at, ok := p.reached(i, w.rev)
			if !ok {
				missing++
				continue
			}
			lag = max(lag, at.Sub(w.at))
		}
		lags = append(lags, lag)
		if lag > worst {
			worst, worstAt = lag, w.at
		}
	}
	if len(lags) == 0 {
		return "write→agent lag not measured (no write with a known revision)"
	}
	slices.Sort(lags)
	out := fmt.Sprintf("write→all agents' handlers: median %v, max %v (write made %v after the fault)",
		lags[len(lags)/2].Round(time.Millisecond), worst.Round(time.Millisecond), worstAt.Sub(from).Round(time.Millisecond))
	if missing > 0 {
		// Their VPPs equal the render, and waitReached gave them time: the
		// write changed nothing for them, e.g. a write retried after a
		// timeout that etcd had applied anyway, which the agents drop as a
		// no-op, their handlers' revision staying at the first one.
		out += fmt.Sprintf(", %d (write, agent) not reached (no-ops for the agents?)", missing)
	}
	return out
}

// longestGap is the longest time between the churner's successive writes
// made from from to to (counting from from and until to): how long the
// writer stalled.
func longestGap(log []written, from, to time.Time) time.Duration {
	prev := from
	var gap time.Duration
	for _, w := range log {
		if w.at.Before(from) || w.at.After(to) {
			continue
		}
		gap = max(gap, w.at.Sub(prev))
		prev = w.at
	}
	return max(gap, to.Sub(prev)).Round(time.Millisecond)
}

// waitReached waits, at most limit, until every agent's handlers have
// reached rev: their VPP can equal the render a moment before their
// status says so.
func (p *progress) waitReached(rev int64, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for i := 0; i < len(p.nodes) && time.Now().Before(deadline); {
		if _, ok := p.reached(i, rev); ok {
			i++
			continue
		}
		time.Sleep(5 * time.Millisecond)
	}
}
