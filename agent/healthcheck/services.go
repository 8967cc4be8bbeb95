package healthcheck

import (
	"cmp"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"contiv.dev/vpp/plugins/service"
	sr "contiv.dev/vpp/servicerenderer"
)

// Services answers load balancers' health checks of LoadBalancer
// services under externalTrafficPolicy Local, as kube-proxy does: every
// node listens on each such service's healthCheckNodePort and answers 200
// while it has ready endpoints of the service (and the proxy is healthy),
// 503 otherwise, with a JSON body naming the service and its count of
// local ready endpoints (distinct IPs, across the service's ports;
// terminating ones do not count, so a draining node fails the check).
//
// On a VPP node the node IP is VPP's: the NAT44 renderer maps
// nodeIP:healthCheckNodePort to the host end of the host interconnect,
// where this server listens (nat44.Config.HealthCheckTarget).
//
// It is a servicerenderer.Renderer: the service processor hands it every
// service change; it keeps the health-check services and opens or closes
// listeners to match. Its methods never fail: a port that cannot be opened
// is logged and tried again on the next change or resync.
type Services struct {
	log  *slog.Logger
	addr netip.Addr
	// healthy tells whether the proxy itself is healthy (Proxy);
	// nil means always.
	healthy func() bool

	mu sync.Mutex
	// svcs are the services with a health-check port.
	svcs map[sr.ServiceID]hcService
	// servers are the open listeners, by port.
	servers map[uint16]*hcServer
	// failed holds the ports that could not be opened, with the error
	// logged last (logged again only when it changes).
	failed map[uint16]string
	closed bool
	wg     sync.WaitGroup
}

// hcService is what a health check answers about one service.
type hcService struct {
	port  uint16
	local int
}

// hcServer is one listener and its HTTP server.
type hcServer struct {
	srv *http.Server
	id  sr.ServiceID
}

var _ sr.Renderer = (*Services)(nil)

// NewServices returns a server that listens on addr; healthy, when
// not nil, tells whether the proxy is healthy.
func NewServices(log *slog.Logger, addr netip.Addr, healthy func() bool) *Services {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Services{
		log: log, addr: addr, healthy: healthy,
		svcs: map[sr.ServiceID]hcService{}, servers: map[uint16]*hcServer{}, failed: map[uint16]string{},
	}
}

// healthCheckOf is the health check of svc; false when it has none. The
// node proxy health pseudo-service has none here: the proxy health server
// listens on its port.
func healthCheckOf(svc *sr.ContivService) (hcService, bool) {
	if svc == nil || svc.HealthCheckNodePort == 0 || svc.ExternalPolicy != sr.PolicyLocal || svc.ID == service.ProxyHealthID {
		return hcService{}, false
	}
	var ips []netip.Addr
	for i := range svc.Ports {
		for _, b := range svc.Ports[i].LocalBackends {
			if b.Local && b.Ready && !slices.Contains(ips, b.IP.Addr()) {
				ips = append(ips, b.IP.Addr())
			}
		}
	}
	return hcService{port: svc.HealthCheckNodePort, local: len(ips)}, true
}

// AddService implements servicerenderer.Renderer.
func (h *Services) AddService(svc *sr.ContivService) error {
	h.set(svc.ID, svc)
	return nil
}

// UpdateService implements servicerenderer.Renderer.
func (h *Services) UpdateService(_, svc *sr.ContivService) error {
	h.set(svc.ID, svc)
	return nil
}

// DeleteService implements servicerenderer.Renderer.
func (h *Services) DeleteService(svc *sr.ContivService) error {
	h.set(svc.ID, nil)
	return nil
}

// UpdateInterface implements servicerenderer.Renderer: nothing to do.
func (h *Services) UpdateInterface(string, sr.InterfaceRole) error { return nil }

// UpdateLocalNode implements servicerenderer.Renderer: nothing to do.
func (h *Services) UpdateLocalNode(sr.LocalNode) error { return nil }

// Resync implements servicerenderer.Renderer.
func (h *Services) Resync(d *sr.ResyncData) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.svcs)
	for _, svc := range d.Services {
		if hc, ok := healthCheckOf(svc); ok {
			h.svcs[svc.ID] = hc
		}
	}
	h.syncLocked()
	return nil
}

func (h *Services) set(id sr.ServiceID, svc *sr.ContivService) {
	hc, ok := healthCheckOf(svc)
	h.mu.Lock()
	defer h.mu.Unlock()
	was, had := h.svcs[id]
	switch {
	case ok && had && was == hc:
		return
	case ok:
		h.svcs[id] = hc
	case !had:
		return
	default:
		delete(h.svcs, id)
	}
	if !had || !ok || was.port != hc.port || len(h.failed) > 0 {
		h.syncLocked()
	}
}

// owners maps each port to the service answering on it: the lowest ID
// when two services claim one port (the API server never allocates one
// port twice, but stored state may be anything).
func (h *Services) owners() map[uint16]sr.ServiceID {
	m := make(map[uint16]sr.ServiceID, len(h.svcs))
	for id, hc := range h.svcs {
		if o, ok := m[hc.port]; !ok || compareServiceIDs(id, o) < 0 {
			m[hc.port] = id
		}
	}
	return m
}

func compareServiceIDs(a, b sr.ServiceID) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// syncLocked opens and closes listeners to match the services.
func (h *Services) syncLocked() {
	if h.closed {
		return
	}
	want := h.owners()
	for port, s := range h.servers {
		if id, ok := want[port]; !ok || id != s.id {
			h.stop(port, s)
		}
	}
	for port := range h.failed {
		if _, ok := want[port]; !ok {
			delete(h.failed, port)
		}
	}
	for port, id := range want {
		if _, ok := h.servers[port]; ok {
			continue
		}
		addr := netip.AddrPortFrom(h.addr, port).String()
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if h.failed[port] != err.Error() {
				h.log.Warn("cannot serve a service's health check; trying again on the next change", "service", id.String(), "address", addr, "err", err)
				h.failed[port] = err.Error()
			}
			continue
		}
		delete(h.failed, port)
		s := &hcServer{id: id, srv: &http.Server{Handler: h.handler(port), ReadHeaderTimeout: 5 * time.Second}}
		h.servers[port] = s
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				h.log.Warn("health-check server stopped", "address", addr, "err", err)
			}
		}()
		h.log.Info("serving a service's health check", "service", id.String(), "address", addr)
	}
}

func (h *Services) stop(port uint16, s *hcServer) {
	_ = s.srv.Close()
	delete(h.servers, port)
}

// ServiceResponse is the body of a health-check answer (kube-proxy's shape).
type ServiceResponse struct {
	Service struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"service"`
	LocalEndpoints      int  `json:"localEndpoints"`
	ServiceProxyHealthy bool `json:"serviceProxyHealthy"`
}

// handler answers the health check of the service on port.
func (h *Services) handler(port uint16) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h.mu.Lock()
		var body ServiceResponse
		id, ok := h.owners()[port]
		if ok {
			body.Service.Namespace, body.Service.Name = id.Namespace, id.Name
			body.LocalEndpoints = h.svcs[id].local
		}
		h.mu.Unlock()
		if !ok {
			http.Error(w, "no service on this port", http.StatusNotFound)
			return
		}
		body.ServiceProxyHealthy = h.healthy == nil || h.healthy()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Load-Balancing-Endpoint-Weight", strconv.Itoa(body.LocalEndpoints))
		code := http.StatusOK
		if body.LocalEndpoints == 0 || !body.ServiceProxyHealthy {
			code = http.StatusServiceUnavailable
		}
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(body)
	})
}

// Ports returns the ports served now, sorted.
func (h *Services) Ports() []uint16 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]uint16, 0, len(h.servers))
	for p := range h.servers {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Close stops every listener and waits for the servers to end; later
// changes open none.
func (h *Services) Close() {
	h.mu.Lock()
	h.closed = true
	for port, s := range h.servers {
		h.stop(port, s)
	}
	h.mu.Unlock()
	h.wg.Wait()
}
