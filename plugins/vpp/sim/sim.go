package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/codec"
)

// Options configure a simulated VPP. The zero value is ready to use.
type Options struct {
	// Logger receives the simulator's own log lines; nil discards them.
	Logger *slog.Logger
	// Version is what show_version answers; default DefaultVersion. It
	// selects the release simulated: "26.06…" (e.g. "v26.06-release")
	// is VPP 26.06 (release.go), anything else VPP 25.02's message table
	// and behaviour (a version the agent has no bindings for is refused by
	// the agent from the version alone).
	Version string
	// Without lists binary-API messages (by name, e.g.
	// "nat44_lb_static_mapping_add_del_local") this VPP lacks: they are
	// left out of its message table, as in an older or newer VPP build.
	Without []string
	// NoACLPlugin stands for a VPP whose startup configuration does not
	// load acl_plugin.so: the ACL plugin's messages are not in its message
	// table (govpp's compatibility check finds them unknown) and none of
	// them is answered. SetACLPlugin changes it for the next restart.
	NoACLPlugin bool
	// OnAck, when set, is called after every state-changing request has
	// been answered, with the request's name and the time of the answer.
	// It runs on the caller's goroutine and must not block.
	OnAck func(msg string, at time.Time)
	// SessionSeed seeds OpenSession's deterministic choice of backends
	// (sessions.go) and OpenCnatSession's flow hash (cnat_sessions.go).
	SessionSeed uint64
	// OnCut, when set, is called with the number of sessions a
	// configuration change cut (sessions.go; cnat_session_purge,
	// cnat_sessions.go), with the simulator's lock
	// held: it must not block or call the VPP's methods.
	OnCut func(n int)
	// ServiceTime is how long each request served over a socket (Serve)
	// waits before VPP executes and answers it; default 0. Requests are
	// executed in order, one at a time; a client with several requests in
	// flight overlaps their waits (server.go).
	ServiceTime time.Duration
	// Traffic stands for packets reaching every load-balanced mapping all
	// the time: after each call that adds a load-balanced mapping or
	// changes its locals, a first packet is picked for it as VPP 25.02
	// picks (lbpick.go). A mapping whose probabilities sum to a multiple
	// of 256 then crashes the simulated VPP at once (the call gets no
	// answer), and one summing to more than 255 (a skewed pick) is
	// counted by Skews.
	Traffic bool
	// FeatureWalk is the main thread's time per static mapping when an
	// outside or output NAT44 feature is enabled or disabled (cost.go);
	// the zero value (unit tests) costs nothing, VPP2502FeatureWalk is
	// what VPP 25.02 was measured to spend.
	FeatureWalk FeatureWalk
	// PluginEnable is the main thread's time per session of the limit
	// NAT44-ED is enabled with (cost.go); the zero value (unit tests)
	// costs nothing, VPP2502PluginEnable is what VPP 25.02 was measured to
	// spend (0.93 s at 262 144 sessions).
	PluginEnable time.Duration
	// CnatSessionMaxAge is cnat's session-max-age (startup configuration
	// cnat { session-max-age N }): a UDP session no packet refreshed for
	// that long has expired, and the flow's next packet (CnatPacket) is
	// balanced again. 0 is VPP's default, 30 s (FACTS §6).
	CnatSessionMaxAge time.Duration
}

// DefaultVersion is the version the simulator reports.
const DefaultVersion = "25.02-simulated"

// firstPID is the process ID the simulated VPP starts with; every
// Restart gives it a new one, as a real restart does.
const firstPID = 4242

// VPP is a simulated VPP: a govpp transport (adapter.VppAPI) that answers
// the binary-API messages the agent uses from NAT44-ED state held in
// memory, enforcing VPP's rules. It forwards no packets.
//
// In process it serves one client connection at a time (Serve takes
// several over a socket). All methods are safe for concurrent use.
type VPP struct {
	log     *slog.Logger
	version string
	onAck   func(string, time.Time)
	service time.Duration // Options.ServiceTime
	traffic bool          // Options.Traffic
	walk    FeatureWalk   // Options.FeatureWalk
	// enableCost is Options.PluginEnable.
	enableCost time.Duration

	// The message table: built at New and at every restart (under mu).
	without   []string          // Options.Without
	aclPlugin bool              // acl_plugin.so is loaded (from the last (re)start on)
	aclNext   bool              // acl_plugin.so is loaded from the next restart on
	ids       map[string]uint16 // name_crc -> ID
	defs      map[uint16]*msgDef

	mu       sync.Mutex
	callback adapter.MsgCallback
	sess     *session
	pid      uint32
	nat      *natState
	ifaces   map[uint32]*iface
	nextIf   uint32
	freeIf   []uint32 // freed sw_if_index values, reused last-freed-first
	fib      fibState
	acls     aclState // acl.go
	pods     podState // pods.go
	calls    map[string]int
	refused  map[Refusal]int // Refusals
	faults   Faults
	rng      *rand.Rand
	lastAck  time.Time
	// busy is the main-thread time the request being executed costs
	// beyond its service time (cost.go), spent before its answer.
	busy      time.Duration
	busyTotal time.Duration // feature walks (Walked)
	enabling  time.Duration // plugin enables (Enabling)
	// busyUntil is when the main thread is done with the cost of the
	// request being answered (restart.go: the startup configuration
	// waits for it).
	busyUntil time.Time
	sessions  *sessionTable // sessions.go
	cnat      *cnatState    // cnat.go
	cnatSess  *cnatSessions // cnat_sessions.go

	// Restarts and crashes.
	startup []*iface    // interfaces the startup configuration re-creates
	timer   *time.Timer // pending re-creation of startup interfaces
	// startupDue: the startup configuration's time came while the main
	// thread was busy; it runs once the thread is free (restart.go).
	startupDue bool
	closed     bool
	crashes    int
	lastCrash  string
	// rel2606: Options.Version is VPP 26.06's (release.go).
	rel2606 bool
	skews   int // lbpick.go
}

// New returns a simulated VPP with only the local0 interface and the
// NAT44-ED plugin disabled, as a freshly started VPP.
func New(opts Options) *VPP {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	v := &VPP{
		log:        log,
		version:    opts.Version,
		onAck:      opts.OnAck,
		service:    opts.ServiceTime,
		traffic:    opts.Traffic,
		walk:       opts.FeatureWalk,
		enableCost: opts.PluginEnable,
		without:    opts.Without,
		aclPlugin:  !opts.NoACLPlugin,
		aclNext:    !opts.NoACLPlugin,
		pid:        firstPID,
		nat:        newNATState(),
		ifaces:     map[uint32]*iface{0: newLocal0()},
		nextIf:     1,
		calls:      make(map[string]int),
		refused:    make(map[Refusal]int),
	}
	v.sessions = newSessionTable(opts) // sessions.go
	v.cnat = newCnatState()
	v.cnatSess = newCnatSessions(opts)
	v.fib.reset()
	v.acls.reset()
	if v.version == "" {
		v.version = DefaultVersion
	}
	v.rel2606 = is2606(v.version)
	v.buildTable()
	log.Warn("simulated VPP created: it keeps NAT44 state in memory and forwards NO packets")
	return v
}

// Simulated reports that this transport is not a real VPP.
func (v *VPP) Simulated() bool { return true }

// msgKey is how a message table indexes a message.
func msgKey(m api.Message) string { return m.GetMessageName() + "_" + m.GetCrcString() }

// buildTable assigns message IDs to every message the simulator speaks,
// except those it was told to lack and those of plugins it does not load.
// A plugin not loaded keeps its messages' IDs unused, so the other IDs
// stay the same across a restart that loads or drops it (the socket
// server learns some of them once). The caller holds mu (or owns v).
func (v *VPP) buildTable() {
	v.ids, v.defs = make(map[string]uint16), make(map[uint16]*msgDef)
	skip := make(map[string]bool, len(v.without))
	for _, name := range v.without {
		skip[name] = true
	}
	// ASSUMPTION: a VPP that does not load acl_plugin.so has none of its
	// messages in the table (VPP registers a plugin's messages when it
	// loads it; not recorded).
	// ASSUMPTION: a VPP that does not load acl_plugin.so has none of its
	// messages in the table (VPP registers a plugin's messages as it loads
	// it; not recorded).
	unloaded := func(m api.Message) bool { return !v.aclPlugin && msgPackage(m) == "acl" }
	next := uint16(100)
	assign := func(m api.Message) uint16 {
		k := msgKey(m)
		if id, ok := v.ids[k]; ok {
			return id
		}
		next++
		v.ids[k] = next
		return next
	}
	for _, m := range tableMessages(v.rel2606) {
		switch {
		case skip[m.GetMessageName()]:
		case unloaded(m):
			next++
		default:
			assign(m)
		}
	}
	for _, d := range v.messageDefs() {
		if skip[d.req.GetMessageName()] || unloaded(d.req) {
			continue
		}
		v.defs[assign(d.req)] = d
		for _, r := range d.answers {
			if !skip[r.GetMessageName()] {
				assign(r)
			}
		}
	}
}

// session is one client connection: replies are delivered in order by
// its own goroutine, as a socket reader would.
type session struct {
	cb    adapter.MsgCallback
	mu    sync.Mutex
	queue []outMsg
	wake  chan struct{}
	quit  chan struct{}
	done  chan struct{}
	reset bool // guarded by VPP.mu: the simulated VPP restarted under it
	// events is want_interface_events' registration (guarded by VPP.mu):
	// the client's pid, echoed in every sw_interface_event.
	events    bool
	eventsPID uint32
}

type outMsg struct {
	id   uint16
	data []byte
}

func (s *session) push(msgs []outMsg) {
	s.mu.Lock()
	s.queue = append(s.queue, msgs...)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *session) run() {
	defer close(s.done)
	for {
		select {
		case <-s.quit:
			return
		case <-s.wake:
		}
		for {
			s.mu.Lock()
			batch := s.queue
			s.queue = nil
			s.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			for _, m := range batch {
				select {
				case <-s.quit:
					return
				default:
				}
				s.cb(m.id, m.data)
			}
		}
	}
}

// ErrConnectionReset is what calls get after Restart until the client
// reconnects.
var ErrConnectionReset = errors.New("simulated VPP: connection reset (VPP restarted)")

// ErrNotConnected is what calls get before Connect or after Disconnect.
var ErrNotConnected = errors.New("simulated VPP: not connected")

// Connect implements adapter.VppAPI.
func (v *VPP) Connect() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.sess != nil {
		return errors.New("simulated VPP: a client is already connected (one at a time)")
	}
	cb := v.callback
	if cb == nil {
		return errors.New("simulated VPP: no message callback set")
	}
	s := &session{
		cb:   cb,
		wake: make(chan struct{}, 1),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	v.sess = s
	go s.run()
	v.log.Debug("simulated VPP: client connected", "pid", v.pid)
	return nil
}

// Disconnect implements adapter.VppAPI; replies not yet delivered are dropped.
func (v *VPP) Disconnect() error {
	v.mu.Lock()
	s := v.sess
	v.sess = nil
	v.mu.Unlock()
	if s == nil {
		return nil
	}
	close(s.quit)
	<-s.done
	v.log.Debug("simulated VPP: client disconnected")
	return nil
}

// GetMsgID implements adapter.VppAPI.
func (v *VPP) GetMsgID(name, crc string) (uint16, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if id, ok := v.ids[name+"_"+crc]; ok {
		return id, nil
	}
	return 0, &adapter.UnknownMsgError{MsgName: name, MsgCrc: crc}
}

// SetMsgCallback implements adapter.VppAPI.
func (v *VPP) SetMsgCallback(cb adapter.MsgCallback) {
	v.mu.Lock()
	v.callback = cb
	v.mu.Unlock()
}

// WaitReady implements adapter.VppAPI: the simulator is always ready.
func (v *VPP) WaitReady() error { return nil }

// SendMsg implements adapter.VppAPI: it decodes the request, applies it to
// the simulated state and queues the answers for delivery.
func (v *VPP) SendMsg(context uint32, data []byte) error {
	if len(data) < 10 {
		return fmt.Errorf("simulated VPP: message of %d bytes is shorter than a request header", len(data))
	}
	id := binary.BigEndian.Uint16(data[0:2])

	v.mu.Lock()
	s := v.sess
	switch {
	case s == nil:
		v.mu.Unlock()
		return ErrNotConnected
	case s.reset:
		v.mu.Unlock()
		return ErrConnectionReset
	}
	d, ok := v.defs[id]
	if !ok {
		v.mu.Unlock()
		return fmt.Errorf("simulated VPP: message ID %d is not simulated", id)
	}
	req := newMsg(d.req)
	if err := codec.DefaultCodec.DecodeMsg(data, req); err != nil {
		v.mu.Unlock()
		return fmt.Errorf("simulated VPP: decoding %s: %w", d.req.GetMessageName(), err)
	}
	name := d.req.GetMessageName()
	v.calls[name]++
	v.busy = 0

	var answers []api.Message
	rv, fault := v.fault(d, req)
	switch {
	case fault && !v.faults.AfterApply:
		answers = []api.Message{withRetval(newMsg(d.answers[len(d.answers)-1]), rv)}
	case fault:
		answers = d.handle(v, req)
		withRetval(answers[len(answers)-1], rv)
	default:
		answers = d.handle(v, req)
	}
	if d.write && v.rel2606 && isCnatMessage(name) {
		v.cnatInitLocked()
	}
	if n := len(answers); n > 0 {
		if rv := retvalOf(answers[n-1]); rv != 0 {
			v.refused[Refusal{Msg: name, Retval: rv}]++
		}
	}
	if s.reset {
		// The request crashed the simulated VPP: no answer.
		err := fmt.Errorf("simulated VPP crashed (%s): %w", v.lastCrash, ErrConnectionReset)
		v.mu.Unlock()
		return err
	}
	out := make([]outMsg, 0, len(answers))
	for _, a := range answers {
		aid, ok := v.ids[msgKey(a)]
		if !ok {
			v.mu.Unlock()
			return fmt.Errorf("simulated VPP: no ID for answer %s", a.GetMessageName())
		}
		b, err := codec.DefaultCodec.EncodeMsg(a, aid)
		if err != nil {
			v.mu.Unlock()
			return fmt.Errorf("simulated VPP: encoding %s: %w", a.GetMessageName(), err)
		}
		binary.BigEndian.PutUint32(b[2:6], context)
		out = append(out, outMsg{id: aid, data: b})
	}
	busy := v.busy
	v.busy = 0
	if busy > 0 {
		if until := time.Now().Add(busy); until.After(v.busyUntil) {
			v.busyUntil = until
		}
	}
	v.mu.Unlock()
	if busy > 0 {
		// The main thread is busy: the answer, and every request after
		// it, waits.
		time.Sleep(busy)
	}
	var ack func(string, time.Time)
	var at time.Time
	if d.write {
		v.mu.Lock()
		at = time.Now()
		v.lastAck = at
		ack = v.onAck
		v.mu.Unlock()
	}

	s.push(out)
	if busy > 0 {
		v.mainThreadFree() // restart.go
	}
	if ack != nil {
		ack(name, at)
	}
	return nil
}

// newMsg allocates a fresh message of the same type as proto.
func newMsg(proto api.Message) api.Message {
	return reflect.New(reflect.TypeOf(proto).Elem()).Interface().(api.Message)
}

// withRetval sets the Retval field every VPP reply has.
func withRetval(m api.Message, rv api.VPPApiError) api.Message {
	if f := reflect.ValueOf(m).Elem().FieldByName("Retval"); f.IsValid() && f.CanSet() {
		f.SetInt(int64(rv))
	}
	return m
}

// retvalOf is the Retval of a reply; 0 for a message without one.
func retvalOf(m api.Message) api.VPPApiError {
	if f := reflect.ValueOf(m).Elem().FieldByName("Retval"); f.IsValid() && f.CanInt() {
		return api.VPPApiError(f.Int())
	}
	return 0
}

// Faults make the simulated VPP fail state-changing requests with a
// transient error. Dumps, control_ping and show_* requests never fail by
// injection: use Restart to break a connection.
type Faults struct {
	// Rate is the fraction (0 to 1) of eligible requests that fail.
	Rate float64
	// Seed seeds the deterministic choice of failing requests: the same
	// seed and the same sequence of requests fail the same requests.
	Seed uint64
	// Match narrows the eligible requests; nil means every state-changing
	// request. MessageNamed builds one from message names.
	Match func(req api.Message) bool
	// AfterApply applies a failing request before answering with the
	// error, as when VPP did the work but the answer is lost.
	AfterApply bool
	// Retval is the error answered; 0 means TransientRetval.
	Retval api.VPPApiError
}

// TransientRetval is the error injected faults answer by default: VPP's
// "response not ready", which callers treat as transient.
const TransientRetval = api.RESPONSE_NOT_READY

// MessageNamed matches requests by binary-API message name.
func MessageNamed(names ...string) func(api.Message) bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return func(m api.Message) bool { return set[m.GetMessageName()] }
}

// SetFaults replaces the fault injection; the zero Faults turns it off.
func (v *VPP) SetFaults(f Faults) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if f.Retval == 0 {
		f.Retval = TransientRetval
	}
	v.faults = f
	v.rng = rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
}

// fault decides whether this request fails by injection. Called with mu held.
func (v *VPP) fault(d *msgDef, req api.Message) (api.VPPApiError, bool) {
	f := v.faults
	if !d.write || f.Rate <= 0 || (f.Match != nil && !f.Match(req)) {
		return 0, false
	}
	if f.Rate < 1 && v.rng.Float64() >= f.Rate {
		return 0, false
	}
	return f.Retval, true
}

// Calls returns how many requests of one message name were received
// (including failed ones) since New or ResetCalls.
func (v *VPP) Calls(name string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.calls[name]
}

// CallCounts returns the number of requests received per message name.
func (v *VPP) CallCounts() map[string]int {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[string]int, len(v.calls))
	for k, n := range v.calls {
		out[k] = n
	}
	return out
}

// Writes returns the number of state-changing requests received.
func (v *VPP) Writes() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, d := range v.defs {
		if d.write {
			n += v.calls[d.req.GetMessageName()]
		}
	}
	return n
}

// Refusal is a request the simulated VPP answered with a non-zero
// retval: the message's name and the retval.
type Refusal struct {
	Msg    string
	Retval api.VPPApiError
}

// Refusals returns how many requests were answered with each non-zero
// retval since New or ResetCalls, injected faults included.
func (v *VPP) Refusals() map[Refusal]int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.refused)
}

// ResetCalls zeroes the call counters and the refusals.
func (v *VPP) ResetCalls() {
	v.mu.Lock()
	defer v.mu.Unlock()
	clear(v.calls)
	clear(v.refused)
}

// LastAck returns when the last state-changing request was answered
// (zero if none was).
func (v *VPP) LastAck() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.lastAck
}

// PID returns the simulated VPP's process ID, which control_ping reports
// and Restart changes.
func (v *VPP) PID() uint32 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.pid
}
