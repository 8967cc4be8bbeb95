package agent

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"

	"go.fd.io/govpp/api"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/pods"
	"contiv.dev/vpp/plugins/pods/cniapi"
	"contiv.dev/vpp/plugins/vpp"
)

// podWiring is the pod manager and its CNI socket (cni.enabled).
type podWiring struct {
	m      *pods.Manager
	srv    *pods.Server
	kind   vpp.PodLinkKind
	reason string // why this kind (auto: /dev/vhost-net or not)
}

// podMessages are the messages the pod manager needs VPP to speak, none
// when it is off.
func (a *Agent) podMessages() []api.Message {
	if !a.cfg.CNI.Enabled {
		return nil
	}
	kind, _, err := pods.ResolveKind(a.cfg.CNI.PodInterface)
	if err != nil {
		return vpp.PodMessages() // podHandlers refuses the configuration
	}
	return vpp.PodMessagesFor(kind)
}

// podHandlers builds the pod manager (cni.enabled): a handler that runs
// before the service processor, so that a pod's interface exists when the
// processor hears of it, and after a VPP restart every pod is back before
// services are reprogrammed.
func (a *Agent) podHandlers() ([]controller.Handler, error) {
	c := a.cfg.CNI
	if !c.Enabled {
		return nil, nil
	}
	kind, why, err := pods.ResolveKind(c.PodInterface)
	if err != nil {
		return nil, fmt.Errorf("cni.podInterface: %w", err)
	}
	log := a.log.With("part", "pods")
	m, err := pods.New(pods.Params{
		VPP:       vpp.NewPods(a.conn, log),
		Allocator: a.ipamH.Allocator,
		Plan:      a.ipamH.Plan,
		VRF:       a.cfg.Routing.PodVRFID,
		Tag:       a.cfg.NAT44.InterfaceTag,
		Kind:      kind,
		StateDir:  c.StateDir,
		Refresh:   a.ifaces.Refresh,
		Logger:    log,
		// After a VPP restart, pods come back once VPP's startup
		// configuration has made the node's own interfaces.
		StartupInterfaces: a.startupInterfaces,
	})
	if err != nil {
		return nil, err
	}
	a.pods = &podWiring{m: m, kind: kind, reason: why}
	// A wired pod's address stays in use whatever the cluster state says
	// (not mirrored yet, or its object deleted before the CNI's DEL).
	a.ipamH.SetInUse(m.Wired)
	log.Info("pod manager on", "kind", kind, "why", why, "socket", c.Socket)
	return []controller.Handler{m}, nil
}

// wiredPods is the service processor's view of the pod manager
// (service.Params.Wired): none while cni.enabled is off. The processor is
// built before the pod manager: a.pods is read at each call, on the loop.
type wiredPods struct{ a *Agent }

func (w wiredPods) Wired(namespace, name string) bool {
	return w.a.pods != nil && w.a.pods.m.Wired(addrplan.PodID{Namespace: namespace, Name: name})
}

func (w wiredPods) WiredPods() []kubestate.Key {
	if w.a.pods == nil {
		return nil
	}
	var out []kubestate.Key
	for id := range w.a.pods.m.Pods() {
		out = append(out, kubestate.Key{Resource: kubestate.ResPod, Namespace: id.Namespace, Name: id.Name})
	}
	return out
}

// startupInterfaces are the node's own interfaces, which VPP's startup
// configuration makes (pods.Params.StartupInterfaces); read on the loop,
// the main NIC known by then.
func (a *Agent) startupInterfaces() []string {
	return slices.DeleteFunc(a.node().NAT44Config().NodeInterfaces, func(s string) bool { return s == "" })
}

// podObservers: the pod manager answers the CNI's calls once their batch
// is applied.
func (a *Agent) podObservers() []controller.ApplyObserver {
	if a.pods == nil {
		return nil
	}
	return []controller.ApplyObserver{a.pods.m}
}

// wirePods gives the pod manager the controller (after buildHandlers made
// it) and makes its socket.
func (a *Agent) wirePods() {
	if a.pods == nil {
		return
	}
	a.pods.m.SetEvents(a.ctl)
	a.pods.srv = pods.NewServer(pods.ServerParams{
		Socket:   a.cfg.CNI.Socket,
		Deadline: a.cfg.CNI.Deadline.Std(),
		Logger:   a.log.With("part", "cni"),
		Submit: func(ctx context.Context, op pods.Op, req pods.Request) (pods.Result, error) {
			return a.pods.m.Submit(ctx, a.ctl, op, req)
		},
		Status: a.cniStatus,
		Stale:  a.pods.m.Stale,
	})
}

// cniStatus is the plugin's STATUS: not ready while the agent cannot
// program VPP or has not brought its pods back.
func (a *Agent) cniStatus() cniapi.Status {
	st := cniapi.Status{Ready: true, Kind: string(a.pods.kind) + " (" + a.pods.reason + ")"}
	var why []string
	if !a.conn.Status().Connected {
		why = append(why, "VPP is not connected")
	}
	if back, reason := a.pods.m.Back(); !back {
		why = append(why, reason)
	}
	if a.ipamH.Allocator() == nil {
		why = append(why, "IPAM's allocations are not loaded yet")
	}
	if !a.ctl.Applied() {
		why = append(why, "the first full sync is not applied yet")
	}
	if len(why) > 0 {
		st.Ready, st.Why = false, fmt.Sprint(why)
	}
	return st
}

// podsNotBack says why the agent is not ready for its pods: a pod of the
// records not wired in VPP (after a VPP restart, until the reconcile
// re-created every one); empty when all are, or the agent wires none.
func (a *Agent) podsNotBack() string {
	if a.pods == nil {
		return ""
	}
	if back, why := a.pods.m.Back(); !back {
		return "pods: " + why
	}
	return ""
}

// runPods serves the CNI socket until ctx ends; a socket that cannot be
// served stops the agent (the node's pods would get no network).
func (a *Agent) runPods(ctx context.Context, wg *sync.WaitGroup, fail func(error)) {
	if a.pods == nil || a.pods.srv == nil {
		return
	}
	wg.Go(func() {
		if err := a.pods.srv.Run(ctx); err != nil {
			fail(err)
		}
	})
}

// podsView is /v1/pods: the kind of pod interface and the wired pods.
func podsView(a *Agent) any {
	type pod struct {
		Pod string     `json:"pod"`
		IP  netip.Addr `json:"ip"`
	}
	out := struct {
		Enabled bool   `json:"enabled"`
		Kind    string `json:"kind,omitempty"`
		Why     string `json:"why,omitempty"`
		Ready   bool   `json:"ready"`
		Pods    []pod  `json:"pods"`
	}{Enabled: a.pods != nil, Pods: []pod{}}
	if a.pods == nil {
		return out
	}
	out.Kind, out.Why, out.Ready = string(a.pods.kind), a.pods.reason, a.pods.m.Ready()
	all := a.pods.m.Pods()
	for _, id := range slices.SortedFunc(maps.Keys(all), addrplan.PodID.Compare) {
		out.Pods = append(out.Pods, pod{Pod: id.String(), IP: all[id]})
	}
	return out
}
