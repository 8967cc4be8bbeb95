package etcdtest

import (
	"context"
	"testing"
)

func TestStartPutRestartWipe(t *testing.T) {
	s := Start(t)
	ctx := context.Background()
	cli := s.Client()
	if _, err := cli.Put(ctx, "/k", "v"); err != nil {
		t.Fatal(err)
	}
	s.Restart()
	resp, err := cli.Get(ctx, "/k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("after restart got %v", resp.Kvs)
	}
	s.Wipe()
	resp, err = cli.Get(ctx, "/k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Fatalf("after wipe got %v", resp.Kvs)
	}
}

// BenchmarkStopWatched stops a server while a client watches it: etcd alone
// waits its request timeout (5 s) for the watch; streamDrain bounds that.
func BenchmarkStopWatched(b *testing.B) {
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		s := Start(b)
		cli := s.Client()
		wch := cli.Watch(ctx, "/k")
		if _, err := cli.Put(ctx, "/k", "v"); err != nil {
			b.Fatal(err)
		}
		<-wch // the watch is open on the server
		b.StartTimer()
		s.Stop()
	}
}
