package vpp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/vpe"
	"go.fd.io/govpp/core"
)

// DefaultSocket is where VPP serves its binary API.
const DefaultSocket = adapter.DefaultBinapiSocket

// ErrNotConnected is returned by calls made while there is no usable
// connection to VPP. It is transient: the controller's healing retries.
var ErrNotConnected = errors.New("not connected to VPP")

// ErrIncompatible marks a VPP that lacks binary-API messages the agent
// uses (or has them with other CRCs). Reconnecting does not help until VPP
// is replaced.
var ErrIncompatible = errors.New("VPP is incompatible with this agent")

// Config configures the connection to VPP.
type Config struct {
	// Socket is VPP's binary-API socket; default DefaultSocket.
	Socket string
	// Adapter, when set, replaces the socket client: the simulated VPP
	// (plugins/vpp/sim) or any other govpp transport. It is reused across
	// reconnects.
	Adapter adapter.VppAPI
	// Logger receives the connection's log lines; nil discards them.
	Logger *slog.Logger
	// HealthInterval is how often the connection is probed with a
	// control_ping; default 1s.
	HealthInterval time.Duration
	// HealthTimeout bounds one probe; three probes timing out in a row
	// count as a lost connection. Default 1s.
	HealthTimeout time.Duration
	// CallTimeout bounds every binary-API call (a dump as a whole); default 30s.
	CallTimeout time.Duration
	// RetryMin and RetryMax bound the exponential backoff between
	// connection attempts; defaults 100ms and 10s. While the socket exists
	// (or with an Adapter) the backoff never exceeds RetryPresent: VPP is
	// starting or restarting and answers within a second or so. Only while
	// the socket is missing does it grow to RetryMax, and the new socket
	// is noticed within SocketPoll anyway.
	RetryMin, RetryMax time.Duration
	// RetryPresent caps the backoff while the socket exists; default 1s.
	RetryPresent time.Duration
	// SocketPoll is how often the socket file is checked (os.Stat): a
	// socket replaced by a new VPP ends the connection at once, and a
	// socket appearing ends a backoff wait. Default 100ms.
	SocketPoll time.Duration
	// OnEvent, when set, gets every connection event, in order, on the
	// connection's goroutine; it must not block.
	OnEvent func(Event)
	// OnCall, when set, observes every binary-API call but the health
	// probes (metrics): the request's message name, how long it took and
	// its error. It runs on the caller's goroutine and must not block.
	OnCall func(msg string, took time.Duration, err error)
}

func (c *Config) setDefaults() {
	if c.Socket == "" {
		c.Socket = DefaultSocket
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.HealthInterval <= 0 {
		c.HealthInterval = time.Second
	}
	if c.HealthTimeout <= 0 {
		c.HealthTimeout = time.Second
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 30 * time.Second
	}
	if c.RetryMin <= 0 {
		c.RetryMin = 100 * time.Millisecond
	}
	if c.RetryMax < c.RetryMin {
		c.RetryMax = max(10*time.Second, c.RetryMin)
	}
	if c.RetryPresent <= 0 {
		c.RetryPresent = time.Second
	}
	c.RetryPresent = min(max(c.RetryPresent, c.RetryMin), c.RetryMax)
	if c.SocketPoll <= 0 {
		c.SocketPoll = 100 * time.Millisecond
	}
}

// EventKind says what happened to the connection.
type EventKind uint8

// The connection events.
const (
	// Connected: a compatible VPP is connected. Its configuration may be
	// anything (empty after a restart): the agent resyncs.
	Connected EventKind = iota + 1
	// Disconnected: the connection broke; calls fail until Connected.
	Disconnected
	// Incompatible: VPP lacks messages the agent uses; Err names them.
	// The connection is retried with backoff; the event repeats only when
	// the error changes.
	Incompatible
)

// String names the event kind.
func (k EventKind) String() string {
	switch k {
	case Connected:
		return "connected"
	case Disconnected:
		return "disconnected"
	case Incompatible:
		return "incompatible"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is a change of the connection to VPP.
type Event struct {
	Kind EventKind
	At   time.Time
	// Restarted is set on Connected when VPP's process ID differs from
	// the one of the previous connection: VPP restarted and lost its
	// configuration.
	Restarted bool
	// PID and Version describe the connected VPP.
	PID     uint32
	Version string
	// Err is why the connection broke or was refused.
	Err error
}

// Status is the connection's state, for REST.
type Status struct {
	Connected bool `json:"connected"`
	// Simulated is set when the transport is the simulated VPP, which
	// forwards no packets.
	Simulated bool      `json:"simulated"`
	Socket    string    `json:"socket,omitempty"`
	Version   string    `json:"version,omitempty"`
	PID       uint32    `json:"pid,omitempty"`
	Since     time.Time `json:"since,omitzero"`
	// Connects counts the connections established; Restarts the VPP
	// restarts seen.
	Connects  int    `json:"connects"`
	Restarts  int    `json:"restarts"`
	LastError string `json:"lastError,omitempty"`
	Note      string `json:"note,omitempty"`
}

// simulatedNote is the status note of a connection to the simulated VPP.
const simulatedNote = "SIMULATED VPP: configuration is kept in memory and nothing forwards packets"

// Conn is a connection to VPP that reconnects with backoff and tells
// its user when VPP (re)appears. Calls through it fail fast with
// ErrNotConnected while VPP is away.
type Conn struct {
	cfg       Config
	log       *slog.Logger
	simulated bool

	kick chan struct{} // a transport error: probe the connection now

	mu      sync.Mutex
	conn    *core.Connection
	gen     uint64 // counts connections established
	pid     uint32 // VPP's process ID on the current connection
	status  Status
	lastErr error
	changed chan struct{} // closed and replaced on every change

	startOnce sync.Once
	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

// New returns a connection that starts connecting on Start.
func New(cfg Config) *Conn {
	cfg.setDefaults()
	sim, _ := cfg.Adapter.(interface{ Simulated() bool })
	c := &Conn{
		cfg:       cfg,
		log:       cfg.Logger,
		simulated: sim != nil && sim.Simulated(),
		changed:   make(chan struct{}),
		kick:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	c.status = Status{Simulated: c.simulated}
	if c.simulated {
		c.status.Note = simulatedNote
	} else {
		c.status.Socket = cfg.Socket
	}
	return c
}

// Start starts connecting in the background; the connection lives until
// ctx is cancelled or Close is called.
func (c *Conn) Start(ctx context.Context) {
	c.startOnce.Do(func() {
		if c.simulated {
			c.log.Warn("using the SIMULATED VPP: NAT44 configuration is kept in memory and NOTHING FORWARDS PACKETS")
		}
		go c.run(ctx)
	})
}

// Close stops the connection and waits for its goroutine to end.
func (c *Conn) Close() {
	c.closeOnce.Do(func() { close(c.stop) })
	c.startOnce.Do(func() { close(c.done) }) // never started
	<-c.done
}

// Status returns the connection's state.
func (c *Conn) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// WaitConnected blocks until VPP is connected. It returns ctx's error, or
// at once the ErrIncompatible error of the last attempt.
func (c *Conn) WaitConnected(ctx context.Context) error {
	for {
		c.mu.Lock()
		conn, err, changed := c.conn, c.lastErr, c.changed
		c.mu.Unlock()
		switch {
		case conn != nil:
			return nil
		case errors.Is(err, ErrIncompatible):
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for VPP: %w", ctx.Err())
		case <-c.done:
			return fmt.Errorf("waiting for VPP: %w (connection closed)", ErrNotConnected)
		case <-changed:
		}
	}
}

// current returns the live connection and its generation.
func (c *Conn) current() (*core.Connection, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil, c.gen, ErrNotConnected
	}
	return c.conn, c.gen, nil
}

// session is a snapshot of the connection: the live govpp connection (nil
// while disconnected), its generation, VPP's process ID and a channel
// closed at the next change of any of them.
type session struct {
	conn    *core.Connection
	gen     uint64
	pid     uint32
	changed <-chan struct{}
}

func (c *Conn) session() session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return session{conn: c.conn, gen: c.gen, pid: c.pid, changed: c.changed}
}

// poke asks the watcher to probe the connection now: a call failed in the
// transport (a broken socket), not in VPP.
func (c *Conn) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// generation counts the connections established so far; caches of VPP
// state (interface indices) are stale once it changes.
func (c *Conn) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// setState applies a change under the lock and wakes waiters.
func (c *Conn) setState(f func()) {
	c.mu.Lock()
	f()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func (c *Conn) emit(e Event) {
	if c.cfg.OnEvent != nil {
		c.cfg.OnEvent(e)
	}
}

// run connects, watches and reconnects until stopped.
func (c *Conn) run(ctx context.Context) {
	defer close(c.done)
	var backoff time.Duration
	var lastPID uint32
	lastFailure := "" // logged once until it changes
	for {
		conn, info, err := c.dial()
		if err != nil {
			c.setState(func() { c.lastErr = err; c.status.LastError = err.Error() })
			// An incompatible VPP stays so until it is replaced, which a
			// new socket file tells: it gets the long backoff.
			sock, present := c.socketFile()
			backoff = retryDelay(backoff, present && !errors.Is(err, ErrIncompatible), c.cfg)
			repeated := err.Error() == lastFailure
			lastFailure = err.Error()
			switch {
			case errors.Is(err, ErrIncompatible):
				if !repeated {
					c.log.Error("VPP is incompatible with this agent", "error", err)
					c.emit(Event{Kind: Incompatible, At: time.Now(), Err: err})
				}
			case repeated:
				c.log.Debug("connecting to VPP failed again", "error", err, "retryIn", backoff)
			default:
				c.log.Warn("connecting to VPP failed; retrying", "error", err, "retryIn", backoff)
			}
			if !c.sleep(ctx, backoff, sock) {
				return
			}
			continue
		}
		lastFailure = ""
		backoff = 0
		restarted := lastPID != 0 && info.pid != lastPID
		lastPID = info.pid
		now := time.Now()
		c.setState(func() {
			c.conn = conn
			c.gen++
			c.pid = info.pid
			c.lastErr = nil
			c.status.Connected = true
			c.status.Version = info.version
			c.status.PID = info.pid
			c.status.Since = now
			c.status.Connects++
			c.status.LastError = ""
			if restarted {
				c.status.Restarts++
			}
		})
		c.log.Info("connected to VPP", "version", info.version, "pid", info.pid, "restarted", restarted, "simulated", c.simulated)
		c.emit(Event{Kind: Connected, At: now, Restarted: restarted, PID: info.pid, Version: info.version})

		err = c.watch(ctx, conn, info.pid, info.sock)
		c.setState(func() {
			c.conn = nil
			c.status.Connected = false
			if err != nil {
				c.lastErr = err
				c.status.LastError = err.Error()
			}
		})
		conn.Disconnect()
		if err == nil { // stopped
			return
		}
		c.log.Warn("lost the connection to VPP", "error", err)
		c.emit(Event{Kind: Disconnected, At: time.Now(), Err: err})
	}
}

// sleep waits d, or less when VPP's socket appears or is replaced (sock is
// what the socket path held when the wait began, nil if nothing); false
// means stop.
func (c *Conn) sleep(ctx context.Context, d time.Duration, sock os.FileInfo) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	var poll <-chan time.Time
	if c.cfg.Adapter == nil {
		p := time.NewTicker(c.cfg.SocketPoll)
		defer p.Stop()
		poll = p.C
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-c.stop:
			return false
		case <-t.C:
			return true
		case <-poll:
			if now, ok := c.socketFile(); ok && (sock == nil || !os.SameFile(now, sock)) {
				return true // a (new) socket: try it now
			}
		}
	}
}

// socketFile stats VPP's socket; with an Adapter it reports present.
func (c *Conn) socketFile() (os.FileInfo, bool) {
	if c.cfg.Adapter != nil {
		return nil, true
	}
	fi, err := os.Stat(c.cfg.Socket)
	if err != nil {
		return nil, false
	}
	return fi, true
}

// retryDelay is the backoff policy: the wait after a failed attempt that
// followed a wait of prev (0 after a success). It doubles from RetryMin,
// up to RetryPresent while the socket exists (VPP is there or starting),
// up to RetryMax while it does not.
func retryDelay(prev time.Duration, socketPresent bool, cfg Config) time.Duration {
	limit := cfg.RetryMax
	if socketPresent {
		limit = cfg.RetryPresent
	}
	d := cfg.RetryMin
	if prev > 0 {
		d = 2 * prev
	}
	return min(max(d, cfg.RetryMin), limit)
}

// vppInfo describes a connected VPP.
type vppInfo struct {
	pid     uint32
	version string
	sock    os.FileInfo // the socket file connected to; nil with an Adapter
}

// dial makes one connection attempt and checks compatibility.
func (c *Conn) dial() (*core.Connection, vppInfo, error) {
	var ad adapter.VppAPI = c.cfg.Adapter
	var sock os.FileInfo
	if ad == nil {
		var ok bool
		if sock, ok = c.socketFile(); !ok {
			return nil, vppInfo{}, fmt.Errorf("connecting to VPP at %s: %w", c.where(), errNoSocket)
		}
		sc := socketclient.NewVppClient(c.cfg.Socket)
		sc.SetClientName("contiv-agent")
		ad = sc
	}
	conn, err := core.Connect(&watchedAdapter{VppAPI: ad, failed: c.poke})
	if err != nil {
		return nil, vppInfo{}, fmt.Errorf("connecting to VPP at %s: %w", c.where(), err)
	}
	info, err := c.handshake(conn)
	if err != nil {
		conn.Disconnect()
		return nil, vppInfo{}, err
	}
	info.sock = sock
	return conn, info, nil
}

// errNoSocket is why a connection attempt failed without a socket file.
var errNoSocket = errors.New("the API socket does not exist (VPP not running)")

// watchedAdapter passes everything to the transport and reports a failed
// send (a broken socket) at once, so that a dead VPP is noticed at the
// next call rather than after probes time out.
type watchedAdapter struct {
	adapter.VppAPI
	failed func()
}

func (w *watchedAdapter) SendMsg(context uint32, data []byte) error {
	err := w.VppAPI.SendMsg(context, data)
	if err != nil {
		w.failed()
	}
	return err
}

func (c *Conn) where() string {
	if c.cfg.Adapter != nil {
		return fmt.Sprintf("%T", c.cfg.Adapter)
	}
	return c.cfg.Socket
}

// handshake checks that VPP speaks every message the agent uses and
// reads its process ID and version.
func (c *Conn) handshake(conn *core.Connection) (vppInfo, error) {
	ch, err := conn.NewAPIChannel()
	if err != nil {
		return vppInfo{}, fmt.Errorf("opening an API channel: %w", err)
	}
	err = ch.CheckCompatiblity(messages()...)
	ch.Close()
	var ce *api.CompatibilityError
	switch {
	case errors.As(err, &ce):
		return vppInfo{}, fmt.Errorf("%w: VPP lacks %d of the %d binary-API messages the agent uses (name_crc): %s",
			ErrIncompatible, len(ce.IncompatibleMessages), len(messages()), strings.Join(ce.IncompatibleMessages, ", "))
	case err != nil:
		return vppInfo{}, fmt.Errorf("checking VPP compatibility: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.CallTimeout)
	defer cancel()
	pid, err := c.ping(ctx, conn)
	if err != nil {
		return vppInfo{}, err
	}
	ver := &vpe.ShowVersionReply{}
	if err := c.invokeOn(ctx, conn, &vpe.ShowVersion{}, ver); err != nil {
		return vppInfo{}, err
	}
	return vppInfo{pid: pid, version: ver.Version}, nil
}

// probeTimeouts is how many health probes in a row may time out before
// the connection counts as lost.
const probeTimeouts = 3

// watch probes the connection until it breaks (error), VPP's process
// changes (error) or the connection is stopped (nil). Besides the
// periodic control_ping it probes at once when a send failed, and it
// watches the socket file (sock, nil with an Adapter): a socket replaced
// by another file means a new VPP; a vanished socket is probed.
func (c *Conn) watch(ctx context.Context, conn *core.Connection, pid uint32, sock os.FileInfo) error {
	t := time.NewTicker(c.cfg.HealthInterval)
	defer t.Stop()
	var poll <-chan time.Time
	if sock != nil {
		p := time.NewTicker(c.cfg.SocketPoll)
		defer p.Stop()
		poll = p.C
	}
	timeouts := 0
	gone := false // the socket file vanished and VPP was asked
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.stop:
			return nil
		case <-t.C:
		case <-c.kick:
		case <-poll:
			now, ok := c.socketFile()
			switch {
			case ok && os.SameFile(now, sock):
				gone = false
				continue
			case ok:
				return fmt.Errorf("VPP's API socket %s was replaced: VPP restarted", c.cfg.Socket)
			case gone:
				continue // asked already; the periodic probe goes on
			}
			// Gone: VPP is stopping, or someone removed the file; ask VPP.
			gone = true
		}
		pctx, cancel := context.WithTimeout(ctx, c.cfg.HealthTimeout)
		got, err := c.ping(pctx, conn)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded):
			timeouts++
			if timeouts >= probeTimeouts {
				return fmt.Errorf("VPP did not answer %d health probes in a row: %w", timeouts, err)
			}
		case err != nil:
			return fmt.Errorf("VPP health probe: %w", err)
		case got != pid:
			return fmt.Errorf("VPP restarted: process ID %d became %d", pid, got)
		default:
			timeouts = 0
		}
	}
}

// ping sends a control_ping and returns VPP's process ID.
func (c *Conn) ping(ctx context.Context, conn *core.Connection) (uint32, error) {
	r := &memclnt.ControlPingReply{}
	if err := call(ctx, conn, &memclnt.ControlPing{}, r); err != nil {
		return 0, err
	}
	return r.VpePID, nil
}

// invoke sends one request on the live connection and decodes its reply.
// A non-zero Retval comes back as an api.VPPApiError.
func (c *Conn) invoke(ctx context.Context, req, reply api.Message) error {
	conn, _, err := c.current()
	if err != nil {
		return fmt.Errorf("%s: %w", req.GetMessageName(), err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	return c.invokeOn(ctx, conn, req, reply)
}

func (c *Conn) invokeOn(ctx context.Context, conn *core.Connection, req, reply api.Message) (err error) {
	defer c.observe(req.GetMessageName(), time.Now(), &err)
	return call(ctx, conn, req, reply)
}

// call is invokeOn without observation (health probes).
func call(ctx context.Context, conn *core.Connection, req, reply api.Message) error {
	if err := conn.Invoke(ctx, req, reply); err != nil {
		return fmt.Errorf("%s: %w", req.GetMessageName(), err)
	}
	if rv := retval(reply); rv != 0 {
		return fmt.Errorf("%s: %w", req.GetMessageName(), api.VPPApiError(rv))
	}
	return nil
}

// observe reports a finished call to OnCall.
func (c *Conn) observe(msg string, start time.Time, err *error) {
	if c.cfg.OnCall != nil {
		c.cfg.OnCall(msg, time.Since(start), *err)
	}
}

// retval reads the Retval field every VPP reply has.
func retval(m api.Message) int32 {
	if f := reflect.Indirect(reflect.ValueOf(m)).FieldByName("Retval"); f.IsValid() && f.CanInt() {
		return int32(f.Int())
	}
	return 0
}

// stream sends requests on one stream and hands every answer to each
// until each says the stream is done.
func (c *Conn) stream(ctx context.Context, reqs []api.Message, each func(api.Message) (done bool, err error)) (err error) {
	name := reqs[0].GetMessageName()
	conn, _, err := c.current()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer c.observe(name, time.Now(), &err)
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	s, err := conn.NewStream(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer func() { _ = s.Close() }()
	for _, r := range reqs {
		if err := s.SendMsg(r); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	for {
		m, err := s.RecvMsg()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		done, err := each(m)
		if err != nil || done {
			return err
		}
	}
}

// dump runs a dump request and hands every details message to each.
func (c *Conn) dump(ctx context.Context, req api.Message, each func(api.Message) error) error {
	return c.stream(ctx, []api.Message{req, &memclnt.ControlPing{}}, func(m api.Message) (bool, error) {
		if _, end := m.(*memclnt.ControlPingReply); end {
			return true, nil
		}
		return false, each(m)
	})
}
