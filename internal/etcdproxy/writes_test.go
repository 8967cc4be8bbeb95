package etcdproxy

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/noderegistry"
	"contiv.dev/vpp/plugins/ksr"
)

// TestNodeSyncClaimsThroughProxies: agents claiming their IDs at once,
// spread over two proxies (NodeSync's transactions and leases), each get
// a distinct ID, as against etcd itself; a claim again finds its own.
func TestNodeSyncClaimsThroughProxies(t *testing.T) {
	srv := etcdtest.Start(t)
	proxies := []*Proxy{startProxy(t, srv, "127.0.0.1:0"), startProxy(t, srv, "127.0.0.1:0")}
	const k = 8
	ids := make([]uint32, k)
	errs := make([]error, k)
	clis := make([]*clientv3.Client, k)
	for i := range k {
		clis[i] = clientOf(t, proxies[i%len(proxies)].Endpoint())
	}
	var wg sync.WaitGroup
	for i := range k {
		wg.Go(func() {
			ids[i], errs[i] = noderegistry.Claim(ctxT(t), noderegistry.Params{Client: clis[i], Name: nodeName(i), MaxID: k})
		})
	}
	wg.Wait()
	seen := map[uint32]bool{}
	for i := range k {
		if errs[i] != nil || ids[i] < 1 || ids[i] > k || seen[ids[i]] {
			t.Errorf("node %d: ID %d, err %v (IDs so far %v)", i, ids[i], errs[i], seen)
		}
		seen[ids[i]] = true
	}
	again, err := noderegistry.Claim(ctxT(t), noderegistry.Params{Client: clis[1], Name: nodeName(0), MaxID: k})
	if err != nil || again != ids[0] {
		t.Errorf("claiming again through the other proxy: %d, %v; want %d", again, err, ids[0])
	}
}

func nodeName(i int) string { return "node-" + string(rune('a'+i)) }

// TestReflectorFencedWritesThroughProxy: the reflector writing through a
// proxy holds its leader key on an etcd lease it keeps alive past the
// lease's TTL, writes what the API holds in fenced transactions, and, once
// its key is revoked behind its back (deposed), takes a new term on a new
// lease and writes on.
func TestReflectorFencedWritesThroughProxy(t *testing.T) {
	srv := etcdtest.Start(t)
	direct := srv.Client()
	cli := clientOf(t, startProxy(t, srv, "127.0.0.1:0").Endpoint())
	kube := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	r, err := ksr.New(ksr.Params{Kube: kube, Etcd: cli, Identity: "r1", LeaderTTL: 4 * time.Second,
		ProbeInterval: 100 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	nsKey := kubestate.Key{Resource: kubestate.ResNamespace, Name: "shop"}.String()
	stored := func(key string) bool {
		resp, err := direct.Get(ctxT(t), key)
		return err == nil && len(resp.Kvs) == 1
	}
	eventually(t, "the reflector synced", func() bool { return r.Status().Synced && stored(nsKey) })
	lease := leaderLease(t, direct)
	// Past two and a half TTLs the key is still there, on the same lease:
	// its keep-alives pass the proxy. (A TTL of 4 s: under a loaded -race
	// run leases of 1 s and, once, of 2 s expired between keep-alives.)
	time.Sleep(10 * time.Second)
	if got := leaderLease(t, direct); got != lease {
		t.Fatalf("leader key on lease %x, then %x: the lease was not kept alive through the proxy", lease, got)
	}

	if _, err := direct.Revoke(ctxT(t), lease); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bank"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bankKey := kubestate.Key{Resource: kubestate.ResNamespace, Name: "bank"}.String()
	eventually(t, "a new term on a new lease wrote the new namespace", func() bool {
		l := leaderLease(t, direct)
		return l != 0 && l != lease && stored(bankKey)
	})
}

// leaderLease is the lease of the reflector's leader key, 0 when absent.
func leaderLease(t *testing.T, cli *clientv3.Client) clientv3.LeaseID {
	t.Helper()
	resp, err := cli.Get(ctxT(t), ksr.LeaderKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return 0
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}
