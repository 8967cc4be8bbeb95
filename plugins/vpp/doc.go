// Package vpp connects the agent to VPP over its binary API (govpp) and
// implements what the agent programs through it.
//
//   - Conn: a govpp connection over VPP's socket (default
//     /run/vpp/api.sock) or any govpp transport, such as the simulated VPP
//     of package sim. It checks at every connect that VPP speaks every
//     message the agent uses (failing with ErrIncompatible naming the
//     missing ones), reports through Config.OnEvent when VPP comes back,
//     flagging a restart (a changed VPP process ID): its configuration is
//     then empty and the agent must reprogram everything. Status says
//     whether it is connected, to which VPP version, and whether the VPP is
//     simulated, which the agent says loudly because the simulator forwards
//     no packets.
//   - Releases (versions.go): the agent speaks VPP 25.02 and 26.06. At
//     every connect Conn reads show_version, picks the release's bindings
//     (Release: govpp v0.13.0's for every message whose CRC did not
//     change, binapi/vpp2606 for 26.06's cnat_set_snat_policy and
//     feature_cnat_enable_disable) and checks every used message against
//     them; another release is refused (ErrUnsupportedVersion, which
//     wraps ErrIncompatible: not ready, lastError naming the version and
//     the supported ones). The clients ask Conn.Release for the request
//     to send, so the renderers' VPP interfaces are the same for both:
//     on 26.06 cnat is enabled per interface with one
//     feature_cnat_enable_disable (sent for FeatureInput4), and reject
//     routes are allowed in any table. docs/vpp-versions.md is the
//     contract.
//   - Interfaces: a cache of VPP's interface table (name, sw_if_index,
//     tag), resolving pod interfaces by the CNI's "<namespace>/<pod>" tag
//     and reporting every change to a callback.
//   - NAT44: the nat44.VPP interface of the NAT44 renderer's apply step,
//     over the nat44_ed binary API. VPP refusing a call as invalid (value
//     exists, no such entry, invalid value, unknown interface, removing
//     one of the last two locals of a load-balanced mapping) wraps
//     nat44.ErrInvalid, -3 (no such FIB table) nat44.ErrNoTable too, as
//     for cnat; every other failure is transient. It also adds, deletes
//     and reads back the routes of the service CIDR and of kube-proxy's
//     verdicts (ip_route_add_del with the DROP, ICMP_PROHIBIT — table 0
//     only, never sent elsewhere: it crashes VPP 25.02 — or lookup path,
//     ip_route_v2_dump), and the loadBalancerSourceRanges ACL (acl.go:
//     acl_add_replace, acl_del, acl_interface_set_acl_list, acl_dump,
//     acl_interface_list_dump). acl_plugin.so is optional (ACLPlugin in
//     Config.OptionalPlugins): its messages are checked at every connect
//     apart from the rest, and a VPP lacking them is connected all the
//     same (Conn.HasPlugin, Status.MissingPlugins, one warning per
//     connection; NAT44.HasACLPlugin tells the renderer). Every request is built as the corpus
//     and records-acl-routes of a real VPP 25.02 record it.
//   - NAT44.Pipeline (nat44.Pipeliner): the apply's calls sent without
//     waiting for each answer, at most PipelineWindow in flight; answers
//     come back in order and are matched by position, each operation's
//     result classified as its synchronous method classifies it (the
//     interface features' steps joined alike). Over VPP's socket the
//     calls go on a wire (wire.go): a socket connection of the agent's
//     own beside govpp's ("contiv-agent-pipeline" in `show api clients`),
//     kept between pipelines, on which requests are written 4 KiB at a
//     time and answers read in bulk and checked by their context, without
//     govpp's core; over an Adapter (the in-process simulated VPP), or
//     when the wire cannot be made, on a govpp stream.
//     The renderer keeps one call per object in flight, so that an
//     object's later operations are skipped after a failure.
//   - CNAT: the cnat.VPP of the cnat renderer (cnat binary API, features,
//     drop routes); -2 wraps cnat.ErrNoInterface, -3 (no such FIB table)
//     cnat.ErrNoTable, -6 cnat.ErrNotFound. CNAT.Pipeline
//     (cnat.Pipeliner) pipelines its translation and interface calls as
//     NAT44.Pipeline does, one message per operation.
//   - RouteGovppLogs: govpp logs through logrus; this sends its lines to
//     the agent's slog logger (attribute part=govpp).
//   - Dropped replies: govpp drops a reply its reader does not take in
//     time, telling only its logger. This package makes govpp wait
//     2 s (replyHandOver, not 100 ms) and buffers a dump's replies
//     (DumpReplyBuffer); a dump during which govpp still dropped one
//     (counted by a hook on govpp's logger) fails with ErrRepliesDropped
//     instead of returning less than VPP holds.
//
// # Losing and finding VPP
//
// A VPP restart must cost as little traffic as possible, so the connection
// notices a lost VPP fast and comes back as soon as the new one answers
// (VPP 25.02 answers on its new socket about 0.33 s after it starts):
//
//   - A call whose send fails (a broken socket: VPP died) makes the watcher
//     probe at once instead of at the next health probe; otherwise a
//     control_ping every HealthInterval (1 s) checks the connection and
//     VPP's process ID, three timed-out probes in a row counting as lost —
//     unless VPP is busy for the agent: it answered a call within those
//     probes' window, or a call is in flight and it answered one within
//     CallTimeout. VPP's one main thread answers a probe only after the
//     calls queued before it, and a NAT44 feature enable walks every
//     mapping (0.35 s at 11 000); a real VPP 25.02 at W(10000) missed three
//     probes while answering the agent's feature calls (issue 34, F3).
//   - The socket file is checked every SocketPoll (100 ms): replaced by
//     another file means a new VPP (the connection ends at once); gone
//     means VPP is stopping (probed once).
//   - Reconnecting backs off from RetryMin doubling, capped at RetryPresent
//     (1 s) while the socket file exists, growing to RetryMax only while it
//     does not; a socket appearing or being replaced during a wait ends
//     the wait. A restarted VPP is thus connected within about a second of
//     its socket answering.
//
// # Interfaces and their events
//
// VPP creates the interfaces of its startup configuration about 2 s after
// its API answers (the table shows only local0 before), with the same
// index, name and tag as before a restart. Interfaces.Run follows this:
// at every (re)connection it registers with want_interface_events
// (registration belongs to the connection; -31, registered already, is
// fine) and re-reads the whole table; every sw_interface_event then makes
// it re-read the table (events carry only index, flags and deleted, are
// coalesced, and none comes for a tag change), a deleted event removes the
// interface at once, and the table is re-read every ResyncInterval (30 s)
// regardless. A VPP without interface events gets the periodic re-reads
// only.
//
// Every change is reported as InterfaceChange values, by name (the name
// is what the agent configures): Added, Changed (another index or tag)
// and Deleted. After a restart (another process ID) every interface found
// again is Changed with Restarted set: it lost all configuration. Found
// early, a restarted VPP shows only local0: the other interfaces are
// reported Deleted (Restarted set too: they went with the old process),
// then Added as their events come.
//
// # One VPP, one owner
//
// OwnerTag, ReadOwner and MarkOwner keep the mark of the agent that
// manages a VPP in VPP itself: local0's tag, "contiv:<cluster name>/<node>"
// (owner.go; IsLegacyOwnerTag knows the "contiv@<etcd cluster ID>/<node>"
// of agents before the cluster name). ASSUMPTION: VPP 25.02 tags local0 like any interface and
// dumps its tag (the corpus records tags on other interfaces only); a
// restart loses the mark with the rest of VPP's state.
//
// # The lab (tests only)
//
// lab_test.go runs a real VPP 25.02 on veth pairs into network namespaces
// it makes, programs it with this package's own request builders over
// govpp's socket client, records every request and reply in the corpus
// format and probes it with real TCP/UDP (curl, a UDP client, tcpdump of
// the ICMP errors). It runs only with $CONTIV_VPP_LAB set to a VPP build
// directory, as root; lab_verdicts_test.go recorded
// sim/testdata/records-verdicts (README.md there) with it.
//
// This package knows nothing about Kubernetes objects, etcd, the
// controller or how the desired NAT44 state is computed.
package vpp
