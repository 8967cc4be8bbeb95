package vpp

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/codec"
)

// RecordEnv names the environment variable that, when it names a file,
// makes the agent record every binary-API message it exchanges with VPP
// there (OpenRecorder). A debugging aid: the real-VPP suite (e2evpp) uses
// it to feed the simulated VPP's replay tests.
const RecordEnv = "CONTIV_VPP_RECORD"

// Recorder writes every request sent to VPP with the replies it got, and
// every event VPP sent, one JSON record a line in the recorded corpus's
// format (testdata/vpp-25.02/corpus/README.md): the request's name, CRC
// and fields (json.Marshal of the govpp binapi struct), its replies (a
// dump's details followed by the reply of the control_ping sent after it)
// with their retval. Records are written in the order the requests were
// sent, which is the order VPP executes them; events take their place
// among them as they arrive. A connection's start and end are records with
// only a note ("connect", "disconnect"). A request without an answer when
// its connection ends is written with an error.
//
// One Recorder serves every connection of a Conn (Config.Record); it is
// safe for concurrent use. Write errors stop the recording (Err says why)
// and never fail a call.
type Recorder struct {
	mu   sync.Mutex
	w    io.Writer
	step int
	err  error
	c    io.Closer
}

// NewRecorder records into w.
func NewRecorder(w io.Writer) *Recorder { return &Recorder{w: w} }

// OpenRecorder records into the file at path, appended to (an agent that
// restarts goes on in the same file). Close closes it.
func OpenRecorder(path string) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the binary-API record %s: %w", path, err)
	}
	r := NewRecorder(f)
	r.c = f
	r.note(fmt.Sprintf("recorder opened by process %d", os.Getpid()))
	return r, nil
}

// Close closes the file OpenRecorder opened.
func (r *Recorder) Close() error {
	if r == nil || r.c == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.c.Close()
}

// Err is the write error that stopped the recording, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// RecordedMsg is one message of a record.
type RecordedMsg struct {
	Name   string          `json:"name"`
	CRC    string          `json:"crc"`
	Fields json.RawMessage `json:"fields"`
	// Retval and RetvalText: only for messages with a retval field.
	Retval     *int32 `json:"retval,omitempty"`
	RetvalText string `json:"retval_text,omitempty"`
}

// RecordLine is one line of a record file.
type RecordLine struct {
	Scenario string        `json:"scenario,omitempty"`
	Step     int           `json:"step"`
	Note     string        `json:"note,omitempty"`
	Request  *RecordedMsg  `json:"request,omitempty"`
	Replies  []RecordedMsg `json:"replies,omitempty"`
	Events   []RecordedMsg `json:"events,omitempty"`
	Error    string        `json:"error,omitempty"`
}

// write writes one line; the first error stops the recording.
func (r *Recorder) write(l *RecordLine) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	r.step++
	l.Step = r.step
	b, err := json.Marshal(l)
	if err == nil {
		_, err = r.w.Write(append(b, '\n'))
	}
	r.err = err
}

func (r *Recorder) note(s string) { r.write(&RecordLine{Note: s}) }

// Wrap returns ad recording through r. Conn wraps each connection's
// transport when Config.Record is set.
func (r *Recorder) Wrap(ad adapter.VppAPI) adapter.VppAPI {
	return &recordingAdapter{VppAPI: ad, r: r, ids: map[uint16]string{}, byCtx: map[uint32]*pendingCall{}}
}

// recordingAdapter is one connection's transport, recorded.
type recordingAdapter struct {
	adapter.VppAPI
	r *Recorder

	mu    sync.Mutex
	ids   map[uint16]string // message ID → name_crc (from GetMsgID)
	q     []*pendingCall    // in send order; the head is written once done
	byCtx map[uint32]*pendingCall
}

// pendingCall is a request waiting for its answer.
type pendingCall struct {
	line    RecordLine
	context uint32
	dump    bool
	pinged  bool         // a dump whose control_ping was sent
	of      *pendingCall // a control_ping sent to end this dump
	done    bool
	skip    bool // a dump's control_ping: recorded with the dump
}

func (a *recordingAdapter) Connect() error {
	err := a.VppAPI.Connect()
	if err != nil {
		a.r.note("connect failed: " + err.Error())
		return err
	}
	a.r.note("connect")
	return nil
}

func (a *recordingAdapter) Disconnect() error {
	a.abandon()
	a.r.note("disconnect")
	return a.VppAPI.Disconnect()
}

// abandon writes the calls still waiting for an answer without one: the
// connection ends.
func (a *recordingAdapter) abandon() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range a.q {
		if !p.done {
			p.done = true
			p.line.Error = "no answer before the connection ended"
		}
	}
	a.flushLocked()
}

func (a *recordingAdapter) GetMsgID(name, crc string) (uint16, error) {
	id, err := a.VppAPI.GetMsgID(name, crc)
	if err == nil {
		a.mu.Lock()
		if _, ok := a.ids[id]; !ok {
			a.ids[id] = name + "_" + crc
		}
		a.mu.Unlock()
	}
	return id, err
}

func (a *recordingAdapter) SendMsg(context uint32, data []byte) error {
	m, err := a.decode(data)
	a.mu.Lock()
	p := &pendingCall{context: context}
	if err != nil {
		p.line.Note = err.Error()
	} else {
		p.line.Request = m
		p.dump = strings.HasSuffix(m.Name, "_dump")
		if m.Name == "control_ping" {
			// A dump's end marker: the same channel's dump still waiting.
			for i := len(a.q) - 1; i >= 0; i-- {
				d := a.q[i]
				if d.dump && !d.pinged && !d.done && d.context>>17 == context>>17 {
					d.pinged, p.of, p.skip = true, d, true
					break
				}
			}
		}
	}
	a.q = append(a.q, p)
	a.byCtx[context] = p
	a.mu.Unlock()
	err = a.VppAPI.SendMsg(context, data)
	if err != nil {
		a.mu.Lock()
		p.done = true
		p.line.Error = err.Error()
		if p.of != nil {
			p.of.done, p.of.line.Error = true, err.Error()
		}
		a.flushLocked()
		a.mu.Unlock()
	}
	return err
}

func (a *recordingAdapter) SetMsgCallback(cb adapter.MsgCallback) {
	a.VppAPI.SetMsgCallback(func(id uint16, data []byte) {
		a.received(id, data)
		cb(id, data)
	})
}

// received files one message from VPP under its request, or as an event.
func (a *recordingAdapter) received(id uint16, data []byte) {
	m, msg, err := a.decodeMsg(data)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.q = append(a.q, &pendingCall{done: true, line: RecordLine{Note: "received: " + err.Error()}})
		a.flushLocked()
		return
	}
	if msg.GetMessageType() == api.EventMessage {
		a.q = append(a.q, &pendingCall{done: true, line: RecordLine{Events: []RecordedMsg{*m}}})
		a.flushLocked()
		return
	}
	ctx, err := codec.DecodeMsgContext(data, msg.GetMessageType())
	p := a.byCtx[ctx]
	if err != nil || p == nil {
		a.q = append(a.q, &pendingCall{done: true, line: RecordLine{Note: "reply to no recorded request", Replies: []RecordedMsg{*m}}})
		a.flushLocked()
		return
	}
	owner := p
	if p.of != nil {
		owner = p.of
	}
	owner.line.Replies = append(owner.line.Replies, *m)
	switch {
	case p.of != nil && m.Name == "control_ping_reply":
		p.done, owner.done = true, true
		delete(a.byCtx, p.context)
		delete(a.byCtx, owner.context)
	case p.of == nil && !p.dump && strings.HasSuffix(m.Name, "_reply"):
		p.done = true
		delete(a.byCtx, p.context)
	}
	a.flushLocked()
}

// maxUnanswered is how many calls may wait behind an unanswered one
// before it is written without its answer (a dump never followed by a
// control_ping would otherwise hold back the rest of the record).
const maxUnanswered = 16 * PipelineWindow

// flushLocked writes the done calls at the head of the queue.
func (a *recordingAdapter) flushLocked() {
	if len(a.q) > maxUnanswered && !a.q[0].done {
		p := a.q[0]
		p.done, p.skip = true, false
		p.line.Error = fmt.Sprintf("no answer recorded before %d later calls", maxUnanswered)
		delete(a.byCtx, p.context)
	}
	n := 0
	for n < len(a.q) && a.q[n].done {
		if !a.q[n].skip {
			a.r.write(&a.q[n].line)
		}
		n++
	}
	a.q = a.q[n:]
}

// decode decodes a message as sent or received (its ID first).
func (a *recordingAdapter) decode(data []byte) (*RecordedMsg, error) {
	m, _, err := a.decodeMsg(data)
	return m, err
}

func (a *recordingAdapter) decodeMsg(data []byte) (*RecordedMsg, api.Message, error) {
	if len(data) < 2 {
		return nil, nil, fmt.Errorf("a message of %d bytes", len(data))
	}
	id := uint16(data[0])<<8 | uint16(data[1])
	a.mu.Lock()
	key := a.ids[id]
	a.mu.Unlock()
	proto := registered(key)
	if proto == nil {
		return nil, nil, fmt.Errorf("message ID %d (%q): no registered binding", id, key)
	}
	msg := reflect.New(reflect.TypeOf(proto).Elem()).Interface().(api.Message)
	if err := codec.DecodeMsg(data, msg); err != nil {
		return nil, nil, fmt.Errorf("decoding %s: %w", key, err)
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding %s as JSON: %w", key, err)
	}
	m := &RecordedMsg{Name: msg.GetMessageName(), CRC: msg.GetCrcString(), Fields: b}
	if f := reflect.ValueOf(msg).Elem().FieldByName("Retval"); f.IsValid() && f.Kind() == reflect.Int32 {
		rv := int32(f.Int())
		m.Retval = &rv
		if rv != 0 {
			if e := api.RetvalToVPPApiError(rv); e != nil {
				m.RetvalText = e.Error()
			}
		}
	}
	return m, msg, nil
}

// registered is govpp's registered message of key (name_crc): govpp's own
// bindings first, then the other paths (the 26.06 bindings) in name
// order.
func registered(key string) api.Message {
	if key == "" {
		return nil
	}
	all := api.GetRegisteredMessages()
	if m, ok := all[govppBindingPath][key]; ok {
		return m
	}
	paths := make([]string, 0, len(all))
	for p := range all {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if m, ok := all[p][key]; ok {
			return m
		}
	}
	return nil
}

// govppBindingPath is where govpp registers its own binapi packages.
const govppBindingPath = "go.fd.io/govpp/binapi"
