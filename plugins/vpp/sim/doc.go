// Package sim is a simulated VPP for tests and for running the agent
// without VPP (make run).
//
// THE SIMULATED VPP FORWARDS NO PACKETS. It is a govpp transport
// (adapter.VppAPI) that answers, over real binary-API messages, the
// requests the agent sends (control_ping, show_version,
// sw_interface_dump and the nat44_ed messages) from NAT44-ED
// configuration kept in memory, and enforces the rules of VPP 25.x
// NAT44-ED: a mapping whose external address:port/protocol exists answers
// "value exists"; a load-balanced mapping needs at least two locals, each
// with a probability of 1 to 255 ("invalid value"), and its external
// address in the NAT pool unless it is out2in-only ("no such entry"); a
// local cannot be removed while fewer than three remain ("unspecified
// error"); unknown interface indices are refused; an interface has in/out
// features or the output feature, never both; the plugin must be enabled
// first ("unsupported"). Mappings bound to an interface's address are not
// simulated (refused as unsupported).
//
// Tests and the agent use it through a few methods: AddInterface to
// create (tagged) interfaces, Snapshot to read the state in the
// renderer's model, Translate and Trace (the translation oracle) to
// ask where a packet would go, OpenSession and SessionsCut to count the
// connections a change cuts, SetFaults to fail a chosen fraction of calls
// deterministically, Restart to simulate a VPP restart, and Calls, Writes
// and LastAck to count and time the binary-API calls.
//
// The translation oracle has two questions. Translate answers the
// mapping lookup alone: which mapping a packet arriving on an interface
// matches and where it may go, with probabilities (agent.TraceState
// mirrors it). Trace follows the packet and its reply through the
// datapath as a real VPP 25.02 was measured to (FACTS.md §4): the reply
// of a frontend reached through the main NIC's output feature is dropped
// unless an address-only identity mapping of the frontend address exists
// in the backend's VRF; from a pod, an address-only identity mapping of
// the frontend address hides its port mappings unless the address is
// also a NAT pool address; a packet no mapping matches is dropped by a
// DROP route of its ingress interface's VRF (SetInterfaceVRF), or, under
// the SNAT configuration, leaks out of the output-feature interface
// source-NATed to a pool address. Both are queries: neither opens a
// session nor crashes the simulated VPP.
//
// Sessions stand for live connections, so that tests can count what a
// configuration change disrupts. OpenSession opens one as a first packet
// would (Trace's route, a backend chosen by probability with a seeded
// RNG, affinity kept per client address); SessionsCut counts the sessions
// configuration changes cut, by the rules measured on VPP 25.02 (FACTS.md
// §3: deleting a load-balanced mapping's local, or the mapping, cuts every
// load-balanced session to those backends' address:port in every
// load-balanced mapping; deleting a static mapping cuts only its first
// session; adding cuts nothing), and Options.OnCut reports each cut.
// Sessions lost to a restart, a crash or disabling the plugin are counted
// apart (SessionsLost), not as cuts. A first packet to a load-balanced
// mapping whose locals all have probability 0 crashes the simulated VPP,
// as it crashes VPP 25.02. Sessions never expire by time (an assumption:
// only configuration changes and restarts end them).
//
// It knows nothing about the agent: only govpp's binary API and the
// NAT44 model of servicerenderer/nat44.
package sim
