package core

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"contiv.dev/vpp/agent"
	"contiv.dev/vpp/internal/etcd"
	"contiv.dev/vpp/internal/etcd/embedded"
	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/noderegistry"
	"contiv.dev/vpp/plugins/vpp/sim"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// EmbeddedEtcd starts an embedded etcd in a fresh temporary directory,
// with a client; close stops both and removes the directory.
func EmbeddedEtcd(ctx context.Context, fast bool) (m *embedded.Member, cli *clientv3.Client, close func(), err error) {
	dir, err := os.MkdirTemp("", "contiv-bench-etcd-")
	if err != nil {
		return nil, nil, nil, err
	}
	m, err = embedded.Start(embedded.Params{DataDir: dir, Fast: fast})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	cli, err = EtcdClient(ctx, m)
	if err != nil {
		m.Close()
		_ = os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	return m, cli, func() {
		_ = cli.Close()
		m.Close()
		_ = os.RemoveAll(dir)
	}, nil
}

func EtcdClient(ctx context.Context, m *embedded.Member) (*clientv3.Client, error) {
	return etcd.NewClient(ctx, etcd.ClientParams{Endpoints: []string{"http://" + m.Endpoint()}, DialTimeout: 10 * time.Second})
}

// EtcdHolding starts an embedded etcd (EmbeddedEtcd) and loads W(n) into
// it.
func EtcdHolding(ctx context.Context, fast bool, n int) (m *embedded.Member, cli *clientv3.Client, w *workload.Workload, close func(), err error) {
	if m, cli, close, err = EmbeddedEtcd(ctx, fast); err != nil {
		return nil, nil, nil, nil, err
	}
	if w, err = LoadW(ctx, cli, n); err != nil {
		close()
		return nil, nil, nil, nil, err
	}
	return m, cli, w, close, nil
}

// LoadW loads W(n) into etcd and returns it.
func LoadW(ctx context.Context, cli *clientv3.Client, n int) (*workload.Workload, error) {
	w := workload.New(n)
	if err := load(ctx, cli, w); err != nil {
		return nil, fmt.Errorf("loading W(%d) into etcd: %w", n, err)
	}
	return w, nil
}

// load writes W(N) into etcd as the reflector and NodeSync would have:
// every object through kubestate.Writer (batched transactions), and the
// NodeSync records and ID keys of nodes 2..100. Node 1's are left to its
// agent, which claims ID 1, the lowest free one.
func load(ctx context.Context, cli *clientv3.Client, w *workload.Workload) error {
	ops := make([]kubestate.Op, 0, len(w.Nodes)+len(w.VppNodes)+2*w.N+len(w.Pods))
	for _, n := range w.Nodes {
		ops = append(ops, kubestate.PutOp(n))
	}
	ids := make([]clientv3.Op, 0, len(w.VppNodes))
	for _, vn := range w.VppNodes {
		if vn.ID == workload.ThisNode {
			continue
		}
		ops = append(ops, kubestate.PutOp(vn))
		ids = append(ids, clientv3.OpPut(noderegistry.IDPrefix+strconv.FormatUint(uint64(vn.ID), 10), vn.Name))
	}
	for _, p := range w.Pods {
		ops = append(ops, kubestate.PutOp(p))
	}
	for i := range w.Services {
		ops = append(ops, kubestate.PutOp(w.Services[i]), kubestate.PutOp(w.Slices[i]))
	}
	if err := kubestate.NewWriter(cli, nil).Apply(ctx, ops); err != nil {
		return err
	}
	if _, err := cli.Txn(ctx).Then(ids...).Commit(); err != nil {
		return fmt.Errorf("node IDs: %w", err)
	}
	// As a reflector's sweep: a complete output, which agents require.
	if _, err := kubestate.MarkSynced(ctx, cli, "bench", 0); err != nil {
		return err
	}
	return nil
}

// Quiesce waits until the agent has stopped writing to the simulated VPP
// for a second with nothing queued: the startup is over.
func Quiesce(ctx context.Context, a *agent.Agent, v *sim.VPP) error {
	last, since := v.Writes(), time.Now()
	return WaitUntil(ctx, 2*time.Minute, func() bool {
		if n := v.Writes(); n != last || a.Controller().Status().QueueDepth > 0 {
			last, since = n, time.Now()
			return false
		}
		return time.Since(since) >= time.Second
	})
}

// WaitUntil polls cond every 200µs until it holds, ctx ends or timeout
// passes. The poll only decides when to stop waiting: no figure is read
// from its timing.
func WaitUntil(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s", timeout)
		}
		if err := Sleep(ctx, 200*time.Microsecond); err != nil {
			return err
		}
	}
	return nil
}

func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
