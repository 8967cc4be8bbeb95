package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/agent/holdwake"
	"contiv.dev/vpp/agent/nodepipeline"
	"contiv.dev/vpp/agent/ownaddrs"
	"contiv.dev/vpp/agent/prefetch"
	"contiv.dev/vpp/agent/readiness"
	"contiv.dev/vpp/agent/startgc"
	"contiv.dev/vpp/agent/syncmetrics"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcd"
	"contiv.dev/vpp/internal/etcd/embedded"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/noderegistry"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/ipam"
	"contiv.dev/vpp/plugins/nodesync"
	"contiv.dev/vpp/plugins/rest"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// relistJitter spreads the agents' re-listing of etcd after it comes back.
const relistJitter = 2 * time.Second

// simulatedMainNIC is the main NIC of the simulated VPP when the
// configuration names none.
const simulatedMainNIC = nodepipeline.SimulatedMainNIC

// Options are what newAgent needs besides the configuration.
type Options struct {
	Config contivconf.Config
	// LoadFile, when set, is Kubernetes YAML written into etcd before the
	// controller starts (demos and tests).
	LoadFile string
	// LogOutput receives the logs.
	LogOutput io.Writer
	// Dataplane, when set, replaces VPP's socket (Simulated: the simulated
	// VPP). The configuration's vpp.simulate is the caller's to apply
	// (cmd/contiv-agent does); the agent itself never falls back to it.
	Dataplane Dataplane
	// kube-proxy parity (agent/parity.go): ProxyHealthAddress is the listen
	// address of /healthz and /livez ("" DefaultProxyHealthAddress,
	// ProxyHealthOff none); HealthCheckAddress is where services'
	// health-check NodePorts are served (unset: the host end of the host
	// interconnect, where VPP's NAT44 mapping sends them).
	ProxyHealthAddress string
	HealthCheckAddress netip.Addr
}

// Agent is one contiv-agent: every part, wired.
type Agent struct {
	cfg      contivconf.Config
	log      *slog.Logger
	embedded *embedded.Member
	etcd     *clientv3.Client
	nodeID   uint32
	plan     *addrplan.Plan
	dp       Dataplane
	conn     *vpp.Conn
	ifaces   *vpp.Interfaces
	renderer *nat44.Renderer // with renderer: nat44
	prefetch *prefetch.NAT44 // its port to VPP (with renderer: nat44)
	cnat     *cnat.Renderer  // with renderer: cnat
	proc     *service.Processor
	nodes    *nodesync.Handler
	ipamH    *ipam.Handler
	ctl      *controller.Controller
	http     *rest.Server
	registry *prometheus.Registry
	latency  *syncmetrics.Latency
	rd       *readiness.Tracker
	hold     *holdwake.Waker // with renderer: nat44
	pods     *podWiring      // with cni.enabled (pods.go)
	// owner is the gate that keeps the agent off a VPP another agent
	// owns (owner.go).
	owner *ownership
	// health logs /healthz's verdicts as they change.
	health readiness.HealthWatch
	// mainIf is the main NIC's VPP name: configured, or (when not) the
	// interface holding the node IP, which only VPP can tell: the handlers
	// are then built once Run has asked it, and built says when.
	mainIf string
	built  atomic.Bool
	// rejectAnyTable is whether the renderers were built to make reject
	// routes outside table 0 (nodepipeline.Node.RejectAnyTable); set
	// before built.
	rejectAnyTable bool
	tags           tagParser
	par            parity // kube-proxy parity (agent/parity.go)
	// startedAt is when Run started (unix ns); everReady is set once the
	// agent was ready: controller.startupTimeout bounds the time between.
	startedAt atomic.Int64
	everReady atomic.Bool
	// releaseGC ends the start's hold of the collector (package startgc): at
	// the first full apply, or when Run ends.
	releaseGC func()
}

// New connects to etcd, claims the node ID and builds every part. On
// error it releases what it had started.
func New(ctx context.Context, o Options) (a *Agent, err error) {
	cfg := o.Config
	out := o.LogOutput
	if out == nil {
		out = os.Stderr
	}
	a = &Agent{cfg: cfg, log: slog.New(cfg.Log.NewHandler(out)).With("node", cfg.NodeName), registry: prometheus.NewRegistry(),
		rd: &readiness.Tracker{Grace: cfg.VPP.PendingInterfaceGrace.Std()}, tags: newTagParser(cfg.NAT44.PodInterfaceTag),
		par: parity{proxyAddr: cmp.Or(o.ProxyHealthAddress, cfg.HTTP.ProxyHealthAddress), hcAddr: o.HealthCheckAddress}}
	a.health.Log = a.log.With("part", "health")
	if !a.par.hcAddr.IsValid() {
		a.par.hcAddr = cfg.HTTP.ServiceHealthAddress
	}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// ctx lives as long as the etcd client; controller.startupTimeout
	// bounds what start asks of etcd (Run bounds the rest: startupWatch).
	if err := a.connectEtcd(ctx); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, cfg.Controller.StartupTimeout.Std())
	defer cancel()
	if o.LoadFile != "" {
		if err := a.load(sctx, o.LoadFile); err != nil {
			return nil, err
		}
	}
	if err := a.claimNodeID(sctx); err != nil {
		return nil, err
	}
	if err := a.buildVPP(o.Dataplane); err != nil {
		return nil, err
	}
	if a.mainIf != "" {
		if err := a.buildHandlers(); err != nil {
			return nil, err
		}
	}
	a.buildHTTP()
	return a, nil
}

func (a *Agent) connectEtcd(ctx context.Context) error {
	c := a.cfg.Etcd
	endpoints := c.Endpoints
	if c.UseEmbedded() {
		m, err := embedded.Start(embedded.Params{DataDir: c.Embedded.DataDir, ClientURL: c.Embedded.ClientURL})
		if err != nil {
			return err
		}
		a.embedded = m
		endpoints = []string{"http://" + m.Endpoint()}
		a.log.Info("embedded etcd started", "endpoint", m.Endpoint(), "dataDir", c.Embedded.DataDir)
	}
	cli, err := etcd.NewClient(ctx, etcd.ClientParams{
		Endpoints:   endpoints,
		DialTimeout: c.DialTimeout.Std(),
		CAFile:      c.TLS.CAFile, CertFile: c.TLS.CertFile, KeyFile: c.TLS.KeyFile,
		Username: c.Username, Password: c.Password,
	})
	if err != nil {
		return err
	}
	a.etcd = cli
	return nil
}

// load writes the objects of a Kubernetes YAML file into etcd.
func (a *Agent) load(ctx context.Context, path string) error {
	objs, err := kubestate.LoadYAMLFile(path)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	// As contivctl load does: only what differs is written, then the
	// layout and sync markers that make it a complete output.
	if _, err := kubestate.NewWriter(a.etcd, a.log).PutChanged(ctx, objs); err != nil {
		return fmt.Errorf("load %s: %w", path, err)
	}
	if _, err := kubestate.MarkSynced(ctx, a.etcd, "contiv-agent --load", 0); err != nil {
		return fmt.Errorf("load %s: %w", path, err)
	}
	a.log.Info("loaded cluster state into etcd", "file", path, "objects", len(objs))
	return nil
}

// claimNodeID claims this node's cluster-wide ID before anything else runs,
// so the address plan is known when the handlers are built.
func (a *Agent) claimNodeID(ctx context.Context) error {
	ic := nodepipeline.IPAMConfig(a.cfg)
	if err := ic.Validate(); err != nil {
		return fmt.Errorf("ipam: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, a.cfg.NodeSync.ClaimTimeout.Std())
	defer cancel()
	id, err := noderegistry.Claim(cctx, noderegistry.Params{
		Client:    a.etcd,
		Name:      a.cfg.NodeName,
		StateFile: a.cfg.NodeSync.StateFile,
		MaxID:     ic.MaxNodeID(),
		Logger:    a.log,
	})
	if err != nil {
		return fmt.Errorf("node ID: %w", err)
	}
	plan, err := addrplan.NewPlan(ic, id)
	if err != nil {
		return fmt.Errorf("ipam: %w", err)
	}
	a.nodeID, a.plan = id, plan
	a.log.Info("node ID claimed", "id", id, "podSubnet", plan.PodSubnet, "natLoopback", plan.NATLoopback)
	return nil
}

func (a *Agent) buildHandlers() error {
	cfg := a.cfg
	var err error
	a.nodes, err = nodesync.New(nodesync.Params{
		Client:       a.etcd,
		NodeName:     cfg.NodeName,
		StateFile:    cfg.NodeSync.StateFile,
		MaxID:        nodepipeline.IPAMConfig(cfg).MaxNodeID(),
		ClaimTimeout: cfg.NodeSync.ClaimTimeout.Std(),
		WriteTimeout: cfg.Etcd.RequestTimeout.Std(),
		ID:           a.nodeID,
		Logger:       a.log.With("part", "nodesync"),
	})
	if err != nil {
		return err
	}
	a.ipamH, err = ipam.New(ipam.Params{
		Config:    nodepipeline.IPAMConfig(cfg),
		NodeName:  cfg.NodeName,
		NodeIDs:   a.nodes,
		Client:    a.etcd,
		Publisher: ownaddrs.PublishTap{Inner: a.nodes, Addrs: &a.rd.Addrs},
		NodeIP:    a.nodeIP(),
		NodeIP6:   a.nodeIP6(),
		Logger:    a.log.With("part", "ipam"),
		// One etcd request of IPAM's background writer.
		WriteTimeout: cfg.Etcd.RequestTimeout.Std(),
	})
	if err != nil {
		return err
	}
	a.buildServiceHealth()
	p, err := a.buildPipeline()
	if err != nil {
		return err
	}
	a.owner = a.newOwnership(p.Renderer)
	if a.prefetch != nil {
		a.owner.marked = a.prefetch.MarkedOwner
	}
	ra := &readiness.Observer{Tracker: a.rd, Log: a.log.With("part", "nat44"), FullApplied: func() {
		if a.releaseGC != nil {
			a.releaseGC()
		}
	}}
	if a.renderer != nil {
		a.hold = holdwake.New(a.renderer.HoldUntil, func(ev controller.Event) { a.ctl.Push(ev) })
		ra.Hold = a.hold
	}
	if sc, ok := a.dp.(readiness.SessionCounter); ok {
		ra.Cuts = sc
		a.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "contiv_nat44_sessions_cut_total",
			Help: "NAT sessions (NAT44-ED's or cnat's) cut by the agent's configuration changes (simulated VPP only: it keeps sessions).",
		}, func() float64 { return float64(sc.SessionsCut()) }))
	}
	a.latency = syncmetrics.NewLatency()
	a.buildProxyParity()
	var beside []controller.Handler
	if a.dp != nil {
		beside = a.dp.Handlers(Beside{Node: cfg.NodeName, Tag: cfg.NAT44.InterfaceTag, Refresh: a.ifaces.Refresh, PodVRF: cfg.Routing.PodVRFID})
		if cfg.CNI.Enabled {
			beside = nil // the pod manager wires pods: no stand-in CNI (pods.go)
		}
	}
	podHs, err := a.podHandlers()
	if err != nil {
		return err
	}
	handlers := slices.Concat([]controller.Handler{a.nodes, a.ipamH}, beside, podHs, []controller.Handler{a.proc},
		[]controller.Handler{a.latency, a.par.metrics, a.par.proxy})
	a.ctl = controller.New(controller.Params{
		Logger:   a.log.With("part", "controller"),
		Client:   a.etcd,
		Handlers: handlers,
		Appliers: []controller.Applier{a.owner}, // the renderer, on a VPP this agent owns
		// Readiness, latency, kube-proxy's metrics and the proxy health
		// watch each apply.
		ApplyObservers:   append([]controller.ApplyObserver{ra, a.latency, a.par.metrics, a.par.proxy}, a.podObservers()...),
		MinBatchInterval: cfg.Controller.MinBatchInterval.Std(),
		HealingBackoff:   controller.Backoff{Initial: cfg.Controller.HealingBackoff.Initial.Std(), Max: cfg.Controller.HealingBackoff.Max.Std()},
		PeriodicResync:   cfg.Controller.ResyncInterval.Std(),
		RelistJitter:     relistJitter,
		BatchHold:        offWhenZero(cfg.Controller.BatchHold.Std()),
		HistoryCheck:     offWhenZero(cfg.Controller.HistoryCheck.Std()),
		ClusterSize:      func() int { return len(a.nodes.AllNodes()) },
		PodNode:          cfg.NodeName, // only this node's pods are watched and decoded
		// Never prune on what is not a complete reflector output (an empty
		// or restored etcd): keep the last state, not ready.
		RequireSynced: true,
	})
	a.nodes.SetEvents(a.ctl)
	a.wirePods()
	a.registry.MustRegister(a.ctl.Collector(), newStateCollector(a), newSourceRangesCollector(a))
	a.registry.MustRegister(a.parityCollectors()...)
	a.built.Store(true)
	return nil
}

// view serves src once the handlers are built, null before.
func (a *Agent) view(src func() any) rest.Source {
	return func() any {
		if !a.built.Load() {
			return nil
		}
		return src()
	}
}

// nat44Source serves a NAT44 view: under another renderer there is no
// NAT44 state, and the view answers 409 naming the renderer that runs.
func (a *Agent) nat44Source(src func() any) rest.Source {
	view := a.view(src)
	return func() any {
		if r := a.cfg.Renderer; r != "" && r != contivconf.RendererNAT44 {
			return &rest.Error{Status: http.StatusConflict,
				Message: fmt.Sprintf("no NAT44 state: the agent runs renderer %s (see /v1/%s)", r, r)}
		}
		return view()
	}
}

func (a *Agent) buildHTTP() {
	a.http = rest.New(rest.Params{
		Logger:   a.log.With("part", "http"),
		Addr:     a.cfg.HTTP.Address,
		Ready:    a.ready,
		NotReady: "not ready:",
		Why:      a.notReady,
		Healthy:  func(*http.Request) error { return a.healthz(time.Now()) },
		Views: map[string]rest.Source{
			"services":       a.view(func() any { return a.proc.Services() }),
			"skipped":        a.view(func() any { return a.proc.Skipped() }),
			"interfaces":     a.view(func() any { return a.proc.Interfaces() }),
			"nat44":          a.nat44Source(func() any { return nat44View(a.renderer) }),
			"nat44/mappings": a.nat44Source(func() any { return nat44MappingsView(a.renderer) }),
			"cnat":           a.view(func() any { return cnatView(a.cnat) }),
			"renderer":       a.view(func() any { return rendererView(a) }),
			"nodes":          a.view(func() any { return a.nodes.AllNodes() }),
			"ipam":           a.view(func() any { return ipamView(a) }),
			"pods":           a.view(func() any { return podsView(a) }),
			"latency":        a.view(func() any { return a.latency.View() }),
			"status":         func() any { return statusView(a) },
			"config":         func() any { return a.cfg.Redacted() },
		},
		Gatherer: a.registry,
	})
}

// Run runs the agent until ctx is cancelled and everything has stopped.
func (a *Agent) Run(ctx context.Context) error {
	a.startedAt.Store(time.Now().UnixNano())
	a.releaseGC = startgc.Hold(a.cfg.Controller.StartupHeapMiB)
	defer a.releaseGC()
	defer a.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.conn.Start(ctx)
	defer a.conn.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 3) // http, controller, cni
	// stop ends every goroutine and returns what failed.
	stop := func(more ...error) error {
		cancel()
		wg.Wait()
		if a.hold != nil {
			a.hold.Stop()
		}
		close(errs)
		for err := range errs {
			more = append(more, err)
		}
		a.logStopped()
		return errors.Join(more...)
	}
	// Probes are served from the start: the agent is alive (and not ready)
	// while it waits for VPP.
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := a.http.Run(ctx); err != nil {
			errs <- fmt.Errorf("http: %w", err)
			cancel()
		}
	}()
	// The first resync needs VPP's interface table to find pod interfaces.
	if err := a.conn.WaitConnected(ctx); err != nil {
		if ctx.Err() != nil {
			return stop() // stopped (or the HTTP server failed) before VPP came
		}
		return stop(err) // VPP is incompatible: say so and exit
	}
	if err := a.ifaces.Refresh(ctx); err != nil {
		a.log.Warn("reading VPP's interfaces", "err", err)
	}
	if !a.built.Load() {
		name, err := a.findMainInterface(ctx)
		if err != nil {
			return stop()
		}
		a.mainIf = name
		if err := a.buildHandlers(); err != nil {
			return stop(err)
		}
	}
	a.runParity(ctx, &wg)
	a.runPods(ctx, &wg, func(err error) { errs <- fmt.Errorf("cni: %w", err); cancel() })
	if a.prefetch != nil {
		// The renderer's first dump is read while etcd is listed.
		a.prefetch.Start(ctx, &wg)
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		a.ifaces.Run(ctx)
	}()
	go func() {
		defer wg.Done()
		if err := a.ctl.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			errs <- fmt.Errorf("controller: %w", err)
			cancel()
		}
	}()
	a.log.Info("agent running", "nodeID", a.nodeID, "http", a.cfg.HTTP.Address, "simulatedVPP", a.dp != nil)
	<-ctx.Done()
	return stop()
}

// close releases etcd; safe to call more than once.
func (a *Agent) close() {
	if a.etcd != nil {
		_ = a.etcd.Close()
		a.etcd = nil
	}
	if a.embedded != nil {
		a.embedded.Close()
		a.embedded = nil
	}
}

// Ready is true once the first full sync is applied, VPP is connected and
// holds what the agent programmed, this node's own VPP addresses (and so
// their NodePorts) are applied, and no interface waits too long.
func (a *Agent) Ready() bool { return a.ready() }

// Renderer is the NAT44 renderer (nil until the handlers are built: see Run).
func (a *Agent) Renderer() *nat44.Renderer {
	if !a.built.Load() {
		return nil
	}
	return a.renderer
}

// Processor is the service processor (nil until the handlers are built).
func (a *Agent) Processor() *service.Processor {
	if !a.built.Load() {
		return nil
	}
	return a.proc
}

// Controller is the event loop (nil until the handlers are built).
func (a *Agent) Controller() *controller.Controller {
	if !a.built.Load() {
		return nil
	}
	return a.ctl
}

// HTTPHandler serves the agent's REST views, metrics and probes.
func (a *Agent) HTTPHandler() http.Handler { return a.http.Handler() }

// NodeID is this node's cluster-wide ID.
func (a *Agent) NodeID() uint32 { return a.nodeID }

// offWhenZero maps a configuration's 0 ("off") onto the controller's
// negative duration: the controller takes 0 for its default.
func offWhenZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
