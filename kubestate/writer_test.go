package kubestate

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcdtest"
)

func newWriter(t *testing.T) (*Writer, *clientv3.Client, *etcdtest.Server) {
	t.Helper()
	srv := etcdtest.Start(t)
	cli := srv.Client()
	return NewWriter(cli, nil), cli, srv
}

func pod(i int) *Pod {
	return &Pod{Namespace: "ns", Name: fmt.Sprintf("pod-%04d", i), NodeName: "node-1", IPs: []string{fmt.Sprintf("10.1.%d.%d", i/250, i%250+2)}}
}

func revision(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), "/revision-probe")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

func modRevision(t *testing.T, cli *clientv3.Client, k Key) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), k.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("%s: not stored", k)
	}
	return resp.Kvs[0].ModRevision
}

func TestWriterPutListDelete(t *testing.T) {
	w, cli, _ := newWriter(t)
	ctx := context.Background()
	objs := sampleObjects()
	for _, o := range objs {
		if err := w.Put(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	all, err := ListAll(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Bad) != 0 || len(all.Objects) != len(objs) {
		t.Fatalf("listed %d objects, bad %v; want %d", len(all.Objects), all.Bad, len(objs))
	}
	for _, o := range objs {
		if got := all.Objects[o.Key()]; !reflect.DeepEqual(got, o) {
			t.Errorf("%s: got %+v, want %+v", o.Key(), got, o)
		}
	}
	if rev := revision(t, cli); all.Revision != rev {
		t.Errorf("listing revision %d, etcd at %d", all.Revision, rev)
	}

	svc := objs[0].Key()
	if err := w.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(ctx, svc); err != nil {
		t.Fatalf("deleting an absent key: %v", err)
	}
	l, err := List(ctx, cli, ResService)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Objects) != 0 {
		t.Errorf("after delete: %v", l.Objects)
	}
	if _, err := List(ctx, cli, "ingress"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("list of an unknown resource: %v", err)
	}
}

func TestApplyBatches(t *testing.T) {
	w, cli, _ := newWriter(t)
	ctx := context.Background()
	const n = 300 // three transactions: 128 + 128 + 44
	ops := make([]Op, n)
	for i := range ops {
		ops[i] = PutOp(pod(i))
	}
	before := revision(t, cli)
	if err := w.Apply(ctx, ops); err != nil {
		t.Fatal(err)
	}
	if got := revision(t, cli) - before; got != 3 {
		t.Errorf("%d puts took %d transactions, want 3", n, got)
	}
	l, err := List(ctx, cli, ResPod)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Objects) != n {
		t.Errorf("stored %d pods, want %d", len(l.Objects), n)
	}

	// Deletes batch the same way.
	for i := range ops {
		ops[i] = DeleteOp(ops[i].Key)
	}
	before = revision(t, cli)
	if err := w.Apply(ctx, ops); err != nil {
		t.Fatal(err)
	}
	if got := revision(t, cli) - before; got != 3 {
		t.Errorf("%d deletes took %d transactions, want 3", n, got)
	}
}

func TestApplyLastWinsAndInvalidSkipped(t *testing.T) {
	w, cli, _ := newWriter(t)
	ctx := context.Background()
	a, b, c := pod(1), pod(2), pod(3)
	huge := &Pod{Namespace: "ns", Name: "huge", IPs: []string{strings.Repeat("x", MaxValueSize)}}
	err := w.Apply(ctx, []Op{
		PutOp(a), PutOp(b), DeleteOp(a.Key()),
		PutOp(&Pod{Namespace: "ns"}),                                 // no name
		PutOp(&Pod{Name: "p"}),                                       // no namespace
		PutOp(&Node{Name: "a/b"}),                                    // slash
		DeleteOp(Key{Resource: "ingress", Name: "x"}),                // unknown resource
		DeleteOp(Key{Resource: ResNode, Namespace: "ns", Name: "n"}), // namespaced cluster object
		{Key: c.Key(), Object: b},                                    // superseded by the put of c below
		{Key: pod(5).Key(), Object: b},                               // object under another key
		PutOp(huge),
		PutOp(c),
	})
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("error %v: want ErrInvalid and ErrTooLarge", err)
	}
	for _, want := range []string{"bad name", "bad namespace", `"a/b"`, "ingress", "cluster-scoped", "put /contiv/v1/k8s/pod/node-1/ns/pod-0005: object is /contiv/v1/k8s/pod/node-1/ns/pod-0002", "pod/_unscheduled/ns/huge"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	l, err := List(ctx, cli, ResPod)
	if err != nil {
		t.Fatal(err)
	}
	// c's last op is the valid put; its earlier invalid op is superseded.
	want := map[Key]Object{b.Key(): b, c.Key(): c}
	if !reflect.DeepEqual(l.Objects, want) {
		t.Errorf("stored %v, want %v", l.Objects, want)
	}
}

func TestApplyTransientError(t *testing.T) {
	w, _, srv := newWriter(t)
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := w.Put(ctx, pod(1))
	if err == nil {
		t.Fatal("put with etcd down succeeded")
	}
	if errors.Is(err, ErrInvalid) {
		t.Errorf("etcd down reported as invalid input: %v", err)
	}
}

func TestBatches(t *testing.T) {
	small := make([]rawOp, 300)
	for i := range small {
		small[i] = rawOp{key: fmt.Sprint(i), val: []byte("v")}
	}
	big := make([]rawOp, 5)
	for i := range big {
		big[i] = rawOp{key: "k", val: make([]byte, 400<<10)}
	}
	huge := []rawOp{{key: "a", val: make([]byte, MaxValueSize)}, {key: "b", val: make([]byte, MaxValueSize)}}
	// A move (delete withNext, then put) across the first count boundary.
	moved := slices.Clone(small)
	moved[127].withNext = true
	tests := []struct {
		name string
		ops  []rawOp
		want []int
	}{
		{"none", nil, nil},
		{"one", small[:1], []int{1}},
		{"exactly one transaction", small[:128], []int{128}},
		{"by count", small, []int{128, 128, 44}},
		{"by size", big, []int{2, 2, 1}},
		{"an op at the value limit goes alone", huge, []int{1, 1}},
		{"a move is not split", moved, []int{127, 128, 45}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			total := 0
			for _, b := range batches(tt.ops) {
				got = append(got, len(b))
				for i := range b {
					if b[i].key != tt.ops[total+i].key {
						t.Fatalf("op %d out of order", total+i)
					}
				}
				total += len(b)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("batch sizes %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSyncMarkAndSweep(t *testing.T) {
	w, cli, _ := newWriter(t)
	ctx := context.Background()
	a, b, c := pod(1), pod(2), pod(3)
	node := &Node{Name: "node-1"}
	if err := w.Apply(ctx, []Op{PutOp(a), PutOp(b), PutOp(c), PutOp(node)}); err != nil {
		t.Fatal(err)
	}
	garbage := ResPod.KeyPrefix() + "no-namespace"
	if _, err := cli.Put(ctx, garbage, "{"); err != nil {
		t.Fatal(err)
	}
	aRev, nodeRev := modRevision(t, cli, a.Key()), modRevision(t, cli, node.Key())

	b2 := *b
	b2.IPs = []string{"10.1.9.9"}
	d := pod(4)
	st, err := w.Sync(ctx, ResPod, []Object{a, &b2, d})
	if err != nil {
		t.Fatal(err)
	}
	if want := (SyncStats{Put: 2, Unchanged: 1, Deleted: 2}); st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	if got := modRevision(t, cli, a.Key()); got != aRev {
		t.Errorf("unchanged %s rewritten: mod revision %d -> %d", a.Key(), aRev, got)
	}
	if got := modRevision(t, cli, node.Key()); got != nodeRev {
		t.Errorf("other resource touched: %s mod revision %d -> %d", node.Key(), nodeRev, got)
	}
	l, err := List(ctx, cli, ResPod)
	if err != nil {
		t.Fatal(err)
	}
	want := map[Key]Object{a.Key(): a, b.Key(): &b2, d.Key(): d}
	if !reflect.DeepEqual(l.Objects, want) || len(l.Bad) != 0 {
		t.Errorf("stored %v (bad %v), want %v", l.Objects, l.Bad, want)
	}

	// Nothing changed: no write at all.
	before := revision(t, cli)
	st, err = w.Sync(ctx, ResPod, []Object{d, &b2, a})
	if err != nil {
		t.Fatal(err)
	}
	if want := (SyncStats{Unchanged: 3}); st != want {
		t.Errorf("second sync: stats %+v, want %+v", st, want)
	}
	if after := revision(t, cli); after != before {
		t.Errorf("second sync wrote: revision %d -> %d", before, after)
	}

	// Empty desired state sweeps everything.
	st, err = w.Sync(ctx, ResPod, nil)
	if err != nil || st != (SyncStats{Deleted: 3}) {
		t.Errorf("sync to nothing: %+v, %v", st, err)
	}
	if _, err := w.Sync(ctx, "ingress", nil); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("sync of an unknown resource: %v", err)
	}
}

func TestSyncManyKeys(t *testing.T) {
	w, cli, _ := newWriter(t)
	ctx := context.Background()
	const n = 1100 // more than two list pages and eight transactions
	objs := make([]Object, n)
	for i := range objs {
		objs[i] = pod(i)
	}
	st, err := w.Sync(ctx, ResPod, objs)
	if err != nil || st != (SyncStats{Put: n}) {
		t.Fatalf("first sync: %+v, %v", st, err)
	}
	before := revision(t, cli)
	st, err = w.Sync(ctx, ResPod, objs[:n-1])
	if err != nil || st != (SyncStats{Unchanged: n - 1, Deleted: 1}) {
		t.Fatalf("second sync: %+v, %v", st, err)
	}
	if got := revision(t, cli) - before; got != 1 {
		t.Errorf("one delete took %d transactions", got)
	}
	l, err := List(ctx, cli, ResPod)
	if err != nil || len(l.Objects) != n-1 {
		t.Fatalf("listed %d, %v; want %d", len(l.Objects), err, n-1)
	}
}

func TestSyncInvalidSkipped(t *testing.T) {
	w, cli, _ := newWriter(t)
	ctx := context.Background()
	a, b := pod(1), pod(2)
	st, err := w.Sync(ctx, ResPod, []Object{a, &Node{Name: "n"}, b, pod(1), &Pod{Namespace: "ns"}})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("error %v, want ErrInvalid", err)
	}
	for _, want := range []string{"/contiv/v1/k8s/node/n is not a pod", "duplicate /contiv/v1/k8s/pod/node-1/ns/pod-0001", "bad name"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if st != (SyncStats{Put: 2}) {
		t.Errorf("stats %+v, want 2 puts", st)
	}
	l, err := List(ctx, cli, ResPod)
	if err != nil || len(l.Objects) != 2 {
		t.Errorf("listed %v, %v; want a and b", l.Objects, err)
	}
}

func TestPutChanged(t *testing.T) {
	w, cli, _ := newWriter(t)
	ctx := context.Background()
	a, b := pod(1), pod(2)
	stale := pod(3)
	if err := w.Apply(ctx, []Op{PutOp(a), PutOp(stale)}); err != nil {
		t.Fatal(err)
	}
	aRev := modRevision(t, cli, a.Key())
	ns := &Namespace{Name: "ns"}
	st, err := w.PutChanged(ctx, []Object{ns, a, b})
	if err != nil {
		t.Fatal(err)
	}
	if want := (SyncStats{Put: 2, Unchanged: 1}); st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	if got := modRevision(t, cli, a.Key()); got != aRev {
		t.Errorf("unchanged pod rewritten")
	}
	all, err := ListAll(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	want := map[Key]Object{a.Key(): a, b.Key(): b, stale.Key(): stale, ns.Key(): ns}
	if !reflect.DeepEqual(all.Objects, want) {
		t.Errorf("stored %v, want %v", all.Objects, want)
	}
}

func TestListReportsBadValues(t *testing.T) {
	w, cli, _ := newWriter(t)
	ctx := context.Background()
	good := pod(1)
	if err := w.Put(ctx, good); err != nil {
		t.Fatal(err)
	}
	pp := PodPrefix("node-1")
	bad := map[string]string{
		pp + "ns/not-json":   "{",
		pp + "ns/wrong-type": `{"namespace":"ns","name":"wrong-type","nodeName":"node-1","ips":"10.1.1.1"}`,
		pp + "ns/wrong-name": `{"namespace":"ns","name":"other","nodeName":"node-1"}`,
		pp + "ns/wrong-node": `{"namespace":"ns","name":"wrong-node","nodeName":"node-2"}`,
		pp + "ns/oversized":  `{"namespace":"ns","name":"oversized","nodeName":"node-1","hostIP":"` + strings.Repeat("x", MaxValueSize) + `"}`,
		pp + "ns/a/b":        `{}`,
		// A pod key of layout 1.
		ResPod.KeyPrefix() + "ns/old": `{"namespace":"ns","name":"old","nodeName":"node-1"}`,
	}
	for k, v := range bad {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	// Records of other owners under the prefix are not the listing's business.
	if _, err := cli.Put(ctx, Prefix+"ipam/node-1/ns/p", "10.1.1.2"); err != nil {
		t.Fatal(err)
	}
	for _, list := range []func() (*Listing, error){
		func() (*Listing, error) { return List(ctx, cli, ResPod) },
		func() (*Listing, error) { return ListAll(ctx, cli) },
	} {
		l, err := list()
		if err != nil {
			t.Fatal(err)
		}
		if want := map[Key]Object{good.Key(): good}; !reflect.DeepEqual(l.Objects, want) {
			t.Errorf("objects %v, want %v", l.Objects, want)
		}
		got := map[string]error{}
		for _, b := range l.Bad {
			got[b.Key] = b.Err
		}
		if len(got) != len(bad) {
			t.Errorf("bad values %v, want the %d of %v", l.Bad, len(bad), bad)
		}
		for k := range bad {
			if got[k] == nil {
				t.Errorf("%s not reported", k)
			}
		}
		if err := got[pp+"ns/oversized"]; !errors.Is(err, ErrTooLarge) {
			t.Errorf("oversized value: %v", err)
		}
		if err := got[ResPod.KeyPrefix()+"ns/old"]; !errors.Is(err, ErrOldLayout) {
			t.Errorf("layout-1 key: %v", err)
		}
	}
}

func BenchmarkApply1000(b *testing.B) {
	srv := etcdtest.Start(b)
	w := NewWriter(srv.Client(), nil)
	ctx := context.Background()
	ops := make([]Op, 1000)
	for i := range ops {
		ops[i] = PutOp(pod(i))
	}
	b.ResetTimer()
	for b.Loop() {
		if err := w.Apply(ctx, ops); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSyncUnchanged10k(b *testing.B) {
	srv := etcdtest.Start(b)
	w := NewWriter(srv.Client(), nil)
	ctx := context.Background()
	objs := make([]Object, 10000)
	for i := range objs {
		objs[i] = &Service{
			Namespace: "ns", Name: fmt.Sprintf("svc-%05d", i), Type: "ClusterIP",
			ClusterIPs: []string{fmt.Sprintf("10.96.%d.%d", i/250, i%250+1)},
			Ports:      []ServicePort{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "8080"}},
		}
	}
	if _, err := w.Sync(ctx, ResService, objs); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		st, err := w.Sync(ctx, ResService, objs)
		if err != nil || st.Unchanged != len(objs) {
			b.Fatal(st, err)
		}
	}
}
