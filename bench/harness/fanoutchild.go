package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"contiv.dev/vpp/internal/etcd"
	"contiv.dev/vpp/internal/etcd/embedded"
	"contiv.dev/vpp/internal/etcdproxy"
)

// The proxy-tier figure runs etcd and each gRPC proxy in a process of its
// own (this binary again, told its role by childRoleEnv), so that each
// one's CPU (getrusage) and live heap are its own, exactly; the agents stay
// in the benchmark's process. A child prints "ready ENDPOINT", then answers
// each line "cpu" or "heap" on its stdin with one JSON childStats line,
// and stops when its stdin closes.
const (
	childRoleEnv  = "CONTIV_BENCH_CHILD"
	childDirEnv   = "CONTIV_BENCH_CHILD_DIR"  // etcd's data directory
	childEtcdEnv  = "CONTIV_BENCH_CHILD_ETCD" // the proxy's etcd client URL
	childFastEnv  = "CONTIV_BENCH_CHILD_FAST" // "1": etcd's short timings (tests)
	roleEtcd      = "etcd"
	roleProxy     = "proxy"
	watcherMetric = "etcd_debugging_mvcc_watcher_total"
)

// childStats is what a child reports: its CPU (user+sys) and, after a
// "heap" request's two collections, its live heap; a proxy the bytes it
// received from etcd, etcd the watchings it holds.
type childStats struct {
	CPUNS     int64  `json:"cpu_ns"`
	HeapBytes uint64 `json:"heap_bytes,omitempty"`
	RxBytes   int64  `json:"rx_bytes,omitempty"`
	Watchings int64  `json:"watchings,omitempty"`
	// Writes and Crashes: the simulated VPP's (role vpp) VPP writes since
	// the last "reset" request, and its crashes.
	Writes  int64 `json:"writes,omitempty"`
	Crashes int64 `json:"crashes,omitempty"`
}

// RunChild runs this process as a child of the proxy-tier figure when
// the environment names its role, and then exits; otherwise it returns at
// once. A binary that runs Run (contiv-bench, this package's tests) calls
// it first thing.
func RunChild() {
	role := os.Getenv(childRoleEnv)
	if role == "" {
		return
	}
	if err := runChild(role, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "contiv-bench %s child: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runChild(role string, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		endpoint string
		rx       atomic.Int64
		stats    func() childStats
		reset    = func() {}
	)
	switch role {
	case roleEtcd:
		m, err := embedded.Start(embedded.Params{DataDir: os.Getenv(childDirEnv), Fast: os.Getenv(childFastEnv) == "1"})
		if err != nil {
			return err
		}
		defer m.Close()
		endpoint = "http://" + m.Endpoint()
		stats = func() childStats { return childStats{Watchings: gauge(watcherMetric)} }
	case roleProxy:
		cli, err := countingClient(ctx, os.Getenv(childEtcdEnv), &rx)
		if err != nil {
			return err
		}
		defer cli.Close()
		p, err := etcdproxy.Start(ctx, cli, "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer p.Close()
		endpoint = p.Endpoint()
		stats = func() childStats { return childStats{RxBytes: rx.Load()} }
	case roleVPP:
		ep, st, rs, closeVPP, err := runVPPChild(os.Getenv(childVPPEnv))
		if err != nil {
			return err
		}
		defer closeVPP()
		endpoint, stats, reset = ep, st, rs
	case roleAgent:
		res, closeAgent, err := runAgentChild(ctx, os.Getenv(childAgentEnv))
		if err != nil {
			return err
		}
		defer closeAgent()
		endpoint, stats = res, func() childStats { return childStats{} }
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	if _, err := fmt.Fprintf(out, "ready %s\n", endpoint); err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if sc.Text() == "reset" {
			reset()
		}
		st := stats()
		st.CPUNS = int64(cpuTime()) // before the collections a heap request makes
		if sc.Text() == "heap" {
			st.HeapBytes = liveHeapAfterGC()
		}
		if err := enc.Encode(st); err != nil {
			return err
		}
	}
	return sc.Err()
}

// liveHeapAfterGC is the live heap after two full collections.
func liveHeapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	return liveHeap()
}

// gauge reads a gauge of the default Prometheus registry (etcd's own
// metrics), 0 when absent.
func gauge(name string) int64 {
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return 0
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return int64(mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	return 0
}

// countingClient is an etcd client of endpoint whose connections add the
// bytes they read (what etcd sent them) to rx.
func countingClient(ctx context.Context, endpoint string, rx *atomic.Int64) (*clientv3.Client, error) {
	var d net.Dialer
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		addr = strings.TrimPrefix(strings.TrimPrefix(addr, "http://"), "https://")
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, rx: rx}, nil
	}
	return clientv3.New(clientv3.Config{
		Endpoints:            []string{endpoint},
		DialTimeout:          10 * time.Second,
		DialKeepAliveTime:    etcd.KeepAliveTime,
		DialKeepAliveTimeout: etcd.KeepAliveTimeout,
		DialOptions:          []grpc.DialOption{grpc.WithContextDialer(dial)},
		Logger:               zap.NewNop(),
		Context:              ctx,
	})
}

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	rx *atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.rx.Add(int64(n))
	return n, err
}

// child is a running child process.
type child struct {
	cmd      *exec.Cmd
	in       io.WriteCloser
	out      *bufio.Scanner
	endpoint string
}

// startChild starts this binary again as role, with env added, and waits
// for its endpoint.
func startChild(role string, env ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(append(os.Environ(), childRoleEnv+"="+role), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outR, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s child: %w", role, err)
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewScanner(outR)}
	if !c.out.Scan() {
		c.close()
		return nil, fmt.Errorf("%s child: exited before it was ready", role)
	}
	ep, ok := strings.CutPrefix(c.out.Text(), "ready ")
	if !ok {
		c.close()
		return nil, fmt.Errorf("%s child: unexpected first line %q", role, c.out.Text())
	}
	c.endpoint = ep
	return c, nil
}

// stats asks the child for its figures ("cpu" or "heap").
func (c *child) stats(what string) (childStats, error) {
	var st childStats
	if _, err := fmt.Fprintln(c.in, what); err != nil {
		return st, err
	}
	if !c.out.Scan() {
		return st, errors.Join(errors.New("child ended"), c.out.Err())
	}
	return st, json.Unmarshal(c.out.Bytes(), &st)
}

// close stops the child (its stdin closes) and waits for it.
func (c *child) close() {
	_ = c.in.Close()
	done := make(chan struct{})
	go func() {
		_ = c.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}
