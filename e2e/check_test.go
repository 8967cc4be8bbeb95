package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/agent/offline"
	"contiv.dev/vpp/kubestate"
)

// apiObjects reads every object the reflector mirrors from the API server
// (as the admin) and converts it as the reflector does.
func apiObjects(ctx context.Context, kube kubernetes.Interface) (map[kubestate.Key]kubestate.Object, error) {
	var all []runtime.Object
	ns, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range ns.Items {
		all = append(all, &ns.Items[i])
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		all = append(all, &nodes.Items[i])
	}
	pods, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		all = append(all, &pods.Items[i])
	}
	svcs, err := kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range svcs.Items {
		all = append(all, &svcs.Items[i])
	}
	eps, err := kube.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range eps.Items {
		all = append(all, &eps.Items[i])
	}
	out := make(map[kubestate.Key]kubestate.Object, len(all))
	for _, o := range all {
		c, err := kubestate.FromK8s(o)
		if err != nil {
			return nil, err
		}
		out[c.Key()] = c
	}
	return out, nil
}

// etcdState is what the contiv etcd holds: the mirrored Kubernetes
// objects and NodeSync's node records.
type etcdState struct {
	k8s   map[kubestate.Key]kubestate.Object
	nodes []kubestate.Object // vppnode records
}

func readEtcd(ctx context.Context, cli *clientv3.Client) (etcdState, error) {
	l, err := kubestate.ListAll(ctx, cli)
	if err != nil {
		return etcdState{}, err
	}
	if len(l.Bad) > 0 {
		return etcdState{}, fmt.Errorf("etcd holds undecodable values: %v", l.Bad)
	}
	s := etcdState{k8s: map[kubestate.Key]kubestate.Object{}}
	for k, o := range l.Objects {
		if k.Resource == kubestate.ResVppNode {
			s.nodes = append(s.nodes, o)
		} else {
			s.k8s[k] = o
		}
	}
	return s, nil
}

// objectsDiff lists the keys whose stored object differs from the API's
// (at most 10); empty when equal.
func objectsDiff(api, stored map[kubestate.Key]kubestate.Object) string {
	var out []string
	for _, k := range slices.SortedFunc(maps.Keys(api), cmpKey) {
		a, s := api[k], stored[k]
		switch {
		case s == nil:
			out = append(out, "missing in etcd: "+k.String())
		case !sameObject(a, s):
			out = append(out, "differs in etcd: "+k.String())
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(stored), cmpKey) {
		if api[k] == nil {
			out = append(out, "not in the API: "+k.String())
		}
	}
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("... %d more", len(out)-10))
	}
	return strings.Join(out, "\n")
}

func cmpKey(a, b kubestate.Key) int { return strings.Compare(a.String(), b.String()) }

func sameObject(a, b kubestate.Object) bool {
	x, err1 := kubestate.Encode(a)
	y, err2 := kubestate.Encode(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// render is what node n's VPP must hold for the API's objects and the
// node records NodeSync keeps in etcd: a fresh offline render.
func render(ctx context.Context, n *node, api map[kubestate.Key]kubestate.Object, vppNodes []kubestate.Object) ([]string, error) {
	objs := append(slices.Collect(maps.Values(api)), vppNodes...)
	r, err := offline.Render(ctx, offline.Params{Objects: objs, Config: n.cfg, NodeID: n.a.NodeID()})
	if err != nil {
		return nil, fmt.Errorf("render for %s: %w", n.name, err)
	}
	if len(r.Failures) > 0 {
		return nil, fmt.Errorf("render for %s: the simulated VPP refused %v", n.name, r.Failures)
	}
	return r.Applied.Lines(), nil
}

// linesDiff lists the lines only in got (+) and only in want (-), at most 20.
func linesDiff(got, want []string) string {
	var b strings.Builder
	n := 0
	add := func(sign, l string) {
		if n < 20 {
			fmt.Fprintf(&b, "%s %s\n", sign, l)
		}
		n++
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			add("+", l)
		}
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			add("-", l)
		}
	}
	if n > 20 {
		fmt.Fprintf(&b, "... %d more\n", n-20)
	}
	return b.String()
}

// missing lists the lines of want that got lacks.
func missing(got, want []string) []string {
	var out []string
	for _, l := range want {
		if !slices.Contains(got, l) {
			out = append(out, l)
		}
	}
	return out
}

// expectation is the system's state a step must reach: the API's objects
// and, per node, the lines its VPP must hold.
type expectation struct {
	api   map[kubestate.Key]kubestate.Object
	nodes []kubestate.Object
	want  map[string][]string
}

// expect reads the API and the node records and renders every node.
func (s *system) expect(ctx context.Context) (*expectation, error) {
	api, err := apiObjects(ctx, s.cp.kube)
	if err != nil {
		return nil, fmt.Errorf("reading the API: %w", err)
	}
	st, err := readEtcd(ctx, s.etcdCli)
	if err != nil {
		return nil, fmt.Errorf("reading etcd: %w", err)
	}
	e := &expectation{api: api, nodes: st.nodes, want: map[string][]string{}}
	for _, n := range s.nodes {
		if e.want[n.name], err = render(ctx, n, api, st.nodes); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// converged tells whether etcd holds the API's objects and every node's
// VPP holds its render; why says what differs.
func (s *system) converged(ctx context.Context, e *expectation) (bool, string) {
	st, err := readEtcd(ctx, s.etcdCli)
	if err != nil {
		return false, err.Error()
	}
	if d := objectsDiff(e.api, st.k8s); d != "" {
		return false, "etcd is not the API:\n" + d
	}
	for _, n := range s.nodes {
		if got := n.lines(); !slices.Equal(got, e.want[n.name]) {
			return false, fmt.Sprintf("%s's VPP is not the render:\n%s", n.name, linesDiff(got, e.want[n.name]))
		}
	}
	return true, ""
}

// waitConverged waits until etcd equals the API and both agents' VPPs equal
// a fresh render of the API's objects; the API is read again to confirm
// nothing changed meanwhile. It returns how long that took from since (the
// write that started the step). It fails the test after limit.
func (s *system) waitConverged(since time.Time, limit time.Duration) time.Duration {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	why := "not checked"
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		e, err := s.expect(ctx)
		if err != nil {
			why = err.Error()
			cancel()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		// Poll fast against this expectation for a while, then read the
		// API again: the controllers may still be writing.
		for i := 0; i < 40; i++ {
			ok, w := s.converged(ctx, e)
			if !ok {
				why = w
				time.Sleep(5 * time.Millisecond)
				continue
			}
			at := time.Since(since)
			again, err := s.expect(ctx)
			if err == nil && sameExpectation(e, again) {
				cancel()
				return at
			}
			break
		}
		cancel()
	}
	s.t.Fatalf("not converged after %v: %s", limit, why)
	return 0
}

func sameExpectation(a, b *expectation) bool {
	if objectsDiff(a.api, b.api) != "" {
		return false
	}
	for k, v := range a.want {
		if !slices.Equal(v, b.want[k]) {
			return false
		}
	}
	return true
}
