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
// renderer's model, Translate (the translation oracle) to ask where a
// packet would go, SetFaults to fail a chosen fraction of calls
// deterministically, Restart to simulate a VPP restart, and Calls, Writes
// and LastAck to count and time the binary-API calls.
//
// It knows nothing about the agent: only govpp's binary API and the
// NAT44 model of servicerenderer/nat44.
package sim
