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

// ksrOpts are the options of the collector contiv_ksr_<name>.
func ksrOpts(name, help string) prometheus.Opts {
	return prometheus.Opts{Name: "contiv_ksr_" + name, Help: help}
}

// counter is the counter contiv_ksr_<name>.
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts(ksrOpts(name, help)))
}

func newMetrics(reg prometheus.Registerer, noLeader func() float64) (*metrics, error) {
	perResource := []string{"resource"}
	m := &metrics{
		objects: prometheus.NewGaugeVec(prometheus.GaugeOpts(ksrOpts("objects",
			"Objects this reflector holds in etcd, per resource (0 while it is not the leader).")), perResource),
		invalid: prometheus.NewCounterVec(prometheus.CounterOpts(ksrOpts("invalid_objects_total",
			"Kubernetes objects skipped because they cannot be converted or stored, per resource.")), perResource),
		writeErrors: counter("write_errors_total", "Failed etcd writes: batches, sweeps and node releases."),
		resyncs:     counter("resyncs_total", "Completed marks and sweeps of every resource."),
		released:    counter("nodes_released_total", "NodeSync records released for deleted Kubernetes nodes."),
		releaseErrors: counter("node_release_errors_total",
			"NodeSync records of deleted nodes a mark and sweep could not release (or could not confirm deleted); retried by the next sweep."),
		isLeader: prometheus.NewGauge(prometheus.GaugeOpts(ksrOpts("is_leader",
			"1 while this replica holds the lease and reflects, else 0."))),
		noLeader: prometheus.NewGaugeFunc(prometheus.GaugeOpts(ksrOpts("no_leader",
			"1 while no replica has been seen leading for longer than the lease duration (with leader election), else 0.")), noLeader),
		refused: counter("fenced_writes_refused_total",
			"etcd transactions refused because this replica no longer held the etcd leader key."),
		deposed: counter("deposed_total", "Terms ended because the etcd leader key was lost (expired, revoked or taken)."),
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
