package controller

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestStatusAndMetrics(t *testing.T) {
	_, cli := testEtcd(t)
	putRaw(t, cli, nsKey("bad").String(), "{")
	put(t, cli, ns("a", "1"))
	ctl := New(Params{Client: cli, Handlers: []Handler{newRecorder("rec", nil)}, Appliers: []Applier{&applier{}}})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)

	st := ctl.Status()
	if !st.Ready || st.LastResyncKind != ResyncStartup || st.LastResync.IsZero() || st.Resyncs != 1 ||
		st.Batches != 1 || st.DecodeErrors != 1 || !st.EtcdConnected || st.Revision == 0 || st.HealingPending {
		t.Errorf("status %+v", st)
	}
	b, err := json.Marshal(st)
	if err != nil || !strings.Contains(string(b), `"lastResyncKind":"startup"`) {
		t.Errorf("status JSON %s (%v)", b, err)
	}

	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(ctl.Collector()); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP contiv_controller_decode_errors_total Stored values skipped as undecodable, oversized or under a malformed key.
# TYPE contiv_controller_decode_errors_total counter
contiv_controller_decode_errors_total 1
# HELP contiv_controller_not_following 1 while etcd's watch cannot be followed (the controller is not ready).
# TYPE contiv_controller_not_following gauge
contiv_controller_not_following 0
# HELP contiv_controller_ready 1 once the first full sync is applied, while no listing is held and etcd's watch is followed.
# TYPE contiv_controller_ready gauge
contiv_controller_ready 1
# HELP contiv_controller_resyncs_total Full resyncs taken in by the handlers.
# TYPE contiv_controller_resyncs_total counter
contiv_controller_resyncs_total 1
# HELP contiv_controller_watch_failures_total Watches of etcd that could not be followed (a response that cannot be taken in, a stream that keeps failing): resumed a few times, then etcd is listed again.
# TYPE contiv_controller_watch_failures_total counter
contiv_controller_watch_failures_total 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"contiv_controller_decode_errors_total", "contiv_controller_not_following", "contiv_controller_ready", "contiv_controller_resyncs_total",
		"contiv_controller_watch_failures_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "contiv_controller_batch_duration_seconds"); err != nil || n != 1 {
		t.Errorf("batch duration series: %d (%v), want the full=true one", n, err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
