package packettrace

import (
	"context"
	"errors"
	"maps"
	"slices"

	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// NAT44 answers what NAT44-ED does with a packet when VPP holds the NAT44
// state s: the answer of the simulated VPP's translation oracle
// (sim.VPP.Translate) once s is loaded into it. An empty p.Ingress is an
// interface with the outside feature. s is not changed.
func NAT44(ctx context.Context, s *nat44.State, p sim.Packet) (sim.Result, error) {
	st := s.Clone()
	if p.Ingress == "" {
		// ASSUMPTION: a packet given no ingress enters on an outside
		// interface (the main NIC's role); the view names no such role.
		p.Ingress = traceIngress
		if st.Interfaces == nil {
			st.Interfaces = map[string]nat44.Features{}
		}
		st.Interfaces[traceIngress] = nat44.FeatureOut
	}
	names := slices.Sorted(maps.Keys(st.Interfaces))
	if _, ok := st.Interfaces[p.Ingress]; !ok && p.Ingress != "local0" {
		// ASSUMPTION: an interface only the packet names exists in VPP
		// without NAT44 features.
		names = append(names, p.Ingress)
	}
	specs := make([]sim.InterfaceSpec, len(names))
	for i, n := range names {
		specs[i] = sim.InterfaceSpec{Name: n}
	}
	v, err := connected(ctx, specs, nil, nil, func(conn *vpp.Conn, ifaces *vpp.Interfaces) error {
		return loadNAT44(ctx, vpp.NewNAT44(conn, ifaces, discard), st)
	})
	if err != nil {
		return sim.Result{}, err
	}
	return v.Translate(p), nil
}

// loadNAT44 programs s into an empty VPP: the plugin enabled with s's
// settings, then the operations that turn the empty state into s. The
// routes are left out: the translation oracle does not read them.
func loadNAT44(ctx context.Context, port *vpp.NAT44, s *nat44.State) error {
	if err := port.SetGlobal(ctx, s.Global); err != nil {
		return err
	}
	empty := nat44.NewState()
	empty.Global = s.Global
	s.Routes = nil
	var errs []error
	for _, op := range nat44.Diff(s, empty, func(string) bool { return true }) {
		if err := nat44.Call(ctx, port, &op); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
