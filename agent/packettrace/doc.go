// Package packettrace answers a packet trace from an agent's applied state
// (the /v1/nat44/mappings or /v1/cnat and /v1/ipam views, or an offline
// render) by asking the simulated VPP's oracles (plugins/vpp/sim).
//
// It keeps no rules of its own: NAT44 and CNAT load the state, through the
// agent's own VPP ports (plugins/vpp) over govpp, into a fresh simulated
// VPP with the interfaces the state names, and ask that VPP's translation
// oracle (sim.VPP.Translate) or cnat oracle (sim.VPP.CnatTrace). What the
// oracles answer is what the simulated VPP, held to the recorded corpus,
// would do with the packet if it held that state; tests hold the trace of
// a rendered node's applied state to the oracle of the VPP it was rendered
// into.
//
// The views do not carry everything VPP knows; what is filled in is
// marked ASSUMPTION in the code:
//   - an interface the state does not name, and an empty Packet.Ingress,
//     are made for the trace (an empty ingress gets the NAT44 outside
//     feature, or, under cnat, stands for the main NIC, in no SNAT table);
//   - under cnat, the interfaces in the POD table carry this node's first
//     pod subnet (a backend inside it is local; with no interface in the
//     POD table none is, which changes no verdict) and sit in the pod VRF
//     (the VRF of a lookup route, else the highest VRF the
//     routes name), every other interface in VRF 0; the cnat features are
//     not loaded (the oracle does not read them);
//   - VPP's translation ids of the agent's VPP are unknown: CnatResult's
//     TranslationID is 0 and its reason names the translation by its key.
//
// It must not know the agent's wiring: it reads states, not agents.
package packettrace
