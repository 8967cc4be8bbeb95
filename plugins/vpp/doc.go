// Package vpp connects the agent to VPP over its binary API (govpp) and
// implements what the agent programs through it.
//
//   - Conn: a govpp connection over VPP's socket (default
//     /run/vpp/api.sock) or any govpp transport, such as the simulated VPP
//     of package sim. It reconnects with exponential backoff, checks at
//     every connect that VPP speaks every message the agent uses (failing
//     with ErrIncompatible naming the missing ones), probes VPP with
//     control_ping and reports through Config.OnEvent when VPP comes back,
//     flagging a restart (a changed VPP process ID): its configuration is
//     then empty and the agent must reprogram everything. Status says
//     whether it is connected, to which VPP version, and whether the VPP is
//     simulated, which the agent says loudly because the simulator forwards
//     no packets.
//   - Interfaces: a cache of VPP's interface table (name, sw_if_index,
//     tag), resolving pod interfaces by the CNI's "<namespace>/<pod>" tag.
//   - NAT44: the nat44.VPP interface of the NAT44 renderer's apply step,
//     over the nat44_ed binary API. VPP refusing a call as invalid (value
//     exists, no such entry, invalid value, unknown interface, removing
//     one of the last two locals of a load-balanced mapping) wraps
//     nat44.ErrInvalid; every other failure is transient. It also adds,
//     deletes and reads back the drop routes of the service CIDR
//     (ip_route_add_del with the DROP path type, ip_route_v2_dump). Every
//     request is built as the corpus of a real VPP 25.02 records it.
//
// This package knows nothing about Kubernetes objects, etcd, the
// controller or how the desired NAT44 state is computed.
package vpp
