package vpp

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/api"
	_ "go.fd.io/govpp/binapi/interface" // registers the messages the corpus holds
	_ "go.fd.io/govpp/binapi/memclnt"
	_ "go.fd.io/govpp/binapi/nat44_ed"
	_ "go.fd.io/govpp/binapi/vpe"
	"go.fd.io/govpp/codec"

	"contiv.dev/vpp/internal/vppcorpus"
)

// This file is a govpp transport (adapter.VppAPI) that answers from the
// recorded corpus of a real VPP 25.02 (testdata/vpp-25.02/corpus, a copy of ../shared/vpp/corpus, format in its
// README.md): the client under test talks to what VPP really answered.

type (
	corpusMsg    = vppcorpus.Msg
	corpusRecord = vppcorpus.Record
)

// loadScenario reads corpus/<name>.jsonl.
func loadScenario(t testing.TB, name string) []*corpusRecord {
	t.Helper()
	recs, err := vppcorpus.Scenario(name)
	if err != nil {
		t.Fatalf("corpus scenario %s: %v", name, err)
	}
	return recs
}

// step returns the record of a step.
func step(t testing.TB, recs []*corpusRecord, n int) *corpusRecord {
	t.Helper()
	for _, r := range recs {
		if r.Step == n {
			return r
		}
	}
	t.Fatalf("no step %d in the scenario", n)
	return nil
}

// messageTable reads VPP 25.02's message IDs from connect.jsonl's
// recorded `show api message-table`.
func messageTable(t testing.TB) map[string]uint16 {
	t.Helper()
	line := regexp.MustCompile(`(?m)^(\d+)\s+([a-z0-9_]+)\s*$`)
	for _, r := range loadScenario(t, "connect") {
		if r.Request == nil || r.Request.Name != "cli_inband" || !bytes.Contains(r.Request.Fields, []byte("message-table")) {
			continue
		}
		var f struct{ Reply string }
		if err := json.Unmarshal(r.Replies[0].Fields, &f); err != nil {
			t.Fatal(err)
		}
		ids := map[string]uint16{}
		for _, m := range line.FindAllStringSubmatch(f.Reply, -1) {
			id, _ := strconv.Atoi(m[1])
			ids[m[2]] = uint16(id)
		}
		// The table names only messages VPP handles; those it only sends
		// (events) show as "[no handler]". ASSUMPTION: sw_interface_event
		// is the one just before want_interface_events, as in
		// interface.api's order (IDs follow the .api files).
		if !regexp.MustCompile(`(?m)^162\s+\[no handler\]$`).MatchString(f.Reply) || ids["want_interface_events"] != 163 {
			t.Fatal("connect.jsonl's message table no longer has sw_interface_event at 162")
		}
		ids["sw_interface_event"] = 162
		return ids
	}
	t.Fatal("connect.jsonl holds no message table")
	return nil
}

// replay is a VPP answering from recorded records. A request takes the
// first unused record with the same message name and the same fields
// (json.Marshal of the decoded request, as recorded; the client's own pid
// in want_interface_events is not compared); its replies are sent, then
// its events. Records without a request (waits that collected events)
// deliver their events once every earlier request record is used. Steps
// the client does not send can be performed by the test (perform): another
// client did them, and their events reach this one. ASSUMPTION: a dump
// asked again with nothing played since gets the same answer (VPP's state
// is the same).
//
// Two requests are answered without records, as every VPP answers them:
// control_ping (also the one closing a dump) with the scenario's vpe_pid,
// show_version with connect.jsonl's recorded reply.
type replay struct {
	t       testing.TB
	ids     map[string]uint16 // VPP 25.02's message table, by name
	types   map[uint16]api.Message
	version *corpusMsg

	mu        sync.Mutex
	cb        adapter.MsgCallback
	recs      []*corpusRecord
	used      []bool
	delivered []bool // events of request-less records
	last      int    // the record answered last, -1 after anything else was played
	pid       uint32
	broken    bool // restarted: calls fail until the client reconnects
	misses    []string
	queue     chan []outFrame
	quit      chan struct{}
	done      chan struct{}
}

type outFrame struct {
	id   uint16
	data []byte
}

// newReplay serves the given records (a scenario, or steps picked from
// one) until the test ends.
func newReplay(t testing.TB, recs []*corpusRecord) *replay {
	t.Helper()
	r := &replay{t: t, ids: messageTable(t), types: map[uint16]api.Message{}}
	for _, byName := range []map[string]api.Message{api.GetRegisteredMessages()[govppBindings]} {
		for _, m := range byName {
			if id, ok := r.ids[m.GetMessageName()]; ok {
				r.types[id] = m
			}
		}
	}
	for _, c := range loadScenario(t, "connect") {
		if c.Request != nil && c.Request.Name == "show_version" {
			r.version = &c.Replies[0]
		}
	}
	r.load(recs)
	return r
}

// load makes recs the scenario; VPP's pid is the first recorded one.
func (r *replay) load(recs []*corpusRecord) {
	r.recs, r.used, r.delivered, r.last, r.pid = recs, make([]bool, len(recs)), make([]bool, len(recs)), -1, 0
	for _, rec := range recs {
		for _, m := range rec.Replies {
			if m.Name == "control_ping_reply" && r.pid == 0 {
				var f struct {
					VpePID uint32 `json:"vpe_pid"`
				}
				_ = json.Unmarshal(m.Fields, &f)
				r.pid = f.VpePID
			}
		}
	}
}

// restart is a VPP restart: the connection breaks (calls fail until the
// client reconnects) and recs, recorded from the new VPP, are served.
func (r *replay) restart(recs []*corpusRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.load(recs)
	r.broken = true
}

// Connect implements adapter.VppAPI.
func (r *replay) Connect() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.broken = false
	r.queue = make(chan []outFrame, 1024)
	r.quit, r.done = make(chan struct{}), make(chan struct{})
	go r.deliver(r.cb, r.queue, r.quit, r.done)
	return nil
}

// Disconnect implements adapter.VppAPI.
func (r *replay) Disconnect() error {
	r.mu.Lock()
	quit, done := r.quit, r.done
	r.quit = nil
	r.mu.Unlock()
	if quit != nil {
		close(quit)
		<-done
	}
	return nil
}

func (r *replay) deliver(cb adapter.MsgCallback, q chan []outFrame, quit, done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-quit:
			return
		case batch := <-q:
			for _, f := range batch {
				cb(f.id, f.data)
			}
		}
	}
}

// GetMsgID implements adapter.VppAPI from VPP 25.02's message table (every
// govpp message of these packages passed the recorded compatibility check).
func (r *replay) GetMsgID(name, crc string) (uint16, error) {
	if id, ok := r.ids[name]; ok {
		return id, nil
	}
	return 0, &adapter.UnknownMsgError{MsgName: name, MsgCrc: crc}
}

// SetMsgCallback implements adapter.VppAPI.
func (r *replay) SetMsgCallback(cb adapter.MsgCallback) {
	r.mu.Lock()
	r.cb = cb
	r.mu.Unlock()
}

// WaitReady implements adapter.VppAPI.
func (r *replay) WaitReady() error { return nil }

// SendMsg implements adapter.VppAPI.
func (r *replay) SendMsg(context uint32, data []byte) error {
	id := binary.BigEndian.Uint16(data[0:2])
	proto, ok := r.types[id]
	if !ok {
		return fmt.Errorf("replay: unknown message ID %d", id)
	}
	req := reflect.New(reflect.TypeOf(proto).Elem()).Interface().(api.Message)
	if err := codec.DefaultCodec.DecodeMsg(data, req); err != nil {
		return fmt.Errorf("replay: decoding %s: %w", req.GetMessageName(), err)
	}
	fields, err := json.Marshal(req)
	if err != nil {
		return err
	}
	name := req.GetMessageName()

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken {
		return fmt.Errorf("replay: connection reset (VPP restarted)")
	}
	var out []outFrame
	switch name {
	case "control_ping":
		out = r.frames(out, context, corpusMsg{Name: "control_ping_reply", Fields: fmt.Appendf(nil, `{"vpe_pid":%d}`, r.pid)})
	case "show_version":
		out = r.frames(out, context, *r.version)
	default:
		i := r.match(name, fields)
		if i < 0 && r.last >= 0 && strings.HasSuffix(name, "_dump") && r.recs[r.last].Request.Name == name &&
			jsonEqual(r.recs[r.last].Request.Fields, fields) {
			i = r.last // asked again, nothing changed
		}
		if i < 0 {
			r.misses = append(r.misses, fmt.Sprintf("%s %s", name, fields))
			return fmt.Errorf("replay: no recorded answer for %s %s", name, fields)
		}
		r.used[i], r.last = true, i
		replies := r.recs[i].Replies
		if n := len(replies); n > 0 && replies[n-1].Name == "control_ping_reply" {
			replies = replies[:n-1] // a dump: its control_ping comes next
		}
		out = r.frames(out, context, replies...)
		if len(r.recs[i].Events) > 0 {
			out = r.frames(out, 0, r.recs[i].Events...)
			r.last = -1
		}
		out = r.waits(out)
	}
	r.queue <- out
	return nil
}

// match finds the first unused record for a request.
func (r *replay) match(name string, fields []byte) int {
	for i, rec := range r.recs {
		if r.used[i] || rec.Request == nil || rec.Request.Name != name {
			continue
		}
		want := rec.Request.Fields
		if name == "want_interface_events" {
			want, fields = withoutKey(want, "pid"), withoutKey(fields, "pid")
		}
		if jsonEqual(want, fields) {
			return i
		}
	}
	return -1
}

// waits adds the events of request-less records whose earlier request
// records are all used.
func (r *replay) waits(out []outFrame) []outFrame {
	for i, rec := range r.recs {
		switch {
		case rec.Request != nil && !r.used[i]:
			return out
		case rec.Request == nil && !r.delivered[i]:
			r.delivered[i] = true
			if len(rec.Events) > 0 {
				out = r.frames(out, 0, rec.Events...)
				r.last = -1
			}
		}
	}
	return out
}

// perform plays steps the client does not send (another client did):
// they count as used and their events are delivered.
func (r *replay) perform(steps ...int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []outFrame
	for _, n := range steps {
		for i, rec := range r.recs {
			if rec.Step == n && !r.used[i] {
				r.used[i], r.last = true, -1
				out = r.frames(out, 0, rec.Events...)
			}
		}
	}
	out = r.waits(out)
	if r.queue == nil {
		r.t.Fatalf("perform(%v) before the client connected", steps)
	}
	r.queue <- out
}

// frames encodes recorded messages (context 0 for events).
func (r *replay) frames(out []outFrame, context uint32, msgs ...corpusMsg) []outFrame {
	for _, m := range msgs {
		id, ok := r.ids[m.Name]
		proto := r.types[id]
		if !ok || proto == nil {
			r.t.Errorf("replay: recorded %s is not in VPP's message table or govpp's registry", m.Name)
			continue
		}
		msg := reflect.New(reflect.TypeOf(proto).Elem()).Interface().(api.Message)
		if len(m.Fields) > 0 {
			if err := json.Unmarshal(m.Fields, msg); err != nil {
				r.t.Errorf("replay: recorded %s fields: %v", m.Name, err)
				continue
			}
		}
		b, err := codec.DefaultCodec.EncodeMsg(msg, id)
		if err != nil {
			r.t.Errorf("replay: encoding %s: %v", m.Name, err)
			continue
		}
		if msg.GetMessageType() == api.ReplyMessage {
			binary.BigEndian.PutUint32(b[2:6], context)
		}
		out = append(out, outFrame{id: id, data: b})
	}
	return out
}

// usedSteps lists the steps answered or performed so far.
func (r *replay) usedSteps() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []int
	for i, u := range r.used {
		if u {
			s = append(s, r.recs[i].Step)
		}
	}
	return s
}

// missed lists the requests no record answered.
func (r *replay) missed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.misses...)
}

// withoutKey drops a key from a JSON object.
func withoutKey(doc []byte, key string) []byte {
	var m map[string]any
	if json.Unmarshal(doc, &m) != nil {
		return doc
	}
	delete(m, key)
	b, _ := json.Marshal(m)
	return b
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if len(bytes.TrimSpace(a)) == 0 {
		a = []byte("{}")
	}
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
