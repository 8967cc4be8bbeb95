package chaos

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
)

// Bounds of the waits: reached only when something is wrong.
const (
	convergeLimit = 90 * time.Second
	storedLimit   = 60 * time.Second
	leaderLimit   = 30 * time.Second
	churnLimit    = 5 * time.Minute
)

// fault is one etcd fault: the members chosen by pick are, one after the
// other, killed, kept down for down, and started again.
type fault struct {
	name string
	pick func(c *etcdtest.Cluster) []int
	down time.Duration
}

func leader(c *etcdtest.Cluster) []int { return []int{c.Leader()} }

func follower(c *etcdtest.Cluster) []int { return []int{(c.Leader() + 1) % c.Size()} }

// every is every member, the leader last.
func every(c *etcdtest.Cluster) []int {
	l := c.Leader()
	var out []int
	for i := range c.Size() {
		out = append(out, (l+1+i)%c.Size())
	}
	return out
}

// The faults, in order: the leader killed and restarted; a follower; a
// member down for 10 s (the leader again, the harshest case: an election,
// and 10 s of writes to catch up with); then a rolling restart, which cuts
// every client's connection to every member, so every agent's watch stream
// (which the gRPC balancer put on one of them) is cut at least once.
var faults = []fault{
	{name: "leader killed and restarted", pick: leader, down: time.Second},
	{name: "follower killed and restarted", pick: follower, down: time.Second},
	{name: "member (the leader) down 10s", pick: leader, down: 10 * time.Second},
	{name: "rolling restart, every member killed in turn", pick: every, down: 500 * time.Millisecond},
}

// Three agents watch a three-member etcd while EndpointSlices churn,
// written into etcd as contivctl load writes them, through faults.
func TestAgentsConvergeThroughEtcdFaults(t *testing.T) {
	needChaos(t)
	runChaos(t, false)
}

// The same with the reflector in the loop: the cluster and the churn are
// in a (fake) Kubernetes API, and the reflector writes them into etcd
// through the same faults.
func TestReflectorAndAgentsConvergeThroughEtcdFaults(t *testing.T) {
	needChaos(t)
	runChaos(t, true)
}

// runChaos runs three agents against a three-member etcd while the churned
// slices change, through the faults. After each fault, with the churn
// paused, etcd must hold every slice's last version and every agent's VPP
// must come to hold what a fresh render of etcd gives; the time that took
// is logged. viaReflector puts the reflector between the writes and etcd.
func runChaos(t *testing.T, viaReflector bool) {
	c := etcdtest.StartCluster(t, etcdtest.ClusterParams{})
	cli := c.Client()

	// The example cluster plus the churned services and their first slices.
	objs := append(exampleManifests(t), churnObjects()...)
	for k := range churnServices {
		objs = append(objs, sliceVersion(k, 0))
	}
	var s sink
	// reflector says what the reflector did since the last call.
	reflector := func() string { return "" }
	// stall says how long the churn's etcd writes stalled (writes to the
	// API do not).
	stall := func(log []written, from, to time.Time) string {
		return fmt.Sprintf(", etcd writes stalled up to %v", longestGap(log, from, to))
	}
	if viaReflector {
		stall = func([]written, time.Time, time.Time) string { return "" }
		kube := fake.NewClientset(objs...)
		r := startReflector(t, kube, cli)
		s = &apiSink{kube: kube}
		var resyncs uint64
		reflector = func() string {
			st := r.Status()
			d := st.Resyncs - resyncs
			resyncs = st.Resyncs
			return fmt.Sprintf("; the reflector swept %d times", d)
		}
	} else {
		load(t, cli, objs)
		s = newEtcdSink(cli)
	}
	ch := newChurner(s)

	// Started in name order, node-N gets ID N.
	var nodes []*node
	for _, name := range []string{"node-1", "node-2", "node-3"} {
		nodes = append(nodes, startNode(t, name, c.Endpoints()))
	}
	want := expected(t, nodes, waitStored(t, cli, ch.stats().last))
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

	for _, f := range faults {
		before := ch.stats()
		reflector()
		relists := make([]uint64, len(nodes))
		for i, n := range nodes {
			relists[i] = n.a.Controller().Status().Relists
		}
		ch.resume()
		time.Sleep(time.Second)

		c.WaitLeader(leaderLimit)
		m := f.pick(c)
		faultAt := time.Now()
		var elected []string
		for _, i := range m {
			killedAt := time.Now()
			c.Kill(i)
			// While the member is down: when the others agree on a leader.
			var after time.Duration = -1
			for time.Since(killedAt) < f.down {
				if after < 0 && c.Leader() >= 0 {
					after = time.Since(killedAt)
				}
				time.Sleep(5 * time.Millisecond)
			}
			elected = append(elected, electedAfter(after))
			c.Start(i)
		}
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

		want := expected(t, nodes, waitStored(t, cli, st.last))
		at := waitConverged(t, nodes, want, convergeLimit)
		if len(st.log) > 0 {
			prog.waitReached(st.log[len(st.log)-1].rev, 3*time.Second)
		}
		var rel []uint64
		for i, n := range nodes {
			rel = append(rel, n.a.Controller().Status().Relists-relists[i])
		}
		t.Logf("%s (members %v; a leader %s): VPPs equal the render %v after the fault, %v after the restart, %v after the last write; "+
			"%s; %d writes (%d retries) in the phase%s; relists per agent %v%s",
			f.name, m, strings.Join(elected, ", "), at.Sub(faultAt).Round(time.Millisecond), at.Sub(restartedAt).Round(time.Millisecond),
			at.Sub(st.lastAt).Round(time.Millisecond), prog.lags(st.log, faultAt, pausedAt),
			st.writes-before.writes, st.retries-before.retries, stall(st.log, faultAt, pausedAt), rel, reflector())
	}

	// The end: churn stopped, etcd holds every slice's last version, every
	// agent holds the render of etcd's final state and stays there.
	stop()
	st := ch.stats()
	if st.err != nil {
		t.Fatal(st.err)
	}
	want = expected(t, nodes, waitStored(t, cli, st.last))
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

// load writes objs into etcd as contivctl load does.
func load(t *testing.T, cli *clientv3.Client, objs []runtime.Object) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kubestate.NewWriter(cli, nil).PutChanged(ctx, compact(t, objs)); err != nil {
		t.Fatalf("loading the cluster into etcd: %v", err)
	}
	if _, err := kubestate.MarkSynced(ctx, cli, "test", 0); err != nil {
		t.Fatalf("loading the cluster into etcd: %v", err)
	}
}

// waitStored waits until etcd holds the last version of every churned
// slice (at once when the churn writes etcd; when the reflector does, once
// it has caught up) and returns that listing. Past storedLimit it fails
// the test: a change was lost.
func waitStored(t *testing.T, cli *clientv3.Client, last map[int]*discoveryv1.EndpointSlice) *kubestate.Listing {
	t.Helper()
	deadline := time.Now().Add(storedLimit)
	for {
		l := listAll(t, cli)
		missing := lostChanges(t, l, last)
		if len(missing) == 0 {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd lacks the last write of churned slices after %v:\n%s", storedLimit, strings.Join(missing, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lostChanges lists the churned slices whose last version etcd (listed in
// l) does not hold.
func lostChanges(t *testing.T, l *kubestate.Listing, last map[int]*discoveryv1.EndpointSlice) []string {
	t.Helper()
	var out []string
	for k := range churnServices {
		key := sliceKey(k)
		want := stored(t, last[k])
		got, ok := l.Objects[key]
		switch {
		case want == nil && ok:
			out = append(out, key.String()+": deleted last, etcd holds it")
		case want == nil:
		case !ok:
			out = append(out, key.String()+": etcd lacks it")
		default:
			g, err1 := kubestate.Encode(got)
			w, err2 := kubestate.Encode(want)
			if err1 != nil || err2 != nil || !bytes.Equal(g, w) {
				out = append(out, key.String()+": etcd holds "+string(g)+", the last write is "+string(w))
			}
		}
	}
	return out
}

// checkChurnRendered fails the test unless node n's VPP holds, for every
// churned service, a mapping of its VIP to the endpoints of its slice's
// last version (none when the slice was deleted last): the render compared
// with could be wrong in the same way, this is checked without it.
func checkChurnRendered(t *testing.T, n *node, last map[int]*discoveryv1.EndpointSlice) {
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
		s := last[k]
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
			ep := e.Addresses[0] + ":" + strconv.Itoa(int(*s.Ports[0].Port))
			if !strings.Contains(line, ep) {
				t.Errorf("%s: churn-%d's mapping lacks endpoint %s of the last version:\n%s", n.name, k, ep, line)
			}
		}
	}
}

// electedAfter describes when a leader was seen after a kill (-1: not
// while the member was down).
func electedAfter(d time.Duration) string {
	if d < 0 {
		return "not seen while the member was down"
	}
	return "seen " + d.Round(time.Millisecond).String() + " after the kill"
}
