package chaos

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/kubernetes"

	"contiv.dev/vpp/plugins/ksr"
)

// startReflector runs the reflector (no election: the only writer) from
// kube into etcd through cli, and waits until its first mark and sweep is
// done. It is stopped when the test ends.
func startReflector(t *testing.T, kube kubernetes.Interface, cli *clientv3.Client) *ksr.Reflector {
	t.Helper()
	logs := &tailBuffer{max: 16 << 10}
	r, err := ksr.New(ksr.Params{
		Logger:        slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Kube:          kube,
		Etcd:          cli,
		EtcdTimeout:   2 * time.Second,
		ProbeInterval: 100 * time.Millisecond,
		MaxBackoff:    500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if t.Failed() {
			t.Logf("reflector status %+v; log tail:\n%s", r.Status(), logs)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for s := r.Status(); !s.Synced; s = r.Status() {
		if time.Now().After(deadline) {
			t.Fatalf("reflector not synced after 60s: %+v\nlog tail:\n%s", s, logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return r
}
