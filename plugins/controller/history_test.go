package controller

import (
	"strconv"
	"testing"
	"time"

	"contiv.dev/vpp/internal/etcdtest"
)

// TestHistoryCheckKeepsAKeptHistory: checking etcd's history every few
// milliseconds while changes flow, and after etcd compacted away the
// revision of the put the check reads (its key deleted since), never takes a kept history for a
// lost one: nothing is listed again.
func TestHistoryCheckKeepsAKeptHistory(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	for _, obj := range everyResource("1") {
		put(t, cli, obj)
	}
	markSynced(t, cli)
	rec := newRecorder("rec", nil)
	ctl := New(Params{Client: cli, Handlers: []Handler{rec}, RequireSynced: true, HistoryCheck: 2 * time.Millisecond})
	start(t, ctl)
	eventually(t, "ready", ctl.Ready)
	var last int64
	var lastKey string
	for i := range 50 {
		for _, obj := range everyResource(strconv.Itoa(i + 2)) {
			last, lastKey = put(t, cli, obj), obj.Key().String()
		}
	}
	// The newest put read is then of a key deleted since: the check reads
	// it at its revision, which the compaction below removes.
	del, err := cli.Delete(ctxT(t), lastKey)
	if err != nil || del.Deleted != 1 {
		t.Fatalf("delete %s: %v, %+v", lastKey, err, del)
	}
	last = del.Header.Revision
	eventually(t, "the changes watched", func() bool { return ctl.Status().WatchRevision >= last })
	for range 20 { // writes the watch does not see, then a compaction past what it read
		putRaw(t, cli, "/contiv/v1/ksr/leader", "ksr-1")
	}
	if _, err := cli.Compact(ctxT(t), last+10); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // ~50 checks: no timing asserted, a window for a wrong verdict
	eventually(t, "view equals etcd", func() bool { return rec.viewEquals(t, cli) })
	if st := ctl.Status(); st.HistoryLost != 0 || st.Relists != 0 {
		t.Errorf("status %+v: a kept history taken for a lost one", st)
	}
}
