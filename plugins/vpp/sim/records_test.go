package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"go.fd.io/govpp/api"

	"contiv.dev/vpp/internal/vppcorpus"
)

// The ACL and reject-route records (testdata/vpp-25.02/records-acl-routes at the module root, see
// its README.md) were made on a VPP the agent had programmed, so they are
// not part of TestCorpus's fresh-start replay. TestRecordsACLRoutes
// replays each file in order against a simulated VPP with the corpus's
// interfaces and compares every reply field by field, but for what
// recordsIgnore lists (state the sim cannot share with a VPP programmed
// before the recording), and the crash of the last c2 request.

// recordsIgnore lists what is not compared, with the reason.
var recordsIgnore = []struct {
	request, field, reason string
}{
	{"ip_route_v2_dump", "", "dump of a table the agent had filled (174 routes of VPP's own, the agent's and the CLI's): the sim models only API-added routes"},
	{"ip_route_add_del", "stats_index", "FIB entry index: the recording's VPP held ~190 entries before, a fresh sim 28"},
	{"*", "vpe_pid", "a dump's control_ping_reply carries VPP's PID"},
}

func recordsDir(t *testing.T) string {
	dir, err := vppcorpus.Dir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "..", "records-acl-routes")
}

func TestRecordsACLRoutes(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(recordsDir(t), "*.jsonl"))
	if len(files) == 0 {
		t.Fatalf("no records in %s", recordsDir(t))
	}
	sort.Strings(files)
	compared := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { compared += replayRecords(t, f, corpusInterfaces) })
	}
	if compared == 0 {
		t.Fatal("nothing compared")
	}
	t.Logf("records-acl-routes: %d requests compared", compared)
}

// replayRecords replays one file against a sim with the given interfaces
// and returns how many requests it compared.
func replayRecords(t *testing.T, path string, ifaces []InterfaceSpec) int {
	v := New(Options{})
	t.Cleanup(v.Close)
	// The recordings' VPP had run its startup configuration: table 1 exists.
	v.CreateTable(1)
	for _, s := range ifaces {
		if _, err := v.CreateInterface(s); err != nil {
			t.Fatal(err)
		}
	}
	r := &replayer{t: t, file: filepath.Base(path), v: v, pids: map[uint32]uint32{}}
	r.connect()
	t.Cleanup(func() { r.disconnect() })
	n := 0
	for _, rec := range readCorpus(t, path) {
		if rec.Request == nil {
			continue
		}
		if err := r.replayRecord(rec); err != nil {
			t.Errorf("%s (%s): %v", rec.Request.Name, rec.Note, err)
			continue
		}
		n++
	}
	return n
}

// replayRecord sends one recorded request and compares what came back.
func (r *replayer) replayRecord(rec *corpusRecord) error {
	for _, ig := range recordsIgnore {
		if ig.request == rec.Request.Name && ig.field == "" {
			_, err := r.send(rec.Request)
			return err
		}
	}
	crashes := r.v.Crashes()
	got, err := r.send(rec.Request)
	if rec.Error != "" {
		if !errors.Is(err, ErrConnectionReset) || r.v.Crashes() != crashes+1 {
			return fmt.Errorf("VPP crashed (%s); the sim answered %s (error %v)", rec.Error, names(got), err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if r.v.Crashes() != crashes {
		return fmt.Errorf("the sim crashed: %s", r.v.LastCrash())
	}
	if len(got) != len(rec.Replies) {
		return fmt.Errorf("%d messages, recorded %d:\n got %s\nwant %s", len(got), len(rec.Replies), names(got), recNames(rec.Replies))
	}
	for i, m := range got {
		if err := compareIgnoring(m, rec.Replies[i], rec.Request.Name); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
	return nil
}

// compareIgnoring is replayer.compare without the fields recordsIgnore
// names for the request.
func compareIgnoring(got api.Message, want corpusMsg, request string) error {
	if got.GetMessageName() != want.Name {
		return fmt.Errorf("got %s, recorded %s", got.GetMessageName(), want.Name)
	}
	gb, err := json.Marshal(got)
	if err != nil {
		return err
	}
	var g, w map[string]any
	if err := json.Unmarshal(gb, &g); err != nil {
		return err
	}
	if err := json.Unmarshal(want.Fields, &w); err != nil {
		return err
	}
	for _, ig := range recordsIgnore {
		if (ig.request == request || ig.request == "*") && ig.field != "" {
			delete(g, ig.field)
			delete(w, ig.field)
		}
	}
	if !reflect.DeepEqual(g, w) {
		wb, _ := json.Marshal(w)
		gb, _ := json.Marshal(g)
		return fmt.Errorf("%s differs:\n got %s\nwant %s", want.Name, gb, wb)
	}
	return nil
}
