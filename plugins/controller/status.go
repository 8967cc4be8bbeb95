package controller

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Status is what the controller reports about itself (REST, contivctl).
type Status struct {
	// Ready is set once the first full sync is applied (/readyz).
	Ready bool `json:"ready"`
	// LastResync and LastResyncKind tell when and why handlers last resynced.
	LastResync     time.Time  `json:"lastResync,omitzero"`
	LastResyncKind ResyncKind `json:"lastResyncKind,omitempty"`
	// Resyncs counts the resyncs handlers took in.
	Resyncs uint64 `json:"resyncs"`
	// Batches counts the batches applied; Events the events handlers took in.
	Batches uint64 `json:"batches"`
	Events  uint64 `json:"events"`
	// PacedBatches counts the batches held back by MinBatchInterval or
	// BatchHold (changes coming in a burst).
	PacedBatches uint64 `json:"pacedBatches"`
	// NoOps counts queued changes dropped because the value did not change.
	NoOps uint64 `json:"noOps"`
	// QueueDepth is the number of items waiting for the loop.
	QueueDepth int `json:"queueDepth"`
	// Revision is the etcd revision of the handlers' view; WatchRevision the
	// newest revision the watcher has queued.
	Revision      int64 `json:"revision"`
	WatchRevision int64 `json:"watchRevision"`
	// Relists counts the times etcd was listed again after a lost watch.
	Relists uint64 `json:"relists"`
	// Resumes counts the watches resumed after a reconnection to etcd
	// without listing again.
	Resumes uint64 `json:"resumes"`
	// HistoryLost counts the running watches ended because etcd no longer
	// held the history they followed (Params.HistoryCheck).
	HistoryLost uint64 `json:"historyLost"`
	// EtcdConnected tells whether the client's connection to etcd is up.
	EtcdConnected bool `json:"etcdConnected"`
	// DecodeErrors counts stored values skipped as undecodable, oversized
	// or under a malformed key.
	DecodeErrors uint64 `json:"decodeErrors"`
	// Decoded counts the stored values decoded (listed or watched).
	Decoded uint64 `json:"decoded"`
	// Layout is the layout marker (kubestate.LayoutKey) etcd held at the
	// last listing; empty when absent.
	Layout string `json:"layout,omitempty"`
	// Held says why the last listing of etcd was not taken in (RequireSynced:
	// not a complete reflector output): the handlers keep the last state
	// taken in, and the controller is not ready. Empty otherwise.
	Held string `json:"held,omitempty"`
	// NotFollowing, "cannot follow etcd: <reason>", is set while etcd's
	// watch cannot be followed (a response that cannot be taken in, a
	// stream that keeps failing), until etcd is listed again or the watch
	// goes on: the controller is not ready meanwhile. Empty otherwise.
	NotFollowing string `json:"notFollowing,omitempty"`
	// WatchFailures counts the watches of etcd that could not be followed.
	WatchFailures uint64 `json:"watchFailures"`
	// LastError is the last handler or apply error, at LastErrorTime.
	LastError     string    `json:"lastError,omitempty"`
	LastErrorTime time.Time `json:"lastErrorTime,omitzero"`
	// Errors counts handler and apply errors.
	Errors uint64 `json:"errors"`
	// HealingPending is set while a healing resync is scheduled or queued.
	HealingPending bool `json:"healingPending"`
}

// status is the shared, goroutine-safe part of Status the loop writes
// (ready with an atomic, the rest under mu); the etcd feed reports its own
// (etcdfeed.Status).
type status struct {
	ready atomic.Bool

	mu sync.Mutex
	s  Status // the loop's fields

	batchSeconds *prometheus.HistogramVec
	// batchObs is its series of full=false and full=true, looked up at
	// their first use (by the loop).
	batchObs [2]prometheus.Observer
}

// observeBatch records a batch's duration (the loop's).
func (st *status) observeBatch(full bool, d time.Duration) {
	i := 0
	if full {
		i = 1
	}
	if st.batchObs[i] == nil {
		st.batchObs[i] = st.batchSeconds.WithLabelValues(strconv.FormatBool(full))
	}
	st.batchObs[i].Observe(d.Seconds())
}

func newStatus() *status {
	return &status{batchSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "contiv_controller_batch_duration_seconds",
		Help:    "Time to take in and apply one batch of events, by whether it was a full resync.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
	}, []string{"full"})}
}

func (st *status) update(f func(s *Status)) {
	st.mu.Lock()
	f(&st.s)
	st.mu.Unlock()
}

func (st *status) setError(err error) {
	st.update(func(s *Status) {
		s.Errors++
		s.LastError = err.Error()
		s.LastErrorTime = time.Now()
	})
}

// Status returns the controller's status; safe from any goroutine.
func (c *Controller) Status() Status {
	c.st.mu.Lock()
	s := c.st.s
	c.st.mu.Unlock()
	s.Ready = c.st.ready.Load()
	s.QueueDepth = c.q.depth()
	if c.feed != nil {
		f := c.feed.Status()
		s.WatchRevision, s.Relists, s.Resumes, s.HistoryLost = f.WatchRevision, f.Relists, f.Resumes, f.HistoryLost
		s.EtcdConnected, s.DecodeErrors, s.Decoded, s.Layout = f.Connected, f.DecodeErrors, f.Decoded, f.Layout
		s.Held, s.NotFollowing, s.WatchFailures = f.Held, f.NotFollowing, f.WatchFailures
	}
	s.Ready = s.Ready && s.Held == "" && s.NotFollowing == ""
	return s
}

// Ready tells whether the first full sync has been applied, etcd's last
// listing was taken in and its watch is followed (/readyz).
func (c *Controller) Ready() bool {
	return c.st.ready.Load() && c.Held() == "" && c.NotFollowing() == ""
}

// NotFollowing says why etcd's watch cannot be followed now, as "cannot
// follow etcd: <reason>" (see Status.NotFollowing); empty when it is.
func (c *Controller) NotFollowing() string {
	if c.feed == nil {
		return ""
	}
	return c.feed.NotFollowing()
}

// Applied tells whether the first full sync has been applied, held
// listings or not.
func (c *Controller) Applied() bool { return c.st.ready.Load() }

// Held says why etcd's last listing was not taken in (see Status.Held);
// empty when it was.
func (c *Controller) Held() string {
	if c.feed == nil {
		return ""
	}
	return c.feed.Held()
}

// Collector exports the controller's status as Prometheus metrics; the
// caller registers it.
func (c *Controller) Collector() prometheus.Collector {
	counter := func(name, help string, v func(Status) uint64) metricDef {
		return metricDef{prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue,
			func(s Status) float64 { return float64(v(s)) }}
	}
	return &collector{c: c, defs: []metricDef{
		counter("contiv_controller_batches_total", "Batches applied.",
			func(s Status) uint64 { return s.Batches }),
		counter("contiv_controller_paced_batches_total", "Batches held back by the minimum interval between batches or by a burst of changes.",
			func(s Status) uint64 { return s.PacedBatches }),
		counter("contiv_controller_events_total", "Events taken in by the handlers.",
			func(s Status) uint64 { return s.Events }),
		counter("contiv_controller_resyncs_total", "Full resyncs taken in by the handlers.",
			func(s Status) uint64 { return s.Resyncs }),
		counter("contiv_controller_relists_total", "Re-lists of etcd after a lost watch.",
			func(s Status) uint64 { return s.Relists }),
		counter("contiv_controller_watch_resumes_total", "Watches resumed after a reconnection to etcd, without a re-list.",
			func(s Status) uint64 { return s.Resumes }),
		counter("contiv_controller_history_lost_total", "Running watches ended because etcd no longer held their history (restored from a backup or wiped behind a proxy).",
			func(s Status) uint64 { return s.HistoryLost }),
		counter("contiv_controller_watch_failures_total", "Watches of etcd that could not be followed (a response that cannot be taken in, a stream that keeps failing): resumed a few times, then etcd is listed again.",
			func(s Status) uint64 { return s.WatchFailures }),
		{prometheus.NewDesc("contiv_controller_not_following", "1 while etcd's watch cannot be followed (the controller is not ready).", nil, nil),
			prometheus.GaugeValue, func(s Status) float64 {
				if s.NotFollowing != "" {
					return 1
				}
				return 0
			}},
		counter("contiv_controller_errors_total", "Handler and apply errors.",
			func(s Status) uint64 { return s.Errors }),
		counter("contiv_controller_decode_errors_total",
			"Stored values skipped as undecodable, oversized or under a malformed key.",
			func(s Status) uint64 { return s.DecodeErrors }),
		{prometheus.NewDesc("contiv_controller_queue_depth", "Items waiting for the event loop.", nil, nil),
			prometheus.GaugeValue, func(s Status) float64 { return float64(s.QueueDepth) }},
		{prometheus.NewDesc("contiv_controller_listing_held", "1 while etcd's last listing is held: not a complete reflector output (the last state taken in is kept).", nil, nil),
			prometheus.GaugeValue, func(s Status) float64 {
				if s.Held != "" {
					return 1
				}
				return 0
			}},
		{prometheus.NewDesc("contiv_controller_ready", "1 once the first full sync is applied, while no listing is held and etcd's watch is followed.", nil, nil),
			prometheus.GaugeValue, func(s Status) float64 {
				if s.Ready {
					return 1
				}
				return 0
			}},
	}}
}

// metricDef is one metric read from Status at scrape time.
type metricDef struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(Status) float64
}

type collector struct {
	c    *Controller
	defs []metricDef
}

func (m *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range m.defs {
		ch <- d.desc
	}
	m.c.st.batchSeconds.Describe(ch)
}

func (m *collector) Collect(ch chan<- prometheus.Metric) {
	s := m.c.Status()
	for _, d := range m.defs {
		ch <- prometheus.MustNewConstMetric(d.desc, d.typ, d.value(s))
	}
	m.c.st.batchSeconds.Collect(ch)
}
