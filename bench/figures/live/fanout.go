package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/internal/etcd/embedded"
	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
)

// fanoutWave is the number of agents started at once: each lists W(N)
// from etcd and resyncs, so a wave bounds the start-up's CPU and memory
// peak. Waves are not measured.
const fanoutWave = 10

// fanoutReserve is the memory left free for the machine when deciding
// whether the next K fits.
const fanoutReserve = 4 << 30

// fanoutAgent is one agent of the fan-out figure: the real controller (its
// etcd watcher included, on a client of its own), the service processor
// and the NAT44 renderer over a counting VPP; a probe handler and applier
// report when a watched change has been applied.
type fanoutAgent struct {
	ctl  *controller.Controller
	cli  *clientv3.Client
	stop context.CancelFunc
	done chan error
}

// probe notes, as a controller handler, that the batch holds the change
// under key, and reports the time at the end of the batch's apply, after
// the renderer's (appliers run in order): the VPP calls of the change have
// been issued.
type probe struct {
	key *atomic.Pointer[kubestate.Key]
	out chan<- time.Time
	hit bool // owned by the controller's loop
}

func (p *probe) Name() string { return "fanout-probe" }

func (p *probe) HandlesEvent(ev controller.Event) bool {
	c, ok := ev.(*controller.ChangeEvent)
	if !ok {
		return false
	}
	k := p.key.Load()
	return k != nil && c.Key == *k
}

func (p *probe) Resync(context.Context, *controller.ResyncEvent) error { return nil }

func (p *probe) Update(context.Context, controller.Event) error { p.hit = true; return nil }

func (p *probe) Apply(context.Context, bool) error {
	if p.hit {
		p.hit = false
		p.out <- time.Now()
	}
	return nil
}

// fanoutSet is K agents against one etcd and the change they all watch.
type fanoutSet struct {
	env *core.Env
	// dial makes the i-th agent's etcd client (i from 0).
	dial   func(ctx context.Context, i int) (*clientv3.Client, error)
	table  core.TagTable
	key    atomic.Pointer[kubestate.Key]
	out    chan time.Time
	agents []*fanoutAgent
}

func newFanoutSet(env *core.Env, m *embedded.Member, table core.TagTable, maxK int) *fanoutSet {
	dial := func(ctx context.Context, _ int) (*clientv3.Client, error) { return core.EtcdClient(ctx, m) }
	return &fanoutSet{env: env, dial: dial, table: table, out: make(chan time.Time, maxK)}
}

// start starts one agent; it is ready once Ready.
func (s *fanoutSet) start(ctx context.Context) (*fanoutAgent, error) {
	cli, err := s.dial(ctx, len(s.agents))
	if err != nil {
		return nil, err
	}
	p, err := s.env.NewPipeline(&core.CountingVPP{}, s.table)
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	r := p.NAT44()
	if r == nil {
		_ = cli.Close()
		return nil, errors.New("fanout: the pipeline's renderer is not NAT44")
	}
	pr := &probe{key: &s.key, out: s.out}
	ctl := controller.New(controller.Params{
		Logger:   slog.New(slog.DiscardHandler),
		Client:   cli,
		Handlers: []controller.Handler{p.Proc, pr},
		Appliers: []controller.Applier{r, pr},
	})
	rctx, stop := context.WithCancel(ctx)
	a := &fanoutAgent{ctl: ctl, cli: cli, stop: stop, done: make(chan error, 1)}
	go func() { a.done <- ctl.Run(rctx) }()
	s.agents = append(s.agents, a)
	return a, nil
}

// errFanoutMemory stops the figure's growth before the machine runs out
// of memory.
var errFanoutMemory = errors.New("fanout: not enough memory for more agents")

// grow starts agents, fanoutWave at a time, until there are k, each wave
// ready before the next starts. fits is asked before each wave whether
// that many more agents fit in memory.
func (s *fanoutSet) grow(ctx context.Context, k int, fits func(more int) bool) error {
	for len(s.agents) < k {
		if !fits(min(fanoutWave, k-len(s.agents))) {
			return fmt.Errorf("%w (at %d agents)", errFanoutMemory, len(s.agents))
		}
		wave := make([]*fanoutAgent, 0, fanoutWave)
		for range min(fanoutWave, k-len(s.agents)) {
			a, err := s.start(ctx)
			if err != nil {
				return fmt.Errorf("fanout: agent %d: %w", len(s.agents)+1, err)
			}
			wave = append(wave, a)
		}
		err := core.WaitUntil(ctx, 5*time.Minute, func() bool {
			for _, a := range wave {
				if !a.ctl.Ready() || a.ctl.Status().QueueDepth > 0 {
					return false
				}
			}
			return true
		})
		if err != nil {
			return fmt.Errorf("fanout: agents %d…%d not ready: %w", len(s.agents)-len(wave)+1, len(s.agents), err)
		}
	}
	return nil
}

// close stops every agent and closes its client.
func (s *fanoutSet) close() {
	for _, a := range s.agents {
		a.stop()
	}
	for _, a := range s.agents {
		<-a.done
		_ = a.cli.Close()
	}
	s.agents = nil
}

// change writes one slice and waits until every agent has applied it. It
// returns each agent's time from just before the put to the end of its
// apply, and the process CPU the change took (etcd, K watch streams, K
// agents).
func (s *fanoutSet) change(ctx context.Context, cli *clientv3.Client, sl *kubestate.EndpointSlice) ([]time.Duration, time.Duration, error) {
	val, err := kubestate.Encode(sl)
	if err != nil {
		return nil, 0, err
	}
	k := sl.Key()
	s.key.Store(&k)
	defer s.key.Store(nil)
	k0 := k.String()
	cpu0 := core.CPUTime()
	t0 := time.Now()
	if _, err := cli.Put(ctx, k0, string(val)); err != nil {
		return nil, 0, fmt.Errorf("etcd put: %w", err)
	}
	lat := make([]time.Duration, 0, len(s.agents))
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for range s.agents {
		select {
		case t := <-s.out:
			lat = append(lat, t.Sub(t0))
		case <-timeout.C:
			return nil, 0, fmt.Errorf("%s: %d of %d agents applied it within a minute", k0, len(lat), len(s.agents))
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	return lat, core.CPUTime() - cpu0, nil
}

// changeSeq is the churn of W(N) and its undoing, one slice after the
// other: writing them in turn, cyclically, keeps every write a change.
func changeSeq(w *workload.Workload) []*kubestate.EndpointSlice {
	cs := w.Churn()
	seq := make([]*kubestate.EndpointSlice, 0, 2*len(cs))
	for _, c := range cs {
		seq = append(seq, c.New)
	}
	for i := len(cs) - 1; i >= 0; i-- {
		seq = append(seq, cs[i].Prev)
	}
	return seq
}

// heapSplit is the live heap after a full collection, split between
// embedded etcd's server and everything else, from the runtime's heap
// profile (sampled every runtime.MemProfileRate bytes, scaled back as
// pprof does). A sample is etcd's when its allocation stack passes
// through etcd's server, its storage, raft or the gRPC server.
func heapSplit() (etcdBytes, otherBytes float64) {
	runtime.GC()
	runtime.GC() // the profile lags one cycle
	var recs []runtime.MemProfileRecord
	for {
		n, _ := runtime.MemProfile(nil, false)
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = runtime.MemProfile(recs, false); ok {
			recs = recs[:n]
			break
		}
	}
	rate := float64(runtime.MemProfileRate)
	for i := range recs {
		r := &recs[i]
		b, objs := float64(r.InUseBytes()), float64(r.InUseObjects())
		if objs <= 0 || b <= 0 {
			continue
		}
		if rate > 1 {
			b /= 1 - math.Exp(-(b/objs)/rate)
		}
		if etcdStack(r.Stack()) {
			etcdBytes += b
		} else {
			otherBytes += b
		}
	}
	return etcdBytes, otherBytes
}

// etcdServerFuncs are the function-name prefixes of embedded etcd's side.
var etcdServerFuncs = []string{
	"go.etcd.io/etcd/server/", "go.etcd.io/bbolt", "go.etcd.io/raft/",
	"google.golang.org/grpc.(*Server)", "google.golang.org/grpc/internal/transport.(*http2Server)",
	"google.golang.org/grpc/internal/transport.NewServerTransport", "google.golang.org/grpc/internal/transport.newHTTP2Server",
}

func etcdStack(pcs []uintptr) bool {
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		for _, p := range etcdServerFuncs {
			if len(f.Function) >= len(p) && f.Function[:len(p)] == p {
				return true
			}
		}
		if !more {
			return false
		}
	}
}
