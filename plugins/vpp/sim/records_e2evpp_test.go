package sim

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/api"

	"contiv.dev/vpp/internal/vppcorpus"
)

// The real-VPP suite (e2evpp, docs/real-vpp.md) records every binary-API
// message node 1's agent exchanged with its VPP while the scenarios ran
// (plugins/vpp's Recorder), one file per renderer, under
// testdata/vpp-<version>/records-e2evpp (README.md there). TestRecordsE2EVPP
// replays each file in order against a simulated VPP built with the suite's
// node-1 interfaces (e2evpp/node_test.go's startupCLI) and compares every
// reply and event field by field, but for what e2evppIgnore lists. A new
// agent connection in the record is a new connection in the replay; a new
// VPP process ID in a ping's reply is a VPP restart (the sim restarts and
// its interfaces come back when the record shows them back).

// e2evppIgnore lists what is not compared (and e2evppEventTiming what of
// the events), with the reason: request ""
// means any request, field "" the whole request (sent, not compared);
// devType, when set, limits the entry to the details of interfaces of that
// type.
var e2evppIgnore = []struct {
	request, field, devType, reason string
}{
	{"sw_interface_dump", "l2_address", devVXLAN, "VPP draws a VXLAN tunnel's MAC at random (02:fe and 4 random bytes), anew at every start"},
	{"ip_route_v2_dump", "", "", "only the routes of the API's and cnat's FIB sources are compared, as a set without stats_index (e2evppRoutes): the others are the startup configuration's (default route, tunnel, pod /32s) and VPP's own, and VPP lists the routes in the order of its FIB entries, which the sim does not model"},
	{"show_version", "build_date", "", "the recorded binary's build date"},
	{"show_version", "build_directory", "", "the recorded binary's build directory"},
	{"ip_route_add_del", "stats_index", "", "FIB entry index: depends on every FIB entry VPP made before (the startup configuration's routes, adjacencies), which the sim does not model"},
	{"cnat_get_snat_addresses", "id", "", "VPP 25.02 answers an id that changes from one call to the next with nothing changed (4, 27, 655617 in one run of the CNI test): not state"},
	{"ip_neighbor_add_del", "stats_index", "", "the neighbour's adjacency counter: depends on every adjacency VPP made before (the uplink's and the tunnel's ARP entries), which the sim does not model (it answers ~0)"},
}

// e2evppNode1 are node 1's interfaces as its startup configuration creates
// them (e2evpp/node_test.go startupCLI; pods client, be1, be2).
var e2evppNode1 = []InterfaceSpec{
	{Name: "host-eth1", MAC: mac("02:fe:01:00:00:01"), Address: netip.MustParsePrefix("192.168.16.1/24")},
	{Name: "host-vpp1", MAC: mac("02:fe:01:00:00:02"), Address: netip.MustParsePrefix("172.30.1.1/24")},
	{Name: "loop1", MAC: mac("02:fe:01:00:00:03"), VRF: 1, Address: netip.MustParsePrefix("192.168.30.1/24")},
	{Name: "vxlan_tunnel0"},
	{Name: "loop0", MAC: mac("02:fe:01:00:00:04"), VRF: 1, Address: netip.MustParsePrefix("10.1.1.1/32")},
	{Name: "host-pod1", Tag: "default/client", MAC: mac("02:fe:01:01:00:01"), VRF: 1},
	{Name: "host-pod2", Tag: "default/be1", MAC: mac("02:fe:01:01:00:02"), VRF: 1},
	{Name: "host-pod3", Tag: "default/be2", MAC: mac("02:fe:01:01:00:03"), VRF: 1},
}

// e2evppStartup are the interfaces node 1's startup configuration creates
// for the record file name: the CNI test's nodes (cni-<renderer>.jsonl,
// e2evpp/cni_test.go) have no static pod and no pod gateway, their agent
// makes both.
func e2evppStartup(name string) []InterfaceSpec {
	if !strings.HasPrefix(name, "cni-") {
		return e2evppNode1
	}
	var out []InterfaceSpec
	for _, s := range e2evppNode1 {
		if s.Name != "loop0" && !strings.HasPrefix(s.Name, "host-pod") {
			out = append(out, s)
		}
	}
	return out
}

// e2evppRecordFiles are the suite's records: every version, every renderer.
func e2evppRecordFiles(t *testing.T) []string {
	dir, err := vppcorpus.Dir()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "..", "..")
	var files []string
	for _, pat := range []string{"*.jsonl", "*.jsonl.gz"} {
		m, _ := filepath.Glob(filepath.Join(root, "vpp-*", "records-e2evpp", pat))
		files = append(files, m...)
	}
	sort.Strings(files)
	return files
}

func TestRecordsE2EVPP(t *testing.T) {
	files := e2evppRecordFiles(t)
	if len(files) == 0 {
		t.Fatal("no records of the real-VPP suite under testdata/vpp-*/records-e2evpp (E2EVPP_RECORD=1 make e2e-vpp writes them)")
	}
	for _, f := range files {
		name := filepath.Base(filepath.Dir(filepath.Dir(f))) + "/" + filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			n, skipped := replayE2EVPP(t, f)
			t.Logf("%s: %d requests compared, %d without an answer skipped", name, n, skipped)
			if n == 0 {
				t.Error("nothing compared")
			}
		})
	}
}

// readRecordFile reads a record file, gzipped or not.
func readRecordFile(t *testing.T, path string) []*corpusRecord {
	if !strings.HasSuffix(path, ".gz") {
		return readCorpus(t, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tmp := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(path), ".gz"))
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return readCorpus(t, tmp)
}

// replayE2EVPP replays one record file; it returns how many requests it
// compared and how many it skipped (sent when the connection ended: no
// answer was recorded).
func replayE2EVPP(t *testing.T, path string) (compared, skipped int) {
	recs := readRecordFile(t, path)
	v := New(Options{Version: recordedVersion(recs)})
	t.Cleanup(v.Close)
	v.CreateTable(1) // "ip table add 1"
	for _, s := range e2evppStartup(filepath.Base(path)) {
		if _, err := v.CreateInterface(s); err != nil {
			t.Fatal(err)
		}
	}
	// The pods' veths are the kernel's: the record says whether VPP found them.
	v.SetHostInterfaces(func(string) bool { return true })
	r := &replayer{t: t, file: filepath.Base(path), v: v, pids: map[uint32]uint32{}}
	connected := false
	t.Cleanup(func() { r.disconnect() })
	for _, rec := range recs {
		switch {
		case rec.Request == nil && len(rec.Events) == 0 && len(rec.Replies) == 0:
			// A connection of the agent starts: a new one in the replay
			// (event registrations are per connection).
			if rec.Note == "connect" {
				if connected {
					r.disconnect()
				}
				r.connect()
				connected = true
			}
			continue
		case !connected:
			t.Fatalf("step %d: a message before the record's first connect", rec.Step)
		case rec.Request == nil && len(rec.Events) > 0:
			// The test is the clock: a restarted VPP's startup
			// configuration has run when its interfaces' events came.
			if startupRan(rec, r.v) {
				r.v.FinishStartup()
			}
			if err := r.checkEvents(rec); err != nil {
				t.Errorf("step %d: %v", rec.Step, err)
			}
			continue
		case rec.Request == nil:
			t.Errorf("step %d: a reply to no recorded request: %s", rec.Step, recNames(rec.Replies))
			continue
		case rec.Error != "":
			// The connection ended (VPP stopped) before the answer: whether
			// VPP executed it is not known, and the VPP that follows is a
			// new one.
			skipped++
			continue
		}
		if err := r.replayE2EVPP(rec); err != nil {
			t.Errorf("step %d %s: %v", rec.Step, rec.Request.Name, err)
			continue
		}
		compared++
	}
	// Events are compared in order, not in their place among the replies
	// (e2evppEventTiming); none may be left over.
	if err := r.checkNoEvent(); err != nil {
		t.Errorf("at the end: %v (events are compared in order only: %s)", err, e2evppEventTiming)
	}
	return compared, skipped
}

// e2evppEventTiming is why events are compared in order but not in their
// place among the replies.
const e2evppEventTiming = "VPP sends sw_interface_event from a process some time after the change (a restarted VPP's dump listed host-pod1..3 before their events came: records-e2evpp/cnat.jsonl), the sim at once"

// startupRan tells whether the record shows a restarted VPP's startup
// configuration run: a dump listing the uplink, or an event for an
// interface the sim does not have yet. (The agent's own interfaces, made
// before it ran, come first: the CNI test's gateway and pods.)
func startupRan(rec *corpusRecord, v *VPP) bool {
	if rec.Request != nil {
		if rec.Request.Name != "sw_interface_dump" {
			return false
		}
		for _, m := range rec.Replies {
			if strings.Contains(string(m.Fields), `"interface_name":"host-eth1"`) {
				return true
			}
		}
		return false
	}
	have := map[uint32]bool{}
	for _, i := range v.Interfaces() {
		have[i.Index] = true
	}
	for _, e := range rec.Events {
		var f struct {
			SwIfIndex uint32 `json:"sw_if_index"`
			Deleted   bool   `json:"deleted"`
		}
		if json.Unmarshal(e.Fields, &f) == nil && !f.Deleted && !have[f.SwIfIndex] {
			return true
		}
	}
	return false
}

// recordedVersion is the version the record's VPP reported (the sim
// answers show_version with it).
func recordedVersion(recs []*corpusRecord) string {
	for _, rec := range recs {
		for _, m := range rec.Replies {
			if m.Name == "show_version_reply" {
				var f struct{ Version string }
				_ = json.Unmarshal(m.Fields, &f)
				return f.Version
			}
		}
	}
	return ""
}

// replayE2EVPP sends one recorded request and compares what came back.
func (r *replayer) replayE2EVPP(rec *corpusRecord) error {
	if pid := recordedPID(rec); pid != 0 {
		if r.lastPID != 0 && pid != r.lastPID && r.pids[pid] == 0 && r.v.PID() == r.pids[r.lastPID] {
			// VPP restarted: the agent's connection to the old one ended
			// (a connect record follows in the record before this one).
			r.v.RestartWith(RestartOptions{InterfacesAfter: time.Hour})
			r.disconnect()
			r.connect()
		}
		r.lastPID = pid
	}
	if startupRan(rec, r.v) {
		r.v.FinishStartup()
	}
	crashes := r.v.Crashes()
	got, err := r.send(rec.Request)
	if err != nil {
		return err
	}
	if r.v.Crashes() != crashes {
		return fmt.Errorf("the sim crashed: %s", r.v.LastCrash())
	}
	if rec.Request.Name == "ip_route_v2_dump" {
		return e2evppRoutes(got, rec.Replies)
	}
	for _, ig := range e2evppIgnore {
		if ig.request == rec.Request.Name && ig.field == "" {
			return nil
		}
	}
	if len(got) != len(rec.Replies) {
		return fmt.Errorf("%d messages, recorded %d:\n got %s\nwant %s", len(got), len(rec.Replies), names(got), recNames(rec.Replies))
	}
	for i, m := range got {
		if err := r.compareE2EVPP(m, rec.Replies[i], rec.Request.Name); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
	return nil
}

// compareE2EVPP is replayer.compare without the fields e2evppIgnore names.
func (r *replayer) compareE2EVPP(got api.Message, want corpusMsg, request string) error {
	gb, err := json.Marshal(got)
	if err != nil {
		return err
	}
	if got.GetMessageName() != want.Name {
		return fmt.Errorf("got %s%s, recorded %s%s", got.GetMessageName(), gb, want.Name, want.Fields)
	}
	var g, w map[string]any
	if err := json.Unmarshal(gb, &g); err != nil {
		return err
	}
	if err := json.Unmarshal(want.Fields, &w); err != nil {
		return err
	}
	if want.Name == "control_ping_reply" {
		delete(w, "client_index") // see replayer.compare
		delete(g, "client_index")
	}
	if err := r.mapPIDs(want.Name, w); err != nil {
		return err
	}
	for _, ig := range e2evppIgnore {
		if (ig.request == request || ig.request == "") && ig.field != "" && (ig.devType == "" || w["interface_dev_type"] == ig.devType) {
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

// e2evppFIBSources are the FIB sources whose routes are compared: the
// API's (8) and cnat's (23), as VPP 25.02 numbers them.
var e2evppFIBSources = map[float64]bool{8: true, 23: true}

// e2evppRoutes compares the routes of a FIB dump of e2evppFIBSources, as
// sets, without their stats_index.
func e2evppRoutes(got []api.Message, want []corpusMsg) error {
	set := func(fields []json.RawMessage) ([]string, error) {
		var out []string
		for _, f := range fields {
			var m map[string]any
			if err := json.Unmarshal(f, &m); err != nil {
				return nil, err
			}
			r, _ := m["route"].(map[string]any)
			src, _ := r["src"].(float64)
			if r == nil || !e2evppFIBSources[src] {
				continue
			}
			// cnat's entry of the node's own address (a NodePort's or
			// health check's translation address): a LOCAL path on the
			// uplink in one 25.02 run, a DROP path in the next (with the
			// health-check scenarios); not modelled past its presence.
			if p, _ := r["prefix"].(string); p == "192.168.16.1/32" && src == cnatFIBSource {
				r["paths"] = "cnat's entry of the node address"
			}
			delete(r, "stats_index")
			b, _ := json.Marshal(r)
			out = append(out, string(b))
		}
		sort.Strings(out)
		return out, nil
	}
	var g, w []json.RawMessage
	for _, m := range got {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		g = append(g, b)
	}
	for _, m := range want {
		w = append(w, m.Fields)
	}
	gs, err := set(g)
	if err != nil {
		return err
	}
	ws, err := set(w)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(gs, ws) {
		return fmt.Errorf("routes of the API's and cnat's sources differ:\n got %s\nwant %s", strings.Join(gs, "\n     "), strings.Join(ws, "\n     "))
	}
	return nil
}
