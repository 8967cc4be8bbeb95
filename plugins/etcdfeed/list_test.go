package etcdfeed

import (
	"context"
	"reflect"
	"runtime"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
)

// store writes objs into etcd as the reflector stores them, and returns
// the stored values.
func store(tb testing.TB, cli *clientv3.Client, objs map[kubestate.Key]kubestate.Object) map[kubestate.Key][]byte {
	tb.Helper()
	ctx := context.Background()
	stored := map[kubestate.Key][]byte{}
	ops := make([]clientv3.Op, 0, 128)
	flush := func() {
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			tb.Fatal(err)
		}
		ops = ops[:0]
	}
	for k, o := range objs {
		raw, err := kubestate.Encode(o)
		if err != nil {
			tb.Fatal(err)
		}
		stored[k] = raw
		if ops = append(ops, clientv3.OpPut(k.String(), string(raw))); len(ops) == cap(ops) {
			flush()
		}
	}
	flush()
	return stored
}

// TestListingOfManyPages: a listing of prefixes of several pages each
// holds every stored object, each as decoding its stored value alone
// gives it, in the order listed; and a write during the listing is not in
// it (one revision). The pages' buffers are reused (etcdrange.Buffers): an
// object that kept anything of its page's bytes (a page released before
// it was decoded, a decoder that does not copy what it keeps) would show
// a later page's bytes here (it does with kubestate's rehome left out).
func TestListingOfManyPages(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stored := store(t, cli, workload.New(2500).Objects()) // 3 pages of Services, 3 of EndpointSlices
	var late kubestate.Key
	f := New(Params{Client: cli, Hooks: &Hooks{AfterFirstPage: func() {
		for k := range stored {
			if k.Resource == kubestate.ResEndpointSlice {
				late = k
				if _, err := cli.Delete(ctx, k.String()); err != nil {
					t.Error(err)
				}
				delete(stored, k)
				return
			}
		}
	}}}, nil)
	l, err := f.list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	objs := l.out.Objects
	if _, ok := objs[late]; !ok {
		t.Errorf("%s, deleted after the listing's first page, is not in the listing", late)
	}
	if len(l.out.Listed) != len(objs) {
		t.Errorf("Listed holds %d objects, Objects %d", len(l.out.Listed), len(objs))
	}
	for i := 1; i < len(l.out.Listed); i++ {
		a, b := l.out.Listed[i-1].Key(), l.out.Listed[i].Key()
		if a.Resource == b.Resource && a.String() >= b.String() {
			t.Fatalf("Listed out of order: %s before %s", a, b)
		}
	}
	delete(objs, late)
	if len(objs) != len(stored) || len(l.out.Bad) != 0 {
		t.Errorf("listed %d objects (%d bad), want %d", len(objs), len(l.out.Bad), len(stored))
	}
	for k, raw := range stored {
		want, err := kubestate.Decode(k, raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := objs[k]; !reflect.DeepEqual(got, want) {
			t.Fatalf("%s listed as %+v, want %+v", k, got, want)
		}
	}
}

// TestPageSize: pages grow with what remains, from listPageSize up to
// maxListPage.
func TestPageSize(t *testing.T) {
	for _, c := range []struct{ remaining, want int64 }{
		{0, listPageSize}, {500, listPageSize}, {8 * listPageSize, listPageSize}, {8*listPageSize + 80, listPageSize + 10},
		{8 * maxListPage, maxListPage}, {1 << 40, maxListPage},
	} {
		if got := pageSize(c.remaining); got != c.want {
			t.Errorf("pageSize(%d) = %d, want %d", c.remaining, got, c.want)
		}
	}
}

// BenchmarkListingW20000 measures the feed's listing of W(20 000) (40 000
// Services and EndpointSlices) from an etcd in this process: its CPU
// (cpu-ms/op: etcd's range reads, gRPC both ways, decoding) and the bytes
// it allocates. go test -run XXX -bench Listing -benchtime 5x.
func BenchmarkListingW20000(b *testing.B) {
	srv := etcdtest.Start(b)
	cli := srv.Client()
	ctx := context.Background()
	store(b, cli, workload.New(20000).Objects())
	f := New(Params{Client: cli}, nil)
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for range b.N {
		c0 := processCPU()
		l, err := f.list(ctx)
		if err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - c0
		runtime.KeepAlive(l)
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// processCPU is the process's CPU time, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
