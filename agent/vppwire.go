package agent

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"contiv.dev/vpp/agent/simnode"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/vpp"
)

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
	if path := os.Getenv(vpp.RecordEnv); path != "" {
		// A debugging aid (docs/real-vpp.md): every binary-API message to
		// and from VPP, in the recorded corpus's format.
		rec, err := vpp.OpenRecorder(path)
		if err != nil {
			return err
		}
		vc.Record = rec
		a.log.Warn("recording every binary-API message", "file", path, "env", vpp.RecordEnv)
	}
	a.dp = dp
	a.mainIf = a.configuredMainInterface()
	if dp != nil {
		if err := dp.EnsureInterfaces(a.nodeInterfaces()); err != nil {
			return fmt.Errorf("%s: %w", dp.Name(), err)
		}
		vc.Simulated = true
		if vc.Adapter = dp.Adapter(); vc.Adapter != nil {
			a.log.Warn("NOT USING VPP'S SOCKET: running against the "+dp.Name(), "socket", a.cfg.VPP.Socket)
		} else {
			a.log.Warn("running against the "+dp.Name()+", served on the VPP socket", "socket", a.cfg.VPP.Socket)
		}
	}
	if a.cfg.Renderer == contivconf.RendererCNAT {
		vc.ExtraMessages = vpp.CNATMessages()
		vc.AllowUnsupported = a.cfg.VPP.AllowUnsupported
	} else {
		// loadBalancerSourceRanges: an input ACL on the main NIC, when
		// VPP loads the ACL plugin; without it they are reported as not
		// enforced and everything else is programmed.
		vc.OptionalPlugins = []vpp.Plugin{vpp.ACLPlugin()}
	}
	vc.ExtraMessages = append(vc.ExtraMessages, a.podMessages()...) // pods.go
	a.conn = vpp.New(vc)
	a.ifaces = vpp.NewInterfaces(a.conn, a.onInterfaces)
	return nil
}

// nodeInterfaces are the interfaces a node's VPP has besides pods', as a
// dataplane standing in for VPP creates them.
func (a *Agent) nodeInterfaces() []NodeInterface { return simnode.Interfaces(a.fixed()) }

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
			a.rd.VPPLost(why)
			a.warnRejectRelease()
			// Everything is reconciled against what VPP holds now; the
			// interface cache re-reads VPP's table on its own, and
			// features of interfaces VPP has not re-created yet wait for
			// them (pending). After a restart the renderers hear, on the
			// loop in that resync, that what they applied is gone.
			a.ctl.Push(&controller.ResyncEvent{Kind: controller.ResyncHealing, DataplaneRestarted: e.Restarted})
		}
	case vpp.Disconnected:
		a.rd.VPPLost("disconnected")
		a.log.Warn("VPP disconnected; keeping desired state until it is back", "err", e.Err)
	case vpp.Incompatible:
		a.log.Error("VPP is incompatible with this agent", "err", e.Err)
	}
}

// warnRejectRelease logs, on a reconnection, a VPP whose release no
// longer agrees with the renderers about reject routes outside table 0
// (read once, at the first connect): with a main VRF other than 0, a VPP
// 25.02 that replaced a newer one is sent no reject route (plugins/vpp
// refuses them, each route failing by name), and a newer one that
// replaced a 25.02 gets none. Restarting the agent makes them agree.
func (a *Agent) warnRejectRelease() {
	rel := a.conn.Release()
	if a.cfg.Routing.MainVRFID == 0 || rel.RejectInAnyTable() == a.rejectAnyTable {
		return
	}
	a.log.Error("VPP came back as another release: its verdict (reject) routes in the main VRF follow the release the agent started with until the agent restarts",
		"release", rel.Name, "mainVRFID", a.cfg.Routing.MainVRFID, "rejectRoutesBuilt", a.rejectAnyTable, "rejectAllowed", rel.RejectInAnyTable())
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
