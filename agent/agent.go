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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/ipam"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/nodesync"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/etcd"
	ipamplugin "contiv.dev/vpp/plugins/ipam"
	nsplugin "contiv.dev/vpp/plugins/nodesync"
	"contiv.dev/vpp/plugins/rest"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/plugins/vpp"
	sr "contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// relistJitter spreads the agents' re-listing of etcd after it comes back.
const relistJitter = 2 * time.Second

// simulatedMainNIC is the main NIC of the simulated VPP when the
// configuration names none.
const simulatedMainNIC = "GigabitEthernet0/8/0"

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
	embedded *etcd.Embedded
	etcd     *clientv3.Client
	nodeID   uint32
	plan     *ipam.Plan
	dp       Dataplane
	conn     *vpp.Conn
	ifaces   *vpp.Interfaces
	renderer *nat44.Renderer // with renderer: nat44
	cnat     *cnat.Renderer  // with renderer: cnat
	proc     *service.Processor
	nodes    *nsplugin.Handler
	ipamH    *ipamplugin.Handler
	ctl      *controller.Controller
	http     *rest.Server
	registry *prometheus.Registry
	latency  *latencyTracker
	rd       *readiness
	// mainIf is the main NIC's VPP name: configured, or (when not) the
	// interface holding the node IP, which only VPP can tell: the handlers
	// are then built once Run has asked it, and built says when.
	mainIf string
	built  atomic.Bool
	tags   tagParser
	par    parity // kube-proxy parity (agent/parity.go)
	// startedAt is when Run started (unix ns); everReady is set once the
	// agent was ready: controller.startupTimeout bounds the time between.
	startedAt atomic.Int64
	everReady atomic.Bool
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
		rd: &readiness{grace: cfg.VPP.PendingInterfaceGrace.Std()}, tags: newTagParser(cfg.NAT44.PodInterfaceTag),
		par: parity{proxyAddr: cmp.Or(o.ProxyHealthAddress, cfg.HTTP.ProxyHealthAddress), hcAddr: o.HealthCheckAddress}}
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
		m, err := etcd.StartEmbedded(etcd.EmbeddedParams{DataDir: c.Embedded.DataDir, ClientURL: c.Embedded.ClientURL})
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
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer f.Close()
	objs, err := kubestate.LoadYAML(f)
	if err != nil {
		return fmt.Errorf("load %s: %w", path, err)
	}
	ops := make([]kubestate.Op, len(objs))
	for i, o := range objs {
		ops[i] = kubestate.PutOp(o)
	}
	if err := kubestate.NewWriter(a.etcd, a.log).Apply(ctx, ops); err != nil {
		return fmt.Errorf("load %s: %w", path, err)
	}
	a.log.Info("loaded cluster state into etcd", "file", path, "objects", len(objs))
	return nil
}

// ipamConfig maps the configuration onto IPAM's.
func ipamConfig(cfg contivconf.Config) ipam.Config {
	c := cfg.IPAM
	ic := ipam.Config{
		PodSubnetCIDR:                 c.PodSubnetCIDR,
		PodSubnetOneNodePrefixLen:     c.PodSubnetNodePrefixLength,
		VPPHostSubnetCIDR:             c.VPPHostSubnetCIDR,
		VPPHostSubnetOneNodePrefixLen: c.VPPHostSubnetNodePrefixLength,
		NodeInterconnectCIDR:          c.NodeInterconnectCIDR,
		ServiceCIDR:                   c.ServiceCIDR,
	}
	if cfg.Routing.NodeToNodeTransport == contivconf.TransportVXLAN {
		ic.VXLANCIDR = c.VXLANCIDR
	}
	if mi := cfg.ForNode(cfg.NodeName).MainInterface; mi.IPCIDR.IsValid() || mi.UseDHCP {
		ic.NodeInterconnectCIDR = netip.Prefix{}
	}
	return ic
}

// claimNodeID claims this node's cluster-wide ID before anything else runs,
// so the address plan is known when the handlers are built.
func (a *Agent) claimNodeID(ctx context.Context) error {
	ic := ipamConfig(a.cfg)
	if err := ic.Validate(); err != nil {
		return fmt.Errorf("ipam: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, a.cfg.NodeSync.ClaimTimeout.Std())
	defer cancel()
	id, err := nodesync.Claim(cctx, nodesync.Params{
		Client:    a.etcd,
		Name:      a.cfg.NodeName,
		StateFile: a.cfg.NodeSync.StateFile,
		MaxID:     ic.MaxNodeID(),
		Logger:    a.log,
	})
	if err != nil {
		return fmt.Errorf("node ID: %w", err)
	}
	plan, err := ipam.NewPlan(ic, id)
	if err != nil {
		return fmt.Errorf("ipam: %w", err)
	}
	a.nodeID, a.plan = id, plan
	a.log.Info("node ID claimed", "id", id, "podSubnet", plan.PodSubnet, "natLoopback", plan.NATLoopback)
	return nil
}

// mainInterface is the name of this node's main NIC ("" until known).
func (a *Agent) mainInterface() string { return a.mainIf }

// configuredMainInterface is the main NIC's name as far as configuration
// tells: "" leaves it to VPP (the interface holding the node IP).
func (a *Agent) configuredMainInterface() string {
	return a.cfg.ForNode(a.cfg.NodeName).MainInterface.Name
}

// findMainInterface asks VPP which interface holds the node IP, once a
// second until one does (VPP's startup configuration addresses its NICs a
// few seconds after its API answers).
func (a *Agent) findMainInterface(ctx context.Context) (string, error) {
	ip := a.nodeIP().Addr()
	for {
		if err := a.ifaces.Refresh(ctx); err == nil {
			i, ok, err := a.ifaces.HoldingAddress(ctx, ip)
			switch {
			case err != nil:
				a.log.Warn("looking for the VPP interface holding the node IP", "ip", ip, "err", err)
			case ok:
				a.log.Info("main interface not configured: using the VPP interface holding the node IP", "interface", i.Name, "ip", ip)
				return i.Name, nil
			default:
				a.log.Warn("no VPP interface holds the node IP yet; waiting (set nodeConfig.mainInterface.name to name it)", "ip", ip)
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// nodeIP is this node's VPP address: configured, or derived by IPAM.
func (a *Agent) nodeIP() netip.Prefix {
	if p := a.cfg.ForNode(a.cfg.NodeName).MainInterface.IPCIDR; p.IsValid() {
		return p
	}
	return a.plan.NodeInterconnectIP
}

func (a *Agent) overlay() bool {
	return a.cfg.Routing.NodeToNodeTransport == contivconf.TransportVXLAN
}

// buildVPP sets up the VPP connection: VPP's socket, or the dataplane
// given in its place.
func (a *Agent) buildVPP(dp Dataplane) error {
	vc := vpp.Config{
		Socket:   a.cfg.VPP.Socket,
		Logger:   a.log.With("part", "vpp"),
		RetryMin: a.cfg.VPP.ReconnectBackoff.Initial.Std(),
		RetryMax: a.cfg.VPP.ReconnectBackoff.Max.Std(),
		// One connection attempt, socket and handshake.
		ConnectTimeout: a.cfg.VPP.ConnectTimeout.Std(),
		OnEvent:        a.onVPPEvent,
		OnCall:         a.observeCall(),
	}
	a.dp = dp
	a.mainIf = a.configuredMainInterface()
	if dp != nil {
		if err := dp.EnsureInterfaces(a.nodeInterfaces()); err != nil {
			return fmt.Errorf("%s: %w", dp.Name(), err)
		}
		vc.Adapter = dp.Adapter()
		a.log.Warn("NOT USING VPP'S SOCKET: running against the "+dp.Name(), "socket", a.cfg.VPP.Socket)
	}
	if a.cfg.Renderer == contivconf.RendererCNAT {
		vc.ExtraMessages = vpp.CNATMessages()
	}
	a.conn = vpp.New(vc)
	a.ifaces = vpp.NewInterfaces(a.conn, a.onInterfaces)
	return nil
}

// nodeInterfaces are the interfaces a node's VPP has besides pods', as a
// dataplane standing in for VPP creates them: the main NIC (named
// simulatedMainNIC unless configured) holds the node IP.
func (a *Agent) nodeInterfaces() []NodeInterface {
	nc := a.cfg.ForNode(a.cfg.NodeName)
	main := cmp.Or(a.configuredMainInterface(), simulatedMainNIC)
	mainVRF, podVRF := a.cfg.Routing.MainVRFID, a.cfg.Routing.PodVRFID
	ifs := []NodeInterface{{Name: main, Address: a.nodeIP(), VRF: mainVRF}, {Name: nc.HostInterconnectInterface, VRF: mainVRF}}
	if a.overlay() {
		ifs = append(ifs, NodeInterface{Name: nc.VXLANBVIInterface, VRF: podVRF})
	}
	for _, o := range nc.OtherInterfaces {
		ifs = append(ifs, NodeInterface{Name: o.Name, Address: o.IPCIDR, VRF: mainVRF})
	}
	return ifs
}

// onVPPEvent reacts to the VPP connection: every (re)connection after the
// first makes the controller reconcile everything against what VPP holds.
func (a *Agent) onVPPEvent(e vpp.Event) {
	switch e.Kind {
	case vpp.Connected:
		a.log.Info("VPP connected", "version", e.Version, "pid", e.PID, "restarted", e.Restarted)
		if a.built.Load() && a.conn.Status().Connects > 1 {
			why := "reconnected"
			if e.Restarted {
				why = "restarted"
			}
			a.rd.vppLost(why)
			if a.cnat != nil && e.Restarted {
				a.cnat.VPPRestarted() // its node bookkeeping is gone with VPP's state
			}
			// Everything is reconciled against what VPP holds now; the
			// interface cache re-reads VPP's table on its own, and
			// features of interfaces VPP has not re-created yet wait for
			// them (pending).
			a.ctl.Push(&controller.ResyncEvent{Kind: controller.ResyncHealing})
		}
	case vpp.Disconnected:
		a.rd.vppLost("disconnected")
		a.log.Warn("VPP disconnected; keeping desired state until it is back", "err", e.Err)
	case vpp.Incompatible:
		a.log.Error("VPP is incompatible with this agent", "err", e.Err)
	}
}

func (a *Agent) observeCall() func(string, time.Duration, error) {
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "contiv_vpp_calls_total", Help: "Binary-API calls to VPP by message and result.",
	}, []string{"msg", "result"})
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "contiv_vpp_call_duration_seconds", Help: "Duration of binary-API calls to VPP.",
		Buckets: prometheus.ExponentialBuckets(20e-6, 4, 10),
	}, []string{"msg"})
	a.registry.MustRegister(calls, dur)
	return func(msg string, took time.Duration, err error) {
		result := "ok"
		if err != nil {
			result = "error"
		}
		calls.WithLabelValues(msg, result).Inc()
		dur.WithLabelValues(msg).Observe(took.Seconds())
	}
}

// snat chooses the default interface whose traffic leaving the cluster is
// source-NATed: the NIC whose subnet holds the default gateway. Without an
// overlay the main NIC also carries node-to-node traffic, so SNAT on it is
// off (it could not tell cluster traffic from external).
func (a *Agent) snat() nat44.SNAT {
	nc := a.cfg.ForNode(a.cfg.NodeName)
	if !nc.NATExternalTraffic || !nc.Gateway.IsValid() {
		return nat44.SNAT{}
	}
	if ip := a.nodeIP(); ip.IsValid() && ip.Contains(nc.Gateway) {
		if !a.overlay() {
			return nat44.SNAT{}
		}
		return nat44.SNAT{Interface: a.mainInterface(), IP: ip.Addr()}
	}
	for _, o := range nc.OtherInterfaces {
		if o.IPCIDR.IsValid() && o.IPCIDR.Contains(nc.Gateway) {
			return nat44.SNAT{Interface: o.Name, IP: o.IPCIDR.Addr()}
		}
	}
	return nat44.SNAT{}
}

func seconds(d contivconf.Duration) uint32 { return uint32(d.Std() / time.Second) }

// nat44Config is the NAT44 renderer's configuration of this node.
func (a *Agent) nat44Config() nat44.Config {
	cfg := a.cfg
	nc := nat44.DefaultConfig()
	nc.MainVRF, nc.PodVRF = cfg.Routing.MainVRFID, cfg.Routing.PodVRFID
	nc.Overlay = a.overlay()
	nc.LocalEndpointWeight = cfg.NAT44.ServiceLocalEndpointWeight
	nc.NATLoopback = a.plan.NATLoopback
	nc.PodSubnet = a.plan.PodSubnet
	nc.SNAT = a.snat()
	nc.ServiceCIDR = a.plan.ServiceCIDR
	nc.ExternalIPTenantVRF = cfg.NAT44.ExternalIPTenantVRF
	nc.SessionLimit = cfg.NAT44.SessionLimit
	nc.HealthCheckTarget = a.healthCheckTarget() // parity wiring
	t := cfg.NAT44.Timeouts
	nc.Timeouts = nat44.Timeouts{UDP: seconds(t.UDP), TCPEstablished: seconds(t.TCPEstablished), TCPTransitory: seconds(t.TCPTransitory), ICMP: seconds(t.ICMP)}
	return nc
}

// serviceConfig is the service processor's configuration of this node.
func (a *Agent) serviceConfig() service.Config {
	cfg := a.cfg
	other := make([]string, 0, len(cfg.ForNode(cfg.NodeName).OtherInterfaces))
	for _, o := range cfg.ForNode(cfg.NodeName).OtherInterfaces {
		other = append(other, o.Name)
	}
	sc := service.Config{
		MainInterface:    a.mainInterface(),
		OtherInterfaces:  other,
		HostInterconnect: cfg.ForNode(cfg.NodeName).HostInterconnectInterface,
		PodInterfaceTag:  cfg.NAT44.InterfaceTag,
	}
	if a.overlay() {
		sc.VXLANBVI = cfg.ForNode(cfg.NodeName).VXLANBVIInterface
	}
	return sc
}

func (a *Agent) buildHandlers() error {
	cfg := a.cfg
	r, err := a.buildRenderer()
	if err != nil {
		return err
	}

	a.nodes, err = nsplugin.New(nsplugin.Params{
		Client:       a.etcd,
		NodeName:     cfg.NodeName,
		StateFile:    cfg.NodeSync.StateFile,
		MaxID:        ipamConfig(cfg).MaxNodeID(),
		ClaimTimeout: cfg.NodeSync.ClaimTimeout.Std(),
		WriteTimeout: cfg.Etcd.RequestTimeout.Std(),
		ID:           a.nodeID,
		Logger:       a.log.With("part", "nodesync"),
	})
	if err != nil {
		return err
	}
	a.ipamH, err = ipamplugin.New(ipamplugin.Params{
		Config:    ipamConfig(cfg),
		NodeName:  cfg.NodeName,
		NodeIDs:   a.nodes,
		Client:    a.etcd,
		Publisher: a.nodes,
		NodeIP:    a.nodeIP(),
		Logger:    a.log.With("part", "ipam"),
		// One etcd request of IPAM's background writer.
		WriteTimeout: cfg.Etcd.RequestTimeout.Std(),
	})
	if err != nil {
		return err
	}
	a.buildServiceHealth() // parity wiring
	a.proc, err = service.New(service.Params{
		Logger:     a.log.With("part", "service"),
		Renderers:  []sr.Renderer{r, a.par.hc}, // parity wiring: a.par.hc
		Node:       thisNode{a.nodes},
		Subnets:    a.plan,
		Interfaces: a.ifaces,
		Config:     a.serviceConfig(),
	})
	if err != nil {
		return err
	}
	ra := readyApplier{inner: r, r: a.rd, log: a.log.With("part", "nat44")}
	if sc, ok := a.dp.(sessionCounter); ok {
		ra.cuts = sc
		a.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "contiv_nat44_sessions_cut_total",
			Help: "NAT sessions cut by the agent's configuration changes (simulated VPP only: it keeps sessions).",
		}, func() float64 { return float64(sc.SessionsCut()) }))
	}
	a.latency = newLatencyTracker(ra)
	a.par.proxy = newProxyHealth(a.latency, 0, a.vppConnected)                         // parity wiring
	handlers := []controller.Handler{a.nodes, a.ipamH, a.proc, a.latency, a.par.proxy} // parity wiring: a.par.proxy
	if a.dp != nil {
		beside := a.dp.Handlers(Beside{Node: cfg.NodeName, Tag: cfg.NAT44.InterfaceTag, Refresh: a.ifaces.Refresh, PodVRF: cfg.Routing.PodVRFID})
		handlers = slices.Concat([]controller.Handler{a.nodes, a.ipamH}, beside, []controller.Handler{a.proc, a.latency, a.par.proxy}) // parity wiring: a.par.proxy
	}
	a.ctl = controller.New(controller.Params{
		Logger:           a.log.With("part", "controller"),
		Client:           a.etcd,
		Handlers:         handlers,
		Appliers:         []controller.Applier{a.par.proxy}, // parity wiring: wraps a.latency
		MinBatchInterval: cfg.Controller.MinBatchInterval.Std(),
		HealingBackoff:   controller.Backoff{Initial: cfg.Controller.HealingBackoff.Initial.Std(), Max: cfg.Controller.HealingBackoff.Max.Std()},
		PeriodicResync:   cfg.Controller.ResyncInterval.Std(),
		RelistJitter:     relistJitter,
		ClusterSize:      func() int { return len(a.nodes.AllNodes()) },
	})
	a.nodes.SetEvents(a.ctl)
	a.registry.MustRegister(a.ctl.Collector(), a.latency.hist, newStateCollector(a), newSourceRangesCollector(a)) // parity wiring: source ranges
	a.built.Store(true)
	return nil
}

// ready is true once the first full sync is applied, VPP is connected and
// holds what the agent programmed, and no interface waits too long.
func (a *Agent) ready() bool { return len(a.notReady()) == 0 }

// startupHealth fails /healthz once the agent has not been ready within
// controller.startupTimeout of its start, so that its DaemonSet restarts
// it (the log says why); once ready, the start is over for good.
func (a *Agent) startupHealth(now time.Time) error {
	if a.everReady.Load() {
		return nil
	}
	if a.ready() {
		a.everReady.Store(true)
		return nil
	}
	started := a.startedAt.Load()
	limit := a.cfg.Controller.StartupTimeout.Std()
	if started == 0 || now.Sub(time.Unix(0, started)) <= limit {
		return nil
	}
	return fmt.Errorf("not ready %s after start (controller.startupTimeout): %s", limit, strings.Join(a.notReady(), "; "))
}

// notReady says why the agent is not ready; empty when it is.
func (a *Agent) notReady() []string {
	if !a.built.Load() {
		return []string{fmt.Sprintf("waiting for VPP to show which interface holds the node IP %s (nodeConfig.mainInterface.name is not set)", a.nodeIP().Addr())}
	}
	return a.rd.reasons(a.ctl.Ready(), a.conn.Status().Connected, time.Now())
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

func (a *Agent) buildHTTP() {
	a.http = rest.New(rest.Params{
		Logger:   a.log.With("part", "http"),
		Addr:     a.cfg.HTTP.Address,
		Ready:    a.ready,
		NotReady: "not ready:",
		Why:      a.notReady,
		Healthy:  func(*http.Request) error { return a.startupHealth(time.Now()) },
		Views: map[string]rest.Source{
			"services":       a.view(func() any { return a.proc.Services() }),
			"skipped":        a.view(func() any { return a.proc.Skipped() }),
			"interfaces":     a.view(func() any { return a.proc.Interfaces() }),
			"nat44":          a.view(func() any { return nat44View(a.renderer) }),
			"nat44/mappings": a.view(func() any { return nat44MappingsView(a.renderer) }),
			"cnat":           a.view(func() any { return cnatView(a.cnat) }),
			"nodes":          a.view(func() any { return a.nodes.AllNodes() }),
			"ipam":           a.view(func() any { return ipamView(a) }),
			"latency":        a.view(func() any { return a.latency.view() }), // parity wiring
			"status":         func() any { return statusView(a) },
			"config":         func() any { return a.cfg.Redacted() },
		},
		Gatherer: a.registry,
	})
}

// Run runs the agent until ctx is cancelled and everything has stopped.
func (a *Agent) Run(ctx context.Context) error {
	a.startedAt.Store(time.Now().UnixNano())
	defer a.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.conn.Start(ctx)
	defer a.conn.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	// stop ends every goroutine and returns what failed.
	stop := func(more ...error) error {
		cancel()
		wg.Wait()
		close(errs)
		for err := range errs {
			more = append(more, err)
		}
		a.log.Info("agent stopped")
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
	a.runParity(ctx, &wg) // parity wiring
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
// holds what the agent programmed, and no interface waits too long.
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
