// Package sim is a simulated VPP 25.02 for tests and for running the
// agent without VPP (make run); with Options.Version "26.06…" it answers
// as VPP 26.06 where that release differs (release.go: cnat.api 1.0.0's
// messages, feature_cnat_enable_disable, a removed backend's sessions
// freed, reject routes in any table; read in the 26.06 source; the
// real-VPP suite's records of a real 26.06 replay against it, and showed
// cnat_get_snat_addresses answering -30 before any SNAT address is set).
//
// THE SIMULATED VPP FORWARDS NO PACKETS. It is a govpp transport
// (adapter.VppAPI) that answers, over real binary-API messages, the
// requests the agent sends, from state kept in memory, exactly as the
// real VPP 25.02 answered them when it was measured
// (../shared/vpp/FACTS.md and the recorded corpus).
//
// # What is modelled
//
//   - The message table: every message of govpp's binapi packages
//     memclnt, vpe, vlib, interface, ip, nat44_ed, cnat and feature (all
//     compatible with 25.02), but feature_is_enabled, which 25.02 lacks;
//     Options.Without removes some. Only the messages listed in
//     messages.go are answered; the others fail to send.
//   - control_ping (vpe_pid = the PID, new after every restart or
//     crash), show_version, show_threads (one main thread).
//   - Interfaces: sw_interface_dump (index 0 or ~0 lists all), tags (cut
//     to 63 bytes; empty -> "invalid value"), sw_interface_set_flags,
//     create_loopback/delete_loopback, want_interface_events (per
//     connection; twice -> "invalid registration") with sw_interface_event
//     delivered to the registered client (context 0: govpp's WatchEvent
//     gets it): created interfaces send their state (loopback 0,
//     af_packet 2, CNI-created 3), admin changes send the new flags, a
//     repeated state or a tag change sends nothing, deletes send
//     deleted. Freed sw_if_index values are reused, the one freed last
//     first. AddInterface, DelInterface and RecreateInterface stand for
//     the CNI.
//   - NAT44-ED: the plugin (-170 enable when enabled, -169 disable when
//     disabled, -126 for every configuration call while disabled and
//     empty dumps; enabling resets forwarding and the timeouts, which
//     are lost while disabled; show_running_config as recorded,
//     translation buckets included), session limits, address pools in
//     VPP's order (appended; a deleted address's place taken by the
//     last one; normal pool then twice-NAT pool), interface-address pool
//     records, in/out and output features (pool order, freed slots
//     reused; the cursor of nat44_ed_output_interface_get is a pool
//     index), static, load-balanced and identity mappings in one pool
//     (dumps in pool order; the locals of a load-balanced mapping in
//     their own pool), mappings bound to an interface's address
//     (resolved at once when the interface has one, and listed after the
//     others), every return value the corpus shows.
//   - cnat (FACTS.md §6): translations keyed by (VIP, port, protocol)
//     in a pool (id = pool index, freed ids reused last-freed-first, a
//     purge frees them in pool order); an update on a key keeps its id,
//     replaces the paths and flags and ignores lb_type and
//     flow_hash_config; delete by id (missing -> -6); the dump reads back
//     VIP, id, protocol, lb_type and the paths (interface paths resolved
//     from the interface's address; path flags | 1 when resolved), never
//     flags, is_real_ip or flow_hash_config; 0 paths crash. SNAT
//     addresses (interface-based ones resolved), policy (3 and up ->
//     +1), interface tables 0..3 (else -7; unknown interface -2),
//     exclude prefixes (masked; deleting a missing one -> +1).
//     feature_enable_disable for the cnat nodes on their arcs, counted
//     (enabling twice puts the node there twice; bad node or arc -> -7,
//     bad interface -> -2). cnat_session_dump lists OpenCnatSession's
//     sessions; cnat_session_purge deletes every session and every
//     translation. CnatTranslations, CnatSnatState and CnatFeatureCount
//     read the state.
//   - FIB routes added by ip_route_add_del (drop, reject, lookup of
//     another table, or plain; an add on an existing prefix replaces its
//     path; deleting a missing route answers 0): Routes, and the
//     longest-prefix lookup the translation oracle uses, following lookup
//     routes of any prefix length (the pod VRF's service-CIDR lookup
//     reaches table 0's /32 reject and service-CIDR drop routes) and
//     answering Rejected for ICMP_UNREACH/ICMP_PROHIBIT routes, which work
//     in table 0 only (records-acl-routes/c2*.jsonl).
//   - The ACL plugin (acl.go; records-acl-routes/c1-*.jsonl):
//     acl_add_replace (~0 creates at the lowest free index), acl_del (-142
//     while applied, -6 missing), acl_interface_set_acl_list,
//     acl_interface_add_del (add twice -142, unknown ACL or missing -6),
//     acl_dump and acl_interface_list_dump; Trace applies an interface's
//     input ACLs before NAT (first matching rule; no match denies). ACLs,
//     InputACLs and AddInputACL (another tool's ACL) for tests.
//     Options.NoACLPlugin stands for a VPP not loading acl_plugin.so: its
//     messages are not in the message table; SetACLPlugin changes that
//     from the next restart. IPv4 tables exist for VRF 0,
//     the interfaces' VRFs and those added by ip_table_add_del (a
//     per-VRF session limit needs one).
//   - Pod interfaces (pods.go, tap.go): af_packet_create_v3 on a host
//     link of the caller's netns; tap_create_v3 makes a real kernel tap
//     (/dev/net/tun) in the netns host_namespace names, with the
//     host_* MAC, addresses, gateway route and MTU and up, and answers
//     VPP tap.c's -11/-12/-13/-145 where VPP would (-11 when SetVhostNet
//     says /dev/vhost-net is missing; default: the host's truth);
//     tap_delete_v2, a restart, a crash and Close remove the kernel end.
//     KernelTaps lists them.
//
// # Proof: the corpus replay
//
// TestCorpus replays every recorded scenario (testdata/vpp-25.02/corpus, a copy of ../shared/vpp/corpus,
// $CONTIV_VPP_CORPUS to override) against a fresh simulated VPP set up
// with the recording's interfaces, through a real govpp connection, and
// compares every reply, details message and event, field by field. What
// it does not compare is in one skip table with a reason each (the debug
// CLI, build dates, VPP's own FIB entries, cnat sessions made by the
// recording's traffic). The cnat files are replayed one request per
// connection, as recorded; where a file's VPP instance had been sent
// more than the file holds (other files' requests, an unrecorded
// capacity probe) or a file spans several instances, corpusInstances
// rebuilds each instance.
//
// # Proof: the real-VPP suite's records
//
// TestRecordsE2EVPP replays what node 1's agent exchanged with a real VPP
// while the real-VPP suite ran every scenario (e2evpp, E2EVPP_RECORD=1;
// testdata/vpp-<version>/records-e2evpp, README.md there) against a sim
// with that node's interfaces (a VXLAN tunnel among them: dev type VXLAN),
// and compares every reply and event; what it does not compare is in
// e2evppIgnore with a reason each.
//
// # Verdict facts (testdata/records-verdicts)
//
// Measured on a real VPP 25.02 with the agent's requests (plugins/vpp's
// lab test; README.md there) and replayed by TestRecordsVerdicts:
//
//   - A reject route (ICMP_UNREACH or ICMP_PROHIBIT path) works in table 0
//     for IPv4 and IPv6 (an IPv6 one needs path proto IP6: with IP4 no
//     ICMPv6 is sent) and crashes VPP in table 1 for both (SIGSEGV). It
//     dumps with its type (5 or 6). ICMP_UNREACH sends "host unreachable",
//     which a UDP socket ignores; ICMP_PROHIBIT "administratively
//     prohibited", which fails UDP clients too ("No route to host").
//   - cnat: a one-path translation to an address with a reject route is
//     refused, the ICMP error translated back to the frontend by
//     cnat-output (external IP and NodePort, outside and pod clients,
//     TCP ~10 ms); to an address covered by a DROP route it is dropped.
//     Trace (CnatTrace) answers Rejected and Dropped for them.
//   - NAT44-ED: a mapping to an address with a reject route gives the
//     client no usable error (twice-NAT: the ICMP error goes to the
//     twice-NAT address; self-twice-NAT: translated back to an outside
//     client with a wrong IPv4 header checksum, to a pod not at all):
//     Trace answers Dropped (the client times out).
//   - Under cnat, an untranslated packet's reject (a cluster IP's route)
//     reaches a pod client intact for IPv4, but outside clients (IPv4)
//     and IPv6 clients get the error with its inner header rewritten to
//     the SNAT address, and time out. CnatTrace answers Dropped for
//     them, Rejected for an IPv4 pod client (the record's rule; why cnat
//     rewrites the error is not known).
//
// # Crashes
//
// Requests that kill the real VPP 25.02 kill the simulated one: a
// nat44_add_del_lb_static_mapping with 256 or more locals, an
// ip_route_add_del with an ICMP_UNREACH or ICMP_PROHIBIT path outside
// table 0 (IPv4 or IPv6: records-verdicts), and the first packet
// (OpenSession; with Options.Traffic, the call that made it so) to a
// load-balanced mapping whose probabilities sum to a multiple of 256, all
// 0 included. The request gets no answer (its send fails), the
// connection is lost, and VPP comes back as after a restart. Crashes and
// LastCrash count and explain them; each is logged at error level.
//
// VPP 25.02 keeps a load-balanced mapping's cumulative probabilities in
// u8 and picks a local by a binary search over them (lbpick.go, modelled
// on nat44_ed.c): the oracle's shares and OpenSession's draws follow that
// pick exactly, so a mapping summing past 255 is skewed as recorded (257
// of probability 1: every session to the first local; 300 with 146
// remote: the first 44 reached, no remote one). Skews counts, with
// Options.Traffic, the calls after which a mapping summed past 255.
//
// # Restarts
//
// Restart and RestartWith clear NAT44, cnat and FIB state (tables
// included), change the PID and
// break the connection (calls fail with ErrConnectionReset until the
// client reconnects; event registrations are lost). The API answers at
// once; with RestartOptions.InterfacesAfter the interfaces (all but
// local0) come back only after that delay, with their index, name, tag
// and MAC, each announced to a client registered on the new connection,
// as VPP's startup configuration does; FinishStartup re-creates them at
// once. The startup configuration runs in VPP's main thread: due while a
// request's main-thread cost (below) keeps it busy, it runs once that
// request is answered, before the next. So a client that read the
// restarted VPP early (only local0) finds the interfaces back, at their
// old indices, in the middle of the apply that opened with the NAT44-ED
// enable, as on the real VPP 25.02 (the agent's
// TestVPPRestartInterfacesBackDuringTheFullApply). Close stops the timer.
//
// # Served on a unix socket
//
// Serve serves the VPP on a unix socket as VPP's API socket: govpp's
// socket client (and so the agent's Conn with Config.Socket) connects,
// gets the message table in the sockclnt_create handshake, passes the
// compatibility check, and every request, answer and interface event
// travels framed over the socket. Requests of all clients run in arrival
// order, one at a time, each after Options.ServiceTime (ASSUMPTION: a
// latency, which requests in flight together overlap). Several clients
// at once, as VPP serves them (the agent's govpp connection and its
// pipelines' wire): each answer goes back to its request's client; a
// restart closes every connection and creates the socket file anew.
// Close removes the socket; serving again keeps the state.
//
// # Main-thread cost of NAT44 features and of the plugin enable
//
// With Options.FeatureWalk (VPP2502FeatureWalk: FACTS.md §7), enabling
// or disabling an outside or output NAT44 feature keeps the executing
// thread busy in proportion to the mappings VPP holds (VPP walks them
// all), before the answer: served on a socket, every later request waits
// as it waits for VPP's main thread. Walked totals the time charged. With
// Options.PluginEnable (VPP2502PluginEnable: 0.93 s at 262 144 sessions,
// docs/real-vpp.md), enabling NAT44-ED does so in proportion to the
// session limit (VPP allocates and clears its session tables); Enabling
// totals it. The zero values charge nothing (unit tests stay fast).
//
// # Other helpers
//
// Snapshot reads the NAT44 state in VPP's terms (NAT44State: protocol
// numbers, flags; Lines prints it in the NAT44 renderer's line form so
// that tests compare the two), Translate and
// Trace (the translation oracle, Trace with the reply path) tell where a
// packet would go, OpenSession, SessionsCut and SessionsLost keep and
// count connections (see Sessions below), Skews counts skewed
// load-balanced mappings (Options.Traffic), SetFaults fails a
// chosen fraction of calls deterministically, Calls, Writes and
// LastAck count and time the binary-API calls, and Refusals counts the
// answers with a non-zero retval.
//
// # Assumptions where the record is silent
//
// Each is marked ASSUMPTION in the code: af_packet MACs derived from the
// index (VPP randomises them); delete_loopback of a non-loopback -> -2; vrf ~0 of a
// mapping is the inside VRF given at enable; twice-NAT on an
// address-only static mapping -> -126; a static delete on an identity key
// deletes the identity local of its VRF; LB delete and add_del_local on
// an identity key -> -7; an unknown interface for an interface-bound
// mapping -> -2; pending interface-bound records keep only the
// address-only flag; the interface-address record of a pool address
// already present leaves the pool as is; session limits and
// interface-address records while disabled -> -126; the stats index of
// the first API route is 28 (the recorded startup configuration's FIB);
// the 256-locals crash needs the plugin enabled and happens on delete
// too; an IPv4 route into a table that does not exist answers -3 as
// recorded (FACTS §6), a delete there too, IPv6 tables always exist, a
// NAT44 local or identity in a VRF makes its table, an interface put in
// a VRF does not (CreateTable is the startup configuration's "ip table
// add"; its tables come back with its interfaces after a restart);
// ip_table_add_del always answers 0; cnat's session-max-age applies to
// every non-TCP session as recorded for UDP (CnatPacket), established TCP
// sessions do not expire; an API-made ICMP_UNREACH route dumps with its
// path type; a lookup route into a table without a covering route ends
// there; replacing an ACL index that holds none -> -6, an unknown
// interface -> -2, an unknown ACL in a set list -> -6, output ACL lists
// not kept; acl_dump and acl_interface_list_dump answer as sent; a VPP
// without acl_plugin.so has none of its messages in its message table and
// the other messages keep their IDs;
// show_threads reports cpu and core 1;
// address ranges past 65536 addresses -> -7; the load-balanced pick
// with one worker and the session RNG for random_u32 (257 locals of
// probability 1: all sessions to the first, recorded 294 of 300); cnat
// (each marked in cnat*.go): is_real_ip is overwritten by an update; interface endpoints
// resolve IPv4 addresses only; SNAT addresses with an interface ignore
// the given ones; a refused SNAT policy leaves the policy as it was;
// interfaces are checked before tables and feature names; cnat-snat-ip6
// is on ip6-unicast; no other feature is known; cnat translates before
// the FIB lookup, so a DROP route drops only what no translation matched
// (CnatTrace); IPv6 routes take the IPv4 rules and VPP has no IPv6 drop
// routes of its own (fib.go); session dumps list
// sessions in ID order; NAT44 sessions never expire; the output feature walks
// the mappings at the outside feature's measured rate, linear in their
// number, the NAT44-ED enable's time is linear in the session limit and a
// disable costs nothing (cost.go); a startup configuration due during a
// busy request runs before the next request (restart.go).
//
// The translation oracle has two questions. Translate answers the
// mapping lookup alone: which mapping a packet arriving on an interface
// matches and where it may go, with probabilities (packettrace asks it
// over an agent's applied state). Trace follows the packet and its reply through the
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
// mapping whose probabilities sum to a multiple of 256 (all 0 included)
// crashes the simulated VPP, as it crashes VPP 25.02. Sessions never
// expire by time (an assumption: only configuration changes and restarts
// end them).
//
// cnat sessions (OpenCnatSession, CnatSessionAlive, CnatSessionsCut,
// CnatSessionsLost) follow FACTS.md §6: a new connection hashes its flow
// (flow_hash_config; SRC_IP keeps a client address on one backend) over
// the translation's resolved paths (default: modulo, Maglev: a 1009-slot
// table); a repeated path weighs more. No translation update or delete
// cuts a session (a removed backend keeps its connections and gets no
// new ones; a deleted translation's connections finish, new ones fail);
// cnat_session_purge cuts them all; a restart or crash loses them.
// CnatTrace is the cnat oracle: the backends, their weights and the
// source address each sees (the client, the K8S policy's SNAT address
// for a hairpin or a remote backend reached from outside, a path's
// source endpoint), and, for a packet no translation matched, the DROP
// route of its ingress interface's VRF that drops it (the service-CIDR
// route, as for NAT44), documented on CnatTrace.
//
// It knows nothing about the agent nor its renderers' models: only
// govpp's binary API. Packets, mappings, translations and sessions carry
// VPP's protocol numbers (ip_types.IPProto: TCP, UDP).
package sim
