package ksr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"contiv.dev/vpp/internal/backoff"
	"contiv.dev/vpp/kubestate"
)

// MarkerKey is written after every completed mark and sweep
// (kubestate.SyncedKey, value kubestate.SyncMarker: identity, time,
// generation and lineage, written by a compare-and-swap, kubestate.MarkerWriter);
// the health probe reads it, and its absence (or a marker older than the
// one written last) tells that etcd lost its data. Agents take no listing
// without it.
const MarkerKey = kubestate.SyncedKey

// NodeReleaser frees the NodeSync record and ID of a deleted Kubernetes
// node (noderegistry.Release does it) through etcd, the reflector's fenced view
// of etcd: every write made through it is refused (ErrDeposed) once this
// replica no longer holds LeaderKey. Releasing a node that holds nothing
// must not be an error. Errors are taken as transient and retried by the
// next mark and sweep.
type NodeReleaser interface {
	ReleaseNode(ctx context.Context, etcd Etcd, name string) error
}

// NodeReleaserFunc adapts a function to NodeReleaser.
type NodeReleaserFunc func(ctx context.Context, etcd Etcd, name string) error

// ReleaseNode implements NodeReleaser.
func (f NodeReleaserFunc) ReleaseNode(ctx context.Context, etcd Etcd, name string) error {
	return f(ctx, etcd, name)
}

// ErrConfig is returned by New for missing or bad parameters.
var ErrConfig = errors.New("bad reflector parameters")

// Defaults of Params and Election.
const (
	DefaultEtcdTimeout    = 10 * time.Second
	DefaultSyncTimeout    = 2 * time.Minute
	DefaultProbeInterval  = 5 * time.Second
	DefaultResyncInterval = 10 * time.Minute
	DefaultMaxBackoff     = 5 * time.Second
	DefaultLeaseName      = "contiv-ksr"
	DefaultLeaseDuration  = 15 * time.Second
	DefaultRenewDeadline  = 10 * time.Second
	DefaultRetryPeriod    = 2 * time.Second
	DefaultLeaderTTL      = 15 * time.Second
	minBackoff            = 100 * time.Millisecond
)

// Params are the reflector's dependencies and settings. Zero durations take
// the defaults.
type Params struct {
	// Logger receives the reflector's logs (client-go's too, through the
	// context); nil discards them.
	Logger *slog.Logger
	// Kube reads the Kubernetes API; required.
	Kube kubernetes.Interface
	// Etcd is where the models are written; required. Every write goes
	// through a transaction fenced by LeaderKey.
	Etcd Etcd
	// Nodes releases deleted nodes' NodeSync records; nil leaves them.
	Nodes NodeReleaser
	// Registerer receives the metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Identity names this replica in the lease and the marker; required
	// with Election.
	Identity string
	// Election, when set, makes the reflector write only while it holds
	// the lease. Nil means this process is the only writer.
	Election *Election
	// EtcdTimeout bounds one batch of writes, one node release and one
	// health probe.
	EtcdTimeout time.Duration
	// SyncTimeout bounds the mark and sweep of one resource.
	SyncTimeout time.Duration
	// ProbeInterval is how often etcd's health (and the marker) is checked.
	ProbeInterval time.Duration
	// ResyncInterval is how often a mark and sweep repairs what was changed
	// in etcd behind the reflector's back; negative: never.
	ResyncInterval time.Duration
	// LeaderTTL is the TTL of the etcd lease LeaderKey is written on: how
	// long another replica waits for the key of one that stopped without
	// releasing it. Whole seconds (rounded up); default 15s.
	LeaderTTL time.Duration
	// MaxBackoff caps the pause between failed marks and sweeps (the
	// first pause is 100ms, doubling).
	MaxBackoff time.Duration
	// Now is the clock the sync markers are stamped with; nil: time.Now
	// (tests set a clock that is behind or ahead).
	Now func() time.Time
}

// Election configures leader election on a coordination.k8s.io Lease.
type Election struct {
	// Namespace of the Lease; required.
	Namespace string
	// Name of the Lease; default "contiv-ksr".
	Name string
	// LeaseDuration is how long followers wait before taking over a lease
	// that is not renewed; RenewDeadline how long the leader keeps trying
	// to renew before it stops; RetryPeriod the pause between attempts.
	// Defaults 15s, 10s, 2s (LeaseDuration > RenewDeadline > RetryPeriod).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Status is what the reflector is doing.
type Status struct {
	Identity string `json:"identity"`
	// Leader is set while this replica reflects.
	Leader bool `json:"leader"`
	// ObservedLeader is the lease holder last seen (with election).
	ObservedLeader string `json:"observedLeader,omitempty"`
	// Synced is set when the last mark and sweep completed and no write
	// failed since.
	Synced bool `json:"synced"`
	// LastSync is when the last mark and sweep completed.
	LastSync time.Time `json:"lastSync,omitzero"`
	// Resyncs counts completed marks and sweeps.
	Resyncs uint64 `json:"resyncs"`
	// Objects counts the objects written, per resource.
	Objects map[kubestate.Resource]int `json:"objects,omitempty"`
	// Queued is how many changed objects wait for the writer.
	Queued int `json:"queued"`
	// LastError is the last etcd failure, cleared by the next sweep.
	LastError string `json:"lastError,omitempty"`
	// NoLeaderFor, with election, is how long no replica has been seen
	// leading, once that is longer than the lease duration (the replica
	// is then not ready); ElectionError is the last failed call on the
	// Lease, cleared when a leader is seen.
	NoLeaderFor   string `json:"noLeaderFor,omitempty"`
	ElectionError string `json:"electionError,omitempty"`
}

// Reflector mirrors the Kubernetes API into etcd. Run runs it; Status and
// Handler may be used from any goroutine.
type Reflector struct {
	p        Params
	log      *slog.Logger
	m        *metrics
	lec      *leaderelection.LeaderElectionConfig
	watchdog *leaderelection.HealthzAdaptor

	// marker writes the sync markers and remembers the last one this
	// replica wrote (kept across terms).
	marker *kubestate.MarkerWriter

	mu     sync.Mutex
	status Status
	// leaderAt is when a leader was last seen (with election): see
	// observingLock.
	leaderAt time.Time
	// queue is the current term's, for Status.
	queue *queue
}

// New checks p and returns a reflector; Run starts it.
func New(p Params) (*Reflector, error) {
	var missing []string
	if p.Kube == nil {
		missing = append(missing, "Kube")
	}
	if p.Etcd == nil {
		missing = append(missing, "Etcd")
	}
	if p.Election != nil {
		if p.Identity == "" {
			missing = append(missing, "Identity")
		}
		if p.Election.Namespace == "" {
			missing = append(missing, "Election.Namespace")
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("ksr: missing %v: %w", missing, ErrConfig)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"EtcdTimeout", p.EtcdTimeout}, {"SyncTimeout", p.SyncTimeout},
		{"ProbeInterval", p.ProbeInterval}, {"MaxBackoff", p.MaxBackoff}, {"LeaderTTL", p.LeaderTTL},
	} {
		if d.v < 0 {
			return nil, fmt.Errorf("ksr: %s %s: must not be negative: %w", d.name, d.v, ErrConfig)
		}
	}
	p.EtcdTimeout = orDefault(p.EtcdTimeout, DefaultEtcdTimeout)
	p.SyncTimeout = orDefault(p.SyncTimeout, DefaultSyncTimeout)
	p.ProbeInterval = orDefault(p.ProbeInterval, DefaultProbeInterval)
	p.ResyncInterval = orDefault(p.ResyncInterval, DefaultResyncInterval)
	p.MaxBackoff = orDefault(p.MaxBackoff, DefaultMaxBackoff)
	p.LeaderTTL = orDefault(p.LeaderTTL, DefaultLeaderTTL)
	log := p.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reflector{p: p, log: log, status: Status{Identity: p.Identity},
		marker: &kubestate.MarkerWriter{Identity: p.Identity, Now: p.Now}}
	if p.Election != nil {
		e := *p.Election
		r.p.Election = &e
		if e.Name == "" {
			e.Name = DefaultLeaseName
		}
		e.LeaseDuration = orDefault(e.LeaseDuration, DefaultLeaseDuration)
		e.RenewDeadline = orDefault(e.RenewDeadline, DefaultRenewDeadline)
		e.RetryPeriod = orDefault(e.RetryPeriod, DefaultRetryPeriod)
		r.watchdog = leaderelection.NewLeaderHealthzAdaptor(e.LeaseDuration)
		r.lec = &leaderelection.LeaderElectionConfig{
			Lock: &observingLock{r: r, Interface: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: e.Namespace, Name: e.Name},
				Client:     p.Kube.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: p.Identity},
			}},
			LeaseDuration:   e.LeaseDuration,
			RenewDeadline:   e.RenewDeadline,
			RetryPeriod:     e.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            e.Name,
			WatchDog:        r.watchdog,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) {},
				OnStoppedLeading: func() {},
			},
		}
		// Validate the durations now rather than at Run.
		if _, err := leaderelection.NewLeaderElector(*r.lec); err != nil {
			return nil, fmt.Errorf("ksr: leader election: %w: %w", err, ErrConfig)
		}
	}
	m, err := newMetrics(p.Registerer, func() float64 {
		if r.leaderless(time.Now()) > 0 {
			return 1
		}
		return 0
	})
	if err != nil {
		return nil, err
	}
	r.m = m
	return r, nil
}

// Run reflects until ctx ends: in every term this replica holds LeaderKey
// in etcd and, with election, the Kubernetes lease (releasing both at the
// end). It returns when the last term is over and its informers have
// stopped.
func (r *Reflector) Run(ctx context.Context) {
	ctx = klog.NewContext(ctx, logr.FromSlogHandler(r.log.Handler()))
	r.mu.Lock()
	r.leaderAt = time.Now() // none seen yet: counts from the start
	r.mu.Unlock()
	if r.lec == nil {
		for ctx.Err() == nil {
			r.lead(ctx)
			backoff.Sleep(ctx, minBackoff)
		}
		return
	}
	for ctx.Err() == nil {
		r.campaign(ctx)
	}
}

// campaign waits for the lease, reflects while it is held, and returns when
// the lease is lost (or released at the end of ctx) and the term is over.
func (r *Reflector) campaign(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu   sync.Mutex
		over bool
		wg   sync.WaitGroup
	)
	cfg := *r.lec
	cfg.Callbacks = leaderelection.LeaderCallbacks{
		// client-go calls this on its own goroutine, which may start
		// after Run returned: such a late start does nothing.
		OnStartedLeading: func(lctx context.Context) {
			mu.Lock()
			if over {
				mu.Unlock()
				return
			}
			wg.Add(1)
			mu.Unlock()
			defer wg.Done()
			r.lead(lctx)
			cancel() // a term that ends by itself gives the lease up
		},
		OnStoppedLeading: func() {},
		OnNewLeader: func(id string) {
			r.mu.Lock()
			r.status.ObservedLeader = id
			r.mu.Unlock()
			r.log.Info("leader observed", "leader", id)
		},
	}
	le, err := leaderelection.NewLeaderElector(cfg)
	if err != nil { // validated by New
		r.log.Error("leader election", "err", err)
		<-ctx.Done()
		return
	}
	r.watchdog.SetLeaderElection(le)
	le.Run(ctx)
	mu.Lock()
	over = true
	mu.Unlock()
	wg.Wait()
}

// lead runs one term: it takes LeaderKey, then runs informers, mark and
// sweep and writes until ctx ends or the key is lost.
func (r *Reflector) lead(ctx context.Context) {
	f := r.acquire(ctx)
	if f == nil {
		return
	}
	defer f.release()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := f.keepAlive(ctx, func() {
		r.log.Error("the etcd leader lease ended (expired or revoked): stopping writes", "key", LeaderKey)
		cancel()
	}); err != nil {
		r.log.Warn("etcd leader key", "err", err)
		return
	}
	r.log.Info("leading: reflecting the Kubernetes API into etcd", "identity", r.p.Identity)
	t := newTerm(r, f)
	r.mu.Lock()
	r.status.Leader = true
	r.queue = t.q
	r.mu.Unlock()
	r.m.isLeader.Set(1)
	defer func() {
		r.m.isLeader.Set(0)
		r.m.setObjects(nil)
		r.mu.Lock()
		r.status.Leader, r.status.Synced, r.status.Objects, r.queue = false, false, nil, nil
		r.mu.Unlock()
		r.log.Info("stopped leading", "identity", r.p.Identity)
	}()
	t.run(ctx)
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Status returns a copy of the reflector's status.
func (r *Reflector) Status() Status {
	d := r.leaderless(time.Now())
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.status
	s.Objects = maps.Clone(s.Objects)
	if r.queue != nil {
		s.Queued = r.queue.len()
	}
	if d > 0 {
		s.NoLeaderFor = d.Round(time.Second).String()
	}
	return s
}

// Ready tells whether the replica does its part: a follower while a leader
// was seen within the lease duration, a leader once its mark and sweep
// completed and while etcd takes its writes.
func (r *Reflector) Ready() bool { return len(r.notReady(time.Now())) == 0 }

// synced records a completed mark and sweep.
func (r *Reflector) synced(counts map[kubestate.Resource]int) {
	r.m.resyncs.Inc()
	r.m.setObjects(counts)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status.Synced = true
	r.status.LastSync = time.Now()
	r.status.Resyncs++
	r.status.Objects = maps.Clone(counts)
	r.status.LastError = ""
}

// unsynced records an etcd failure: a mark and sweep must follow.
func (r *Reflector) unsynced(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status.Synced = false
	r.status.LastError = err.Error()
}

// wrote records the counts after an incremental batch.
func (r *Reflector) wrote(counts map[kubestate.Resource]int) {
	r.m.setObjects(counts)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status.Objects = maps.Clone(counts)
}
