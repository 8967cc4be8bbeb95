package ksr

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"contiv.dev/vpp/kubestate"
)

// metrics are the reflector's Prometheus collectors.
type metrics struct {
	objects     *prometheus.GaugeVec
	invalid     *prometheus.CounterVec
	writeErrors prometheus.Counter
	resyncs     prometheus.Counter
	released    prometheus.Counter
	// releaseErrors counts the orphaned records a sweep could not release.
	releaseErrors prometheus.Counter
	isLeader      prometheus.Gauge
	noLeader      prometheus.GaugeFunc
	refused       prometheus.Counter
	deposed       prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, noLeader func() float64) (*metrics, error) {
	m := &metrics{
		objects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "contiv_ksr_objects",
			Help: "Objects this reflector holds in etcd, per resource (0 while it is not the leader).",
		}, []string{"resource"}),
		invalid: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contiv_ksr_invalid_objects_total",
			Help: "Kubernetes objects skipped because they cannot be converted or stored, per resource.",
		}, []string{"resource"}),
		writeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "contiv_ksr_write_errors_total",
			Help: "Failed etcd writes: batches, sweeps and node releases.",
		}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "contiv_ksr_resyncs_total",
			Help: "Completed marks and sweeps of every resource.",
		}),
		released: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "contiv_ksr_nodes_released_total",
			Help: "NodeSync records released for deleted Kubernetes nodes.",
		}),
		releaseErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "contiv_ksr_node_release_errors_total",
			Help: "NodeSync records of deleted nodes a mark and sweep could not release (or could not confirm deleted); retried by the next sweep.",
		}),
		isLeader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "contiv_ksr_is_leader",
			Help: "1 while this replica holds the lease and reflects, else 0.",
		}),
		noLeader: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "contiv_ksr_no_leader",
			Help: "1 while no replica has been seen leading for longer than the lease duration (with leader election), else 0.",
		}, noLeader),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "contiv_ksr_fenced_writes_refused_total",
			Help: "etcd transactions refused because this replica no longer held the etcd leader key.",
		}),
		deposed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "contiv_ksr_deposed_total",
			Help: "Terms ended because the etcd leader key was lost (expired, revoked or taken).",
		}),
	}
	for _, r := range reflected() {
		m.objects.WithLabelValues(string(r.res))
		m.invalid.WithLabelValues(string(r.res))
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.objects, m.invalid, m.writeErrors, m.resyncs, m.released, m.releaseErrors, m.isLeader, m.noLeader, m.refused, m.deposed} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("ksr: metrics: %w", err)
	}
	return m, nil
}

// setObjects publishes the per-resource counts.
func (m *metrics) setObjects(counts map[kubestate.Resource]int) {
	for _, r := range reflected() {
		m.objects.WithLabelValues(string(r.res)).Set(float64(counts[r.res]))
	}
}
