package vpp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/api"
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

// ErrUnsupportedRenderer marks a VPP release the configured renderer is
// known not to work on; it wraps ErrIncompatible.
var ErrUnsupportedRenderer = fmt.Errorf("%w: renderer unsupported on this VPP release", ErrIncompatible)

// Config configures the connection to VPP.
type Config struct {
	// Socket is VPP's binary-API socket; default DefaultSocket.
	Socket string
	// Adapter, when set, replaces the socket client: the simulated VPP
	// (plugins/vpp/sim) or any other govpp transport. It is reused across
	// reconnects.
	Adapter adapter.VppAPI
	// Record, when set, records every message of every connection
	// (record.go; a debugging aid).
	Record *Recorder
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
	// Simulated says the VPP behind the socket is the simulated one (served
	// on a socket): Status says so. An Adapter that is simulated says so
	// itself.
	Simulated bool
	// ExtraMessages are checked at connect besides the agent's own, e.g.
	// CNATMessages when the cnat renderer is used.
	ExtraMessages []api.Message
	// AllowUnsupported connects to a release the cnat renderer is known
	// not to work on (Release.cnatUnsupported) instead of refusing it.
	AllowUnsupported bool
	// OptionalPlugins are VPP plugins the agent can do without: each
	// one's messages are checked at every (re)connect apart from the
	// rest, and a VPP lacking them is connected all the same (HasPlugin,
	// Status.MissingPlugins, a warning per connection).
	OptionalPlugins []Plugin
	// ConnectTimeout bounds one connection attempt: the socket's connect
	// and the handshake (compatibility check, first ping, version); default
	// 10s.
	ConnectTimeout time.Duration
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

// Plugin is an optional VPP plugin (Config.OptionalPlugins).
type Plugin struct {
	// Name is the plugin's file, e.g. "acl_plugin.so".
	Name string
	// Messages are the plugin's messages the agent uses.
	Messages []api.Message
	// Without says what the agent does not do while VPP lacks it (logged).
	Without string
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
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 10 * time.Second
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
	// MissingPlugins, on Connected, name the optional plugins
	// (Config.OptionalPlugins) the connected VPP lacks.
	MissingPlugins []string
}

// Status is the connection's state, for REST.
type Status struct {
	Connected bool `json:"connected"`
	// Simulated is set when the transport is the simulated VPP, which
	// forwards no packets.
	Simulated bool   `json:"simulated"`
	Socket    string `json:"socket,omitempty"`
	Version   string `json:"version,omitempty"`
	// Release is the VPP release whose bindings the connection uses
	// ("25.02", "26.06"; docs/vpp-versions.md).
	Release string    `json:"release,omitempty"`
	PID     uint32    `json:"pid,omitempty"`
	Since   time.Time `json:"since,omitzero"`
	// Connects counts the connections established; Restarts the VPP
	// restarts seen.
	Connects  int    `json:"connects"`
	Restarts  int    `json:"restarts"`
	LastError string `json:"lastError,omitempty"`
	Note      string `json:"note,omitempty"`
	// MissingPlugins name the optional plugins the VPP of the last
	// connection lacks (Config.OptionalPlugins).
	MissingPlugins []string `json:"missingPlugins,omitempty"`
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
	lost    context.Context // cancelled when conn ends (nil while disconnected)
	gen     uint64          // counts connections established
	pid     uint32          // VPP's process ID on the current connection
	release *Release        // the bindings of the connected VPP's release (last connection's while away)
	status  Status
	lastErr error
	changed chan struct{} // closed and replaced on every change

	// busy tells a VPP whose main thread is busy from a dead one (the
	// health probes, reconnect.go): calls in flight and the time of VPP's
	// last answer to one.
	inflight atomic.Int64
	answered atomic.Int64 // UnixNano

	// spare is a pipeline's wire (wire.go) kept for the next one, of
	// connection wireGen; wireFailed notes that one could not be made
	// on connection wireGen (pipelines then use govpp streams).
	spare      *wire
	wireGen    uint64
	wireFailed bool

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
		simulated: cfg.Simulated || sim != nil && sim.Simulated(),
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
	st := c.status
	st.MissingPlugins = slices.Clone(st.MissingPlugins)
	return st
}

// HasPlugin tells whether the VPP of the last connection has the optional
// plugin named name (Config.OptionalPlugins): false before the first
// connection and when it lacks the plugin's messages. A plugin not listed
// in OptionalPlugins counts as present.
func (c *Conn) HasPlugin(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status.Connects > 0 && !slices.Contains(c.status.MissingPlugins, name)
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

// live returns the live connection and a context cancelled when it ends.
func (c *Conn) live() (*core.Connection, context.Context, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil, nil, ErrNotConnected
	}
	return c.conn, c.lost, nil
}

// whileLive bounds a call on a connection by lost, the connection's end, as
// well as by ctx: govpp fails no request in flight when its connection
// breaks, so a call made just before VPP went away would otherwise wait out
// CallTimeout (30 s) while the agent has long reconnected. done releases
// it; failed tells a call's error apart when the connection ended under it.
func whileLive(ctx, lost context.Context) (_ context.Context, done func(), failed func(error) error) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(lost, cancel)
	return ctx, func() { stop(); cancel() }, func(err error) error {
		if err != nil && lost.Err() != nil {
			return fmt.Errorf("%w (the connection ended during the call): %w", ErrNotConnected, err)
		}
		return err
	}
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
					c.log.Error("VPP is incompatible with this agent", "err", err)
					c.emit(Event{Kind: Incompatible, At: time.Now(), Err: err})
				}
			case repeated:
				c.log.Debug("connecting to VPP failed again", "err", err, "retryIn", backoff)
			default:
				c.log.Warn("connecting to VPP failed; retrying", "err", err, "retryIn", backoff)
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
		lost, markLost := context.WithCancel(context.Background())
		c.setState(func() {
			c.conn = conn
			c.lost = lost
			c.gen++
			c.pid = info.pid
			c.lastErr = nil
			c.status.Connected = true
			c.status.Version = info.version
			c.status.Release = info.release.Name
			c.release = info.release
			c.status.PID = info.pid
			c.status.Since = now
			c.status.Connects++
			c.status.LastError = ""
			c.status.MissingPlugins = info.missing
			if restarted {
				c.status.Restarts++
			}
		})
		c.log.Info("connected to VPP", "version", info.version, "release", info.release.Name, "pid", info.pid, "restarted", restarted, "simulated", c.simulated)
		c.warnMissing(info.lacks)
		c.emit(Event{Kind: Connected, At: now, Restarted: restarted, PID: info.pid, Version: info.version,
			MissingPlugins: slices.Clone(info.missing)})

		err = c.watch(ctx, conn, info.pid, info.sock)
		markLost()
		c.dropWire()
		c.setState(func() {
			c.conn = nil
			c.lost = nil
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
		c.log.Warn("lost the connection to VPP", "err", err)
		c.emit(Event{Kind: Disconnected, At: time.Now(), Err: err})
	}
}

// vppInfo describes a connected VPP.
type vppInfo struct {
	pid     uint32
	version string
	release *Release
	sock    os.FileInfo // the socket file connected to; nil with an Adapter
	missing []string    // optional plugins VPP lacks
	lacks   map[string][]string
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
		sc.SetConnectTimeout(c.cfg.ConnectTimeout)
		ad = sc
	}
	if c.cfg.Record != nil {
		ad = c.cfg.Record.Wrap(ad)
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

func (c *Conn) where() string {
	if c.cfg.Adapter != nil {
		return fmt.Sprintf("%T", c.cfg.Adapter)
	}
	return c.cfg.Socket
}

// handshake reads VPP's process ID and version, picks the bindings of
// its release (ReleaseFor: another release is refused, ErrUnsupportedVersion)
// and checks that VPP speaks every message the agent uses with that
// release's CRCs. control_ping and show_version are the same in every
// release (docs/vpp-versions.md), so they are asked first.
func (c *Conn) handshake(conn *core.Connection) (vppInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ConnectTimeout)
	defer cancel()
	pid, err := c.ping(ctx, conn)
	if err != nil {
		return vppInfo{}, err
	}
	ver := &vpe.ShowVersionReply{}
	if err := c.invokeOn(ctx, conn, &vpe.ShowVersion{}, ver); err != nil {
		return vppInfo{}, err
	}
	rel, err := ReleaseFor(ver.Version)
	if err != nil {
		return vppInfo{}, err
	}
	ch, err := conn.NewAPIChannel()
	if err != nil {
		return vppInfo{}, fmt.Errorf("opening an API channel: %w", err)
	}
	msgs := rel.messages(append(messages(), c.cfg.ExtraMessages...))
	err = ch.CheckCompatiblity(msgs...)
	var missing []string
	lacks := map[string][]string{} // by plugin: its messages VPP lacks
	for _, p := range c.cfg.OptionalPlugins {
		if err != nil {
			break
		}
		// Each plugin apart: one lacking any of its messages (or with
		// other CRCs) is left unused.
		var pe *api.CompatibilityError
		if err = ch.CheckCompatiblity(rel.messages(p.Messages)...); errors.As(err, &pe) {
			missing, err = append(missing, p.Name), nil
			lacks[p.Name] = pe.IncompatibleMessages
		}
	}
	ch.Close()
	var ce *api.CompatibilityError
	switch {
	case errors.As(err, &ce):
		return vppInfo{}, fmt.Errorf("%w: VPP %s lacks %d of the %d binary-API messages the agent uses with VPP %s's bindings (name_crc): %s",
			ErrIncompatible, ver.Version, len(ce.IncompatibleMessages), len(msgs), rel.Name, strings.Join(ce.IncompatibleMessages, ", "))
	case err != nil:
		return vppInfo{}, fmt.Errorf("checking VPP compatibility: %w", err)
	case rel.cnatUnsupported != "" && usesCNAT(msgs) && !c.cfg.AllowUnsupported:
		return vppInfo{}, fmt.Errorf("%w: the cnat renderer does not work on VPP %s: %s; use renderer nat44 on this release (docs/vpp-versions.md; vpp.allowUnsupported overrides this, for work on cnat only)",
			ErrUnsupportedRenderer, ver.Version, rel.cnatUnsupported)
	}
	return vppInfo{pid: pid, version: ver.Version, release: rel, missing: missing, lacks: lacks}, nil
}

// warnMissing logs, once per connection, each optional plugin VPP lacks
// (lacks: its messages VPP does not have, name_crc) and what the agent
// does not do without it.
func (c *Conn) warnMissing(lacks map[string][]string) {
	for _, p := range c.cfg.OptionalPlugins {
		if msgs, ok := lacks[p.Name]; ok {
			c.log.Warn("VPP lacks the optional plugin "+p.Name+" (load it: 'plugins { plugin "+p.Name+" { enable } }' in VPP's startup configuration, then restart VPP): "+p.Without,
				"plugin", p.Name, "messages", strings.Join(msgs, ", "))
		}
	}
}
