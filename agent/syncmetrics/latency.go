package syncmetrics

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
)

// latencyWindow is how many of the latest observations the REST summary
// covers.
const latencyWindow = 1000

// latencyBuckets are the histogram's bounds in seconds: fine enough for
// the milliseconds an agent takes (kube-proxy's start at 0.25 s), up to
// the minutes of a slow control plane.
var latencyBuckets = []float64{
	0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5,
	1, 2, 5, 10, 20, 30, 60, 120, 300,
}

// Latency measures network programming latency, the kube-proxy SLI:
// from an EndpointSlice's last-change-trigger-time to the moment VPP
// acknowledged the batch that carried the change. As a handler it notes
// the trigger times of the slice changes in a batch (the controller drops
// unchanged values, so each is a real change); as an observer of the
// apply step, when one succeeds (VPP acknowledged the calls it made, or
// the change needed none), it observes them.
//
// Each trigger time is observed once: a slice delivered again with a
// trigger time already observed (a re-list, a change of another field) is
// not measured again, nor is one older than the agent's start (what a
// starting agent finds in etcd is no change it programmed). A resync drops
// the pending trigger times: a full reprogram is no measured change.
type Latency struct {
	hist prometheus.Histogram
	// kpHist observes the same under kube-proxy's name, by the slice's
	// address type (its ip_family).
	kpHist *prometheus.HistogramVec
	start  time.Time
	now    func() time.Time

	mu sync.Mutex
	// pending holds, per slice, the newest trigger time not yet observed.
	pending map[kubestate.Key]trigger
	// seen holds, per existing slice, the newest trigger time observed.
	seen map[kubestate.Key]time.Time
	// recent are the latest observations (seconds), a ring of
	// latencyWindow; next is where the next one goes.
	recent []float64
	next   int
	// observed counts the observations; stale and repeated the trigger
	// times left out as older than the start or already observed.
	observed, stale, repeated uint64
}

// NewLatency measures from now on.
func NewLatency() *Latency {
	return &Latency{
		hist: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "contiv_network_programming_duration_seconds",
			Help:    "Time from an EndpointSlice's last-change-trigger-time to VPP acknowledging the change.",
			Buckets: latencyBuckets,
		}),
		kpHist: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kubeproxy_network_programming_duration_seconds",
			Help:    "Network programming latency under kube-proxy's name: as contiv_network_programming_duration_seconds, by the slice's IP family.",
			Buckets: latencyBuckets,
		}, []string{ipFamilyLabel}),
		start:   time.Now(),
		now:     time.Now,
		pending: map[kubestate.Key]trigger{},
		seen:    map[kubestate.Key]time.Time{},
	}
}

func (l *Latency) Name() string { return "latency" }

func (l *Latency) HandlesEvent(ev controller.Event) bool {
	c, ok := ev.(*controller.ChangeEvent)
	return ok && c.Key.Resource == kubestate.ResEndpointSlice
}

// Resync drops pending trigger times: a resync is not a measured change.
// The observed ones of slices that are gone are forgotten.
func (l *Latency) Resync(_ context.Context, ev *controller.ResyncEvent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.pending)
	if ev.State != nil {
		for k := range l.seen {
			if _, ok := ev.State.Objects[k]; !ok {
				delete(l.seen, k)
			}
		}
	}
	return nil
}

func (l *Latency) Update(_ context.Context, ev controller.Event) error {
	c := ev.(*controller.ChangeEvent)
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := c.New.(*kubestate.EndpointSlice)
	if !ok || s == nil {
		// Deleted: a later slice of that name starts afresh. A trigger
		// time pending for it is still a change to measure.
		delete(l.seen, c.Key)
		return nil
	}
	switch t := s.TriggerTime; {
	case t.IsZero():
	case t.Before(l.start):
		l.stale++
	case !t.After(l.seen[c.Key]):
		l.repeated++ // observed already
	case !t.After(l.pending[c.Key].at):
		// pending already (another change in the same batch)
	default:
		l.pending[c.Key] = trigger{at: t, family: s.AddressType}
	}
	return nil
}

// ApplyStarting implements controller.ApplyObserver.
func (l *Latency) ApplyStarting(bool) {}

// Applied implements controller.ApplyObserver.
func (l *Latency) Applied(_ bool, err error) {
	if err != nil {
		return // pending changes are measured when a later apply succeeds
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, t := range l.pending {
		l.observe(now.Sub(t.at).Seconds(), t.family)
		if t.at.After(l.seen[k]) {
			l.seen[k] = t.at
		}
	}
	clear(l.pending)
}

// trigger is a slice's trigger time waiting for an apply, and the slice's
// address type.
type trigger struct {
	at     time.Time
	family string
}

func (l *Latency) observe(sec float64, family string) {
	l.hist.Observe(sec)
	l.kpHist.WithLabelValues(family).Observe(sec)
	l.observed++
	if len(l.recent) < latencyWindow {
		l.recent = append(l.recent, sec)
		return
	}
	l.recent[l.next] = sec
	l.next = (l.next + 1) % latencyWindow
}

// LatencyView is the REST summary of network programming latency over the
// latest observations.
type LatencyView struct {
	// Observed counts every observation since the agent started; Window
	// how many of the latest the quantiles cover.
	Observed uint64 `json:"observed"`
	Window   int    `json:"window"`
	// P50, P99 and Max are in seconds over the window (0 when empty).
	P50 float64 `json:"p50Seconds"`
	P99 float64 `json:"p99Seconds"`
	Max float64 `json:"maxSeconds"`
	// Stale counts trigger times left out as older than the agent's start;
	// Repeated those already observed.
	Stale    uint64 `json:"staleTriggerTimes"`
	Repeated uint64 `json:"repeatedTriggerTimes"`
	// Pending counts the slices whose change waits for an apply.
	Pending int `json:"pending"`
}

// Collectors are the latency histograms, contiv's and kube-proxy's, every
// one of families' series existing from the start at zero.
func (l *Latency) Collectors(families []string) []prometheus.Collector {
	for _, f := range families {
		l.kpHist.WithLabelValues(f)
	}
	return []prometheus.Collector{l.hist, l.kpHist}
}

// View summarises the latest observations.
func (l *Latency) View() LatencyView {
	l.mu.Lock()
	v := LatencyView{Observed: l.observed, Window: len(l.recent), Stale: l.stale, Repeated: l.repeated, Pending: len(l.pending)}
	w := slices.Clone(l.recent)
	l.mu.Unlock()
	if len(w) == 0 {
		return v
	}
	slices.Sort(w)
	v.P50, v.P99, v.Max = quantile(w, 0.50), quantile(w, 0.99), w[len(w)-1]
	return v
}

// quantile is the q-quantile of sorted (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(i, 1), len(sorted))-1]
}
