package chaos

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
)

// Bounds of the waits: reached only when something is wrong.
const (
	convergeLimit = 90 * time.Second
	leaderLimit   = 30 * time.Second
	churnLimit    = 5 * time.Minute
)

// fault is one etcd fault: a member chosen by pick is killed, stays down
// for down, and is started again.
type fault struct {
	name string
	pick func(c *etcdtest.Cluster) int
	down time.Duration
}

func leader(c *etcdtest.Cluster) int { return c.Leader() }

func follower(c *etcdtest.Cluster) int { return (c.Leader() + 1) % c.Size() }

// Three agents watch a three-member etcd while EndpointSlices churn; the
// leader is killed and restarted, then a follower, then a member (the
// leader again, the harshest case) is down for 10 s. After each fault,
// with the churn paused, every agent's VPP must come to hold what a fresh
// render of etcd gives, and etcd must hold every slice's last write.
func TestAgentsConvergeThroughEtcdFaults(t *testing.T) {
	needChaos(t)
	c := etcdtest.StartCluster(t, etcdtest.ClusterParams{})
	cli := c.Client()
	w := kubestate.NewWriter(cli, nil)

	// The example cluster plus the churned services and their first slices.
	objs := exampleObjects(t)
	objs = append(objs, churnObjects()...)
	ch := newChurner(cli)
	for k := range churnServices {
		s := sliceVersion(k, 0)
		objs = append(objs, s)
		ch.last[s.Key()] = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	_, err := w.PutChanged(ctx, objs)
	cancel()
	if err != nil {
		t.Fatalf("loading the cluster into etcd: %v", err)
	}

	// Started in name order, node-N gets ID N.
	var nodes []*node
	for _, name := range []string{"node-1", "node-2", "node-3"} {
		nodes = append(nodes, startNode(t, name, c.Endpoints()))
	}
	want := expected(t, nodes, listAll(t, cli))
	waitConverged(t, nodes, want, convergeLimit)
	for _, n := range nodes {
		checkChurnRendered(t, n, ch.stats().last)
	}

	churnCtx, stopChurn := context.WithTimeout(context.Background(), churnLimit)
	prog := newProgress(nodes)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		ch.run(churnCtx)
	}()
	go func() {
		defer wg.Done()
		prog.run(churnCtx)
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopChurn()
			wg.Wait()
			stopped = true
		}
	}
	t.Cleanup(stop)

	faults := []fault{
		{name: "leader killed and restarted", pick: leader, down: time.Second},
		{name: "follower killed and restarted", pick: follower, down: time.Second},
		{name: "member (leader) down 10s", pick: leader, down: 10 * time.Second},
	}
	for _, f := range faults {
		before := ch.stats()
		relists := make([]uint64, len(nodes))
		for i, n := range nodes {
			relists[i] = n.a.Controller().Status().Relists
		}
		ch.resume()
		time.Sleep(time.Second)

		c.WaitLeader(leaderLimit)
		m := f.pick(c)
		faultAt := time.Now()
		c.Kill(m)
		time.Sleep(f.down)
		c.Start(m)
		restartedAt := time.Now()
		time.Sleep(time.Second)
		ch.pause()
		pausedAt := time.Now()
		st := ch.stats()
		if st.err != nil {
			t.Fatal(st.err)
		}
		if st.writes == before.writes {
			t.Fatalf("%s: the churn wrote nothing", f.name)
		}

		l := listAll(t, cli)
		checkNoLoss(t, l, st.last)
		want := expected(t, nodes, l)
		at := waitConverged(t, nodes, want, convergeLimit)
		var rel []uint64
		for i, n := range nodes {
			rel = append(rel, n.a.Controller().Status().Relists-relists[i])
		}
		t.Logf("%s (member %d): VPPs equal the render %v after the fault, %v after the restart, %v after the last write; "+
			"%s; %d writes (%d retries) in the phase; relists per agent %v",
			f.name, m, at.Sub(faultAt).Round(time.Millisecond), at.Sub(restartedAt).Round(time.Millisecond),
			at.Sub(st.lastAt).Round(time.Millisecond), prog.lags(st.log, faultAt, pausedAt),
			st.writes-before.writes, st.retries-before.retries, rel)
	}

	// The end: churn stopped, every agent holds the render of etcd's final
	// state, which holds every slice's last write, and stays there.
	stop()
	st := ch.stats()
	if st.err != nil {
		t.Fatal(st.err)
	}
	l := listAll(t, cli)
	checkNoLoss(t, l, st.last)
	want = expected(t, nodes, l)
	waitConverged(t, nodes, want, convergeLimit)
	time.Sleep(time.Second)
	if ok, why := converged(nodes, want); !ok {
		t.Fatalf("a second after converging: %s", why)
	}
	for _, n := range nodes {
		checkChurnRendered(t, n, st.last)
	}
	t.Logf("churn: %d writes, %d retries; last versions %v", st.writes, st.retries, st.versions)
}

// exampleObjects is deploy/examples/cluster.yaml.
func exampleObjects(t *testing.T) []kubestate.Object {
	t.Helper()
	f, err := os.Open("../deploy/examples/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	objs, err := kubestate.LoadYAML(f)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// checkNoLoss fails the test unless etcd (listed in l) holds the last
// version written of every churned slice.
func checkNoLoss(t *testing.T, l *kubestate.Listing, last map[kubestate.Key]*kubestate.EndpointSlice) {
	t.Helper()
	for k := range churnServices {
		key := sliceKey(k)
		want, wrote := last[key]
		if !wrote {
			t.Fatalf("no write recorded for %s", key)
		}
		got, ok := l.Objects[key]
		switch {
		case want == nil && ok:
			t.Errorf("%s: deleted last, etcd holds %+v", key, got)
		case want == nil:
		case !ok:
			t.Errorf("%s: etcd lost it, want %+v", key, want)
		default:
			g, err1 := kubestate.Encode(got)
			w, err2 := kubestate.Encode(want)
			if err1 != nil || err2 != nil || !bytes.Equal(g, w) {
				t.Errorf("%s: etcd holds\n%s\nwant the last write\n%s", key, g, w)
			}
		}
	}
}

// checkChurnRendered fails the test unless node n's VPP holds, for every
// churned service, a mapping of its VIP to the endpoints of its slice's
// last version (none when the slice was deleted last): the render compared
// with could be wrong in the same way, this is checked without it.
func checkChurnRendered(t *testing.T, n *node, last map[kubestate.Key]*kubestate.EndpointSlice) {
	t.Helper()
	lines := n.lines()
	for k := range churnServices {
		prefix := "mapping " + churnVIP(k) + ":80/TCP"
		var line string
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				line = l
			}
		}
		s := last[sliceKey(k)]
		if s == nil {
			if line != "" {
				t.Errorf("%s: the slice of churn-%d was deleted, VPP holds %q", n.name, k, line)
			}
			continue
		}
		if line == "" {
			t.Errorf("%s: no mapping of churn-%d (%s) in VPP", n.name, k, prefix)
			continue
		}
		for _, e := range s.Endpoints {
			ep := e.Addresses[0] + ":" + strconv.Itoa(int(s.Ports[0].Port))
			if !strings.Contains(line, ep) {
				t.Errorf("%s: churn-%d's mapping lacks endpoint %s of the last version:\n%s", n.name, k, ep, line)
			}
		}
	}
}
