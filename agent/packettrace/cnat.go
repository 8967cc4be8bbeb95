package packettrace

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/cnat"
)

// CNATState is what CNAT reads: what a cnat renderer applied (the /v1/cnat
// view) and this node's pod subnets (the /v1/ipam view).
type CNATState struct {
	Translations []*cnat.Translation
	// Node is the applied node configuration; nil when none is.
	Node *cnat.Node
	// PodSubnets are this node's pod subnets: a backend inside one is
	// local, behind one of this node's pod interfaces.
	PodSubnets []netip.Prefix
}

// CNAT answers where cnat sends a packet, and which source each backend
// sees, when VPP holds the cnat state s: the answer of the simulated VPP's
// cnat oracle (sim.VPP.CnatTrace) once s is loaded into it. An empty
// p.Ingress is the main NIC (in no SNAT table, VRF 0). TranslationID is 0
// and the reason names the translation by its key: the agent's VPP ids
// are not in the view.
func CNAT(ctx context.Context, s CNATState, p sim.Packet) (sim.CnatResult, error) {
	node := s.Node
	if node == nil {
		node = &cnat.Node{}
	}
	if p.Ingress == "" {
		// ASSUMPTION: a packet given no ingress enters on the main NIC, in
		// no SNAT table and VRF 0.
		p.Ingress = traceIngress
	}
	podVRF := podVRF(node)
	names := slices.Collect(maps.Keys(node.Tables))
	for n := range node.Features {
		names = append(names, n)
	}
	if p.Ingress != "local0" {
		names = append(names, p.Ingress)
	}
	slices.Sort(names)
	var specs []sim.InterfaceSpec
	for _, n := range slices.Compact(names) {
		spec := sim.InterfaceSpec{Name: n}
		if node.Tables[n].Has(cnat.TablePod) {
			// ASSUMPTION: a pod interface is in the pod VRF and holds
			// the first pod subnet given (a simulated interface has one
			// address), so that the oracle finds the local backends.
			spec.VRF = podVRF
			if len(s.PodSubnets) > 0 {
				spec.Address = s.PodSubnets[0]
			}
		}
		specs = append(specs, spec)
	}
	keys := map[uint32]cnat.Key{}
	v, err := connected(ctx, specs, []uint32{podVRF}, vpp.CNATMessages(), func(conn *vpp.Conn, ifaces *vpp.Interfaces) error {
		return loadCNAT(ctx, vpp.NewCNAT(conn, ifaces, discard), s.Translations, node, keys)
	})
	if err != nil {
		return sim.CnatResult{}, err
	}
	res := v.CnatTrace(p)
	if k, ok := keys[res.TranslationID]; ok && res.Verdict != sim.NotTranslated {
		prefix := fmt.Sprintf("cnat translation %d ", res.TranslationID)
		res.Reason = strings.Replace(res.Reason, prefix, "cnat translation "+k.String()+" ", 1)
		res.TranslationID = 0
	}
	return res, nil
}

// podVRF is the VRF of the node's pod interfaces: that of its lookup
// routes (the pod VRF's way to table 0), else the highest VRF its
// routes name (the service-CIDR routes are in the pod and the main VRF).
// ASSUMPTION: the view does not name the pod VRF.
func podVRF(n *cnat.Node) uint32 {
	var vrf uint32
	for _, rt := range slices.Concat(n.Routes, n.Verdicts) {
		if rt.Kind == cnat.RouteLookup {
			return rt.VRF
		}
		vrf = max(vrf, rt.VRF)
	}
	return vrf
}

// loadCNAT programs the translations and the node configuration into an
// empty VPP, and records each translation's id in keys. The cnat features
// are left out: the cnat oracle does not read them.
func loadCNAT(ctx context.Context, port *vpp.CNAT, ts []*cnat.Translation, n *cnat.Node, keys map[uint32]cnat.Key) error {
	var errs []error
	for _, t := range ts {
		if t == nil {
			continue
		}
		id, err := port.UpdateTranslation(ctx, t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		keys[id] = t.Key
	}
	if err := port.SetSNATAddresses(ctx, n.SNAT4, n.SNAT6); err != nil {
		errs = append(errs, err)
	}
	if err := port.SetSNATPolicy(ctx, n.Policy); err != nil {
		errs = append(errs, err)
	}
	for _, p := range n.Exclude {
		errs = append(errs, port.AddDelExcludePrefix(ctx, p, true))
	}
	for _, name := range slices.Sorted(maps.Keys(n.Tables)) {
		for t := range cnat.TableHost + 1 { // every table
			if n.Tables[name].Has(t) {
				_, err := port.AddDelSNATInterface(ctx, name, t, true)
				errs = append(errs, err)
			}
		}
	}
	for _, rt := range slices.Concat(n.Routes, n.Verdicts) {
		errs = append(errs, port.AddDelFIBRoute(ctx, rt, true))
	}
	return errors.Join(errs...)
}
