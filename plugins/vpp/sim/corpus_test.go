package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/core"

	"contiv.dev/vpp/internal/vppcorpus"
)

// The corpus (testdata/vpp-25.02/corpus, a copy of ../shared/vpp/corpus; see its README.md) records what a
// real VPP 25.02 answered to the project's requests. TestCorpus replays
// every scenario file against a fresh simulated VPP, through a real govpp
// connection, and compares every reply, details message and interface
// event field by field.

// corpusSkip is one kind of record the simulation deliberately does not
// model.
type corpusSkip struct {
	file     string // glob on the file name; "" = any
	request  string // request name; "" = any
	step     int    // 0 = any
	noteOnly bool   // records without request, compat or events
	reason   string
}

// corpusSkips is THE table of records not compared, each with its reason.
var corpusSkips = []corpusSkip{
	{file: "cnat_sessions.jsonl", request: "cnat_session_dump", step: 11, reason: cnatTrafficSessions},
	{file: "cnat_sessions.jsonl", request: "cnat_session_dump", step: 33, reason: cnatTrafficSessions},
	{file: "cnat_ipv6.jsonl", request: "cnat_session_dump", step: 8, reason: cnatTrafficSessions},
	{request: "cli_inband", reason: "debug CLI output (not part of the project's API use; state-changing commands are replayed through the sim's Go API, see corpusCLI)"},
	{request: "show_version", reason: "build date and directory of the recorded binary"},
	{request: "ip_route_v2_dump", reason: "FIB dump lists VPP's default, connected and unnumbered routes with stats indices: the sim models only API-added routes"},
	{file: "connect.jsonl", step: 1, reason: "compat of plugins/vpp's own message list (import cycle); steps 2-4 check the packages it draws from"},
	{noteOnly: true, reason: "plain note (an observation, no message)"},
}

// cnatTrafficSessions is why non-empty cnat session dumps are not
// compared (the empty ones are).
const cnatTrafficSessions = "cnat sessions made by the recording's curl traffic (random client ports, listed in VPP's hash-table order): a replay sends no traffic"

// corpusSetup says how a file's VPP was found when the recording started.
var corpusSetup = map[string]struct{ startupPending bool }{
	// Recorded right after VPP started, before its startup configuration
	// had created the interfaces.
	"restart_events.jsonl": {startupPending: true},
}

// corpusCLI replays debug-CLI commands that change state through the
// sim's Go API, so that what follows them (and their events) matches.
var corpusCLI = map[string]func(v *VPP) error{
	"create loopback interface": func(v *VPP) error {
		v.mu.Lock()
		defer v.mu.Unlock()
		_, rv := v.createLoopbackLocked(nil)
		if rv != 0 {
			return rv
		}
		return nil
	},
	"set interface state loop1 up":          func(v *VPP) error { return v.SetAdminUp("loop1", true) },
	"delete loopback interface intfc loop1": func(v *VPP) error { return v.DelInterface("loop1") },
	"delete host-interface name vco1":       func(v *VPP) error { return v.DelInterface("host-vco1") },
	"create host-interface name vco1 hw-addr 02:fe:00:00:00:05": func(v *VPP) error {
		_, err := v.CreateInterface(InterfaceSpec{Name: "host-vco1", MAC: mac("02:fe:00:00:00:05"), VRF: 1, AdminDown: true})
		return err
	},
}

// corpusInterfaces are the interfaces the recording's startup
// configuration created (corpus/README.md).
var corpusInterfaces = []InterfaceSpec{
	{Name: "loop0", MAC: mac("de:ad:00:00:00:00"), VRF: 1, Address: netip.MustParsePrefix("10.1.1.1/32")},
	{Name: "host-vcup", MAC: mac("02:fe:00:00:01:00"), Address: netip.MustParsePrefix("192.168.16.1/24")},
	{Name: "host-vcw1", Tag: "default/web-1", MAC: mac("02:fe:00:00:00:01"), VRF: 1},
	{Name: "host-vcw2", Tag: "default/web-2", MAC: mac("02:fe:00:00:00:02"), VRF: 1},
	{Name: "host-vcw3", Tag: "default/web-3", MAC: mac("02:fe:00:00:00:03"), VRF: 1},
	{Name: "host-vccl", Tag: "default/client", MAC: mac("02:fe:00:00:00:04"), VRF: 1},
	{Name: "host-vco1", Tag: "default/one-1", MAC: mac("02:fe:00:00:00:05"), VRF: 1},
	{Name: "host-vcl1", Tag: "default/loc-1", MAC: mac("02:fe:00:00:00:06"), VRF: 1},
}

func mac(s string) [6]byte {
	var m [6]byte
	if _, err := fmt.Sscanf(s, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]); err != nil {
		panic(err)
	}
	return m
}

type (
	corpusMsg    = vppcorpus.Msg
	corpusRecord = vppcorpus.Record
)

// corpusCount tallies the replay.
type corpusCount struct {
	records, compared, matched, skipped int
	reasons                             map[string]int
}

func TestCorpus(t *testing.T) {
	dir, err := vppcorpus.Dir()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) == 0 {
		t.Fatalf("corpus: no *.jsonl in %s (the recorded VPP 25.02 corpus is required; set CONTIV_VPP_CORPUS)", dir)
	}
	sort.Strings(files)
	cnt := &corpusCount{reasons: map[string]int{}}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { replayFile(t, f, cnt) })
	}
	var reasons []string
	for r, n := range cnt.reasons {
		reasons = append(reasons, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(reasons)
	t.Logf("corpus: %d records, %d compared, %d matched, %d skipped (reasons: %s)",
		cnt.records, cnt.compared, cnt.matched, cnt.skipped, strings.Join(reasons, "; "))
	if cnt.compared != cnt.matched {
		t.Errorf("corpus: %d of %d compared records differ", cnt.compared-cnt.matched, cnt.compared)
	}
}

func readCorpus(t *testing.T, path string) []*corpusRecord {
	recs, err := vppcorpus.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func skipReason(file string, r *corpusRecord) string {
	for _, s := range corpusSkips {
		if s.file != "" {
			if ok, _ := filepath.Match(s.file, file); !ok {
				continue
			}
		}
		if s.request != "" && (r.Request == nil || r.Request.Name != s.request) {
			continue
		}
		if s.step != 0 && s.step != r.Step {
			continue
		}
		if s.noteOnly && (r.Request != nil || r.Compat != nil || len(r.Events) > 0) {
			continue
		}
		return s.reason
	}
	return ""
}

// replayer is one file's replay.
type replayer struct {
	t      *testing.T
	file   string
	v      *VPP
	conn   *core.Connection
	events api.Watcher
	// pids maps the recording's VPP process IDs to the sim's.
	pids map[uint32]uint32
	// lastPID is the recorded pid seen last.
	lastPID uint32
}

func replayFile(t *testing.T, path string, cnt *corpusCount) {
	file := filepath.Base(path)
	recs := readCorpus(t, path)
	v := New(Options{})
	t.Cleanup(v.Close)
	v.CreateTable(1) // the recording's startup configuration (its VRF 1)
	for _, s := range corpusInterfaces {
		if _, err := v.CreateInterface(s); err != nil {
			t.Fatal(err)
		}
	}
	if corpusSetup[file].startupPending {
		v.RestartWith(RestartOptions{InterfacesAfter: time.Hour})
	}
	r := &replayer{t: t, file: file, v: v, pids: map[uint32]uint32{}}
	r.connect()
	t.Cleanup(func() { r.disconnect() })
	for i := range recs {
		rec := recs[i]
		r.instance(filepath.Dir(path), rec.Step)
		cnt.records++
		if why := skipReason(file, rec); why != "" {
			cnt.skipped++
			cnt.reasons[why]++
			r.cli(rec)
			continue
		}
		cnt.compared++
		if strings.HasPrefix(file, "cnat") && rec.Request != nil {
			// Recorded one request per connection: cnat state outlives
			// the client that made it.
			r.disconnect()
			r.connect()
		}
		if err := r.replay(rec); err != nil {
			t.Errorf("step %d (%s): %v", rec.Step, rec.Note, err)
			continue
		}
		cnt.matched++
	}
}

func (r *replayer) connect() {
	conn, err := core.Connect(r.v)
	if err != nil {
		r.t.Fatalf("connect: %v", err)
	}
	w, err := conn.WatchEvent(context.Background(), &interfaces.SwInterfaceEvent{})
	if err != nil {
		r.t.Fatalf("watch events: %v", err)
	}
	r.conn, r.events = conn, w
}

func (r *replayer) disconnect() {
	if r.conn != nil {
		r.events.Close()
		r.conn.Disconnect()
		r.conn = nil
	}
}

// cli replays a skipped state-changing CLI command and checks its events.
func (r *replayer) cli(rec *corpusRecord) {
	if rec.Request == nil || rec.Request.Name != "cli_inband" {
		return
	}
	var f struct{ Cmd string }
	_ = json.Unmarshal(rec.Request.Fields, &f)
	if do := corpusCLI[f.Cmd]; do != nil {
		if err := do(r.v); err != nil {
			r.t.Errorf("step %d: CLI %q: %v", rec.Step, f.Cmd, err)
		}
	}
	if err := r.checkEvents(rec); err != nil {
		r.t.Errorf("step %d: CLI %q: %v", rec.Step, f.Cmd, err)
	}
}

// recordedPID returns the VPP pid a record's replies show (0 if none).
func recordedPID(rec *corpusRecord) uint32 {
	for _, m := range rec.Replies {
		var f struct {
			VpePID     uint32 `json:"vpe_pid"`
			ThreadData []struct {
				PID uint32 `json:"pid"`
			} `json:"thread_data"`
		}
		_ = json.Unmarshal(m.Fields, &f)
		if f.VpePID != 0 {
			return f.VpePID
		}
		if len(f.ThreadData) > 0 {
			return f.ThreadData[0].PID
		}
	}
	return 0
}

// interfacesBack tells whether a record shows the startup configuration's
// interfaces (a dump with more than local0, or awaited events).
func interfacesBack(rec *corpusRecord) bool {
	if rec.Request == nil {
		return len(rec.Events) > 0
	}
	return rec.Request.Name == "sw_interface_dump" && len(rec.Replies) > 2
}

func (r *replayer) replay(rec *corpusRecord) error {
	// The recording restarted VPP where its pid changes without a crash.
	if pid := recordedPID(rec); pid != 0 {
		if r.lastPID != 0 && pid != r.lastPID && r.pids[pid] == 0 && r.v.PID() == r.pids[r.lastPID] {
			r.disconnect()
			r.v.RestartWith(RestartOptions{InterfacesAfter: time.Hour})
			r.connect()
		}
		r.lastPID = pid
	}
	// The test is the clock: the startup configuration has run when the
	// record shows its interfaces.
	if interfacesBack(rec) {
		r.v.FinishStartup()
	}
	if rec.Compat != nil {
		return r.compat(rec)
	}
	if rec.Request == nil {
		return r.checkEvents(rec)
	}
	if err := r.checkNoEvent(); err != nil {
		return err
	}
	crashes := r.v.Crashes()
	got, err := r.send(rec.Request)
	if rec.Error != "" {
		// VPP died on the request (no reply: the client timed out), or
		// was dead already (the socket write failed).
		crashed := strings.Contains(rec.Error, "deadline")
		switch {
		case !errors.Is(err, ErrConnectionReset):
			return fmt.Errorf("VPP failed (%s), the sim answered %d messages (error %v)", rec.Error, len(got), err)
		case crashed && r.v.Crashes() != crashes+1:
			return fmt.Errorf("VPP crashed (%s), the sim did not (crashes %d)", rec.Error, r.v.Crashes())
		case !crashed && r.v.Crashes() != crashes:
			return fmt.Errorf("VPP was already dead (%s), the sim crashed again", rec.Error)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if len(got) != len(rec.Replies) {
		return fmt.Errorf("%d messages, recorded %d:\n got %s\nwant %s", len(got), len(rec.Replies), names(got), recNames(rec.Replies))
	}
	for i, m := range got {
		if err := r.compare(m, rec.Replies[i]); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
	return r.checkEvents(rec)
}

func names(ms []api.Message) string {
	var s []string
	for _, m := range ms {
		b, _ := json.Marshal(m)
		s = append(s, m.GetMessageName()+string(b))
	}
	return strings.Join(s, " ")
}

func recNames(ms []corpusMsg) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.Name+string(m.Fields))
	}
	return strings.Join(s, " ")
}

// compare checks one received message against the recorded one: name and
// every field, VPP's process IDs mapped to the sim's.
func (r *replayer) compare(got api.Message, want corpusMsg) error {
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
		// VPP does not set control_ping_reply's client_index: the reply
		// reuses a message buffer as it was (cnat_ipv6.jsonl shows 1025
		// and 1019 after long dumps, every other reply 0).
		delete(w, "client_index")
	}
	if err := r.mapPIDs(want.Name, w); err != nil {
		return err
	}
	if !reflect.DeepEqual(g, w) {
		wb, _ := json.Marshal(w)
		return fmt.Errorf("%s differs:\n got %s\nwant %s", want.Name, gb, wb)
	}
	return nil
}

// mapPIDs replaces the recording's VPP pid by the sim's in a reply: a
// recorded pid maps to one sim pid, and distinct ones to distinct ones.
func (r *replayer) mapPIDs(name string, f map[string]any) error {
	conv := func(x any) (any, error) {
		p, ok := x.(float64)
		if !ok {
			return x, nil
		}
		rec := uint32(p)
		sim, ok := r.pids[rec]
		if !ok {
			sim = r.v.PID()
			for rp, sp := range r.pids {
				if sp == sim {
					return nil, fmt.Errorf("recorded VPP pids %d and %d both answer as sim pid %d", rp, rec, sim)
				}
			}
			r.pids[rec] = sim
		}
		return float64(sim), nil
	}
	var err error
	switch name {
	case "control_ping_reply":
		if x, ok := f["vpe_pid"]; ok {
			f["vpe_pid"], err = conv(x)
		}
	case "show_threads_reply":
		td, _ := f["thread_data"].([]any)
		for _, e := range td {
			if m, ok := e.(map[string]any); ok && m["pid"] != nil {
				if m["pid"], err = conv(m["pid"]); err != nil {
					return err
				}
			}
		}
	}
	return err
}

// message returns a new govpp message registered under name and crc.
func message(name, crc string) (api.Message, error) {
	// govpp's bindings first: the recordings are of VPP 25.02, and
	// VPP 26.06's cnat bindings repeat most of its messages.
	for _, path := range []string{govppBindings, bindingPath2606} {
		if m, ok := api.GetRegisteredMessages()[path][name+"_"+crc]; ok {
			return reflect.New(reflect.TypeOf(m).Elem()).Interface().(api.Message), nil
		}
	}
	return nil, fmt.Errorf("no govpp binapi message %s_%s", name, crc)
}

// send sends a recorded request as the project does (a dump followed by
// control_ping) and returns what came back.
func (r *replayer) send(req *corpusMsg) ([]api.Message, error) {
	m, err := message(req.Name, req.CRC)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(req.Fields, m); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", req.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := r.conn.NewStream(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.Close() }()
	if err := s.SendMsg(m); err != nil {
		return nil, err
	}
	dump := strings.HasSuffix(req.Name, "_dump")
	if dump {
		if err := s.SendMsg(&memclnt.ControlPing{}); err != nil {
			return nil, err
		}
	}
	var out []api.Message
	for {
		got, err := s.RecvMsg()
		if err != nil {
			return out, err
		}
		out = append(out, got)
		name := got.GetMessageName()
		switch {
		case dump && name == "control_ping_reply":
			return out, nil
		case !dump && strings.HasSuffix(name, "_reply"):
			return out, nil
		}
	}
}

// checkEvents waits for the events a record expects and compares them.
func (r *replayer) checkEvents(rec *corpusRecord) error {
	for i, want := range rec.Events {
		select {
		case got := <-r.events.Events():
			if err := r.compare(got, want); err != nil {
				return fmt.Errorf("event %d: %w", i, err)
			}
		case <-time.After(5 * time.Second):
			return fmt.Errorf("event %d of %d not delivered: %s", i, len(rec.Events), want.Fields)
		}
	}
	return nil
}

// checkNoEvent fails on an event no record expected.
func (r *replayer) checkNoEvent() error {
	select {
	case got := <-r.events.Events():
		b, _ := json.Marshal(got)
		return fmt.Errorf("unexpected event %s%s", got.GetMessageName(), b)
	default:
		return nil
	}
}

// compat checks govpp's compatibility check of a binapi package's
// messages against the sim's message table.
func (r *replayer) compat(rec *corpusRecord) error {
	var pkgs []string
	for _, p := range []string{"nat44_ed", "interface", "vpe", "memclnt", "vlib", "ip", "cnat"} {
		if strings.Contains(rec.Note, "binapi/"+p) || strings.Contains(rec.Note, "+ "+p) {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) == 0 {
		return fmt.Errorf("compat record names no binapi package the test knows: %q", rec.Note)
	}
	var msgs []api.Message
	for _, ms := range []map[string]api.Message{api.GetRegisteredMessages()[govppBindings]} {
		for _, m := range ms {
			pkg := filepath.Base(reflect.TypeOf(m).Elem().PkgPath())
			for _, p := range pkgs {
				if pkg == p {
					msgs = append(msgs, m)
				}
			}
		}
	}
	if len(msgs) != rec.Compat.Checked {
		return fmt.Errorf("binapi %v has %d messages, the recording checked %d", pkgs, len(msgs), rec.Compat.Checked)
	}
	ch, err := r.conn.NewAPIChannel()
	if err != nil {
		return err
	}
	defer ch.Close()
	err = ch.CheckCompatiblity(msgs...)
	var ce *api.CompatibilityError
	if errors.As(err, &ce) {
		return fmt.Errorf("incompatible: %v (recorded: %v)", ce.IncompatibleMessages, rec.Compat.Incompatible)
	}
	return err
}
