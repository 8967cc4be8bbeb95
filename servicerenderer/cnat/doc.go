// Package cnat renders ContivServices into VPP's cnat plugin: a second
// renderer beside nat44, on the same servicerenderer.Renderer API. It is
// for the agent's service pipeline (agent/nodepipeline builds it when the
// configuration says renderer: cnat) and the offline render. The contract:
// it records changes on the controller's loop, Apply programs what changed
// (or, after a resync, only what VPP lacks or holds wrongly), it never
// touches a translation or route it cannot tell as its own, and calls VPP
// refuses as invalid are reported per object (Failures), not retried.
//
// It has the same three layers as nat44:
//
//   - Build (pure): BuildService turns one ContivService into its
//     translations on this node, one per frontend; BuildNode the node-wide
//     configuration from the Config and the interfaces with a role.
//   - Diff (pure): DiffTranslation and DiffNode yield the ordered
//     operations that turn what VPP holds into what is desired.
//   - Renderer: records each change at a cost proportional to that change;
//     Apply (the controller's Applier) issues the calls for what changed,
//     or after a resync reads VPP and issues only the differences, through
//     the small VPP interface (plugins/vpp.CNAT implements it over govpp).
//     Calls VPP refuses as invalid are reported per object (Failures).
//
// # What is programmed (FACTS §6, corpus cnat_node.jsonl)
//
//	frontend                      paths (dst_ep backend, src_ep 0.0.0.0/::,    is_real_ip  VPP call
//	                              every sw_if_index ~0)
//	ClusterIP (v4 and v6)         all backends of its family; internal policy   0           cnat_translation_update
//	                              Local: this node's only
//	ExternalIP / LoadBalancer IP  all backends; external policy Local: this     0           the same
//	                              node's only
//	NodePort on each node IP      as ExternalIP, of the node IP's family        1           the same
//	(IPv4 and IPv6)
//	health-check NodePort (Local  HealthCheckTarget:port (the agent, host       1           the same
//	external policy), TCP on      side); no affinity
//	each IPv4 node IP
//	no usable backend             -                                             -           none (delete if there):
//	                                                                                        0 paths abort VPP 25.02
//	session affinity              lb_type MAGLEV, flow_hash_config SRC_IP       -           set at creation only: a
//	                                                                                        change is delete + re-add
//	node                          -                                             -           cnat_set_snat_policy K8S;
//	                                                                                        cnat_snat_policy_add_del_exclude_pfx
//	                                                                                        pod CIDRs, service CIDRs, node
//	                                                                                        networks; per pod interface
//	                                                                                        cnat_snat_policy_add_del_if tables
//	                                                                                        INCLUDE_V4 + POD (+ INCLUDE_V6);
//	                                                                                        per interface with a role
//	                                                                                        feature_enable_disable
//	                                                                                        cnat-input-ip4/ip4-unicast,
//	                                                                                        cnat-output-ip4/ip4-output (+ ip6
//	                                                                                        twins with IPv6);
//	                                                                                        ip_route_add_del DROP route per
//	                                                                                        service CIDR (v4 and v6) in the
//	                                                                                        main VRF, in the pod VRF too but
//	                                                                                        an IPv4 one's is a lookup of
//	                                                                                        the main VRF where rejects are made; last
//	                                                                                        cnat_set_snat_addresses (node IPs,
//	                                                                                        ~0 interface)
//	unknown service address       -                                             -           none: the service-CIDR route drops
//	(or no usable backend)                                                                  it, as under nat44 (FACTS §4)
//	cluster IP (IPv4, in the      -                                             -           ip_route_add_del /32 ICMP_PROHIBIT in
//	service CIDR; rejects made)                                                             the main VRF (BuildRoutes), reached from
//	                                                                                        the pod VRF by its service-CIDR
//	                                                                                        lookup: its untranslated ports are
//	                                                                                        refused
//	ExternalIP / LoadBalancer IP  one path: the reject sink (the service CIDR's  0 / 1       cnat_translation_update; the sink's
//	/ NodePort of a port without  first address) at the frontend's port                     /32 (/128) ICMP_PROHIBIT route in
//	an endpoint of its family                                                               the main VRF (BuildRoutes); rejects made
//	ExternalIP / LoadBalancer IP, one path: the drop sink (the IPv4 service     0           cnat_translation_update
//	Local policy, no local        CIDR's last address) at its port
//	endpoint (endpoints elsewhere)
//
// Calls per change, per frontend (a NodePort is one frontend per node IP);
// none of them cuts a connection (FACTS §6):
//
//	change                                  calls
//	frontend added                          1 cnat_translation_update
//	backend added, removed or replaced      1 cnat_translation_update (the new paths)
//	affinity turned on or off               3: an identical update (returns the id),
//	                                        cnat_translation_del, an update with the new lb_type
//	affinity timeout changed                0 (cnat has no timeout)
//	frontend removed, or no backend left    2: an identical update (returns the id),
//	                                        cnat_translation_del
//	interface given a role                  2 feature_enable_disable (4 with IPv6); a pod's
//	                                        also 2 cnat_snat_policy_add_del_if (3 with IPv6)
//	service with a cluster IP added         +1 ip_route_add_del (its verdict route); removed: +1
//	or removed
//
// The service-CIDR routes are the nat44 renderer's (FACTS §4: a route for
// the service CIDR in the pod and the main VRF drops a packet to an
// unmapped service address instead of letting it leave by the default
// route, without touching mapped traffic). Measured under cnat too
// (records-verdicts/verdicts-cnat.jsonl, the agent's node configuration):
// in the features mode the agent uses, cnat translates in the
// cnat-input-ip4/ip6 feature on the ingress interface, before the FIB
// lookup, so the DROP route catches only packets no translation matched
// (a cluster IP inside the dropped service CIDR is served, from a pod and
// from outside); a translated packet is forwarded to its backend, or to
// the route of the address it was translated to (the sinks below).
//
// # Verdicts (kube-proxy's REJECT and DROP)
//
// So a packet to a cluster IP on a port no
// translation has (no endpoints, or a port the service does not define)
// reaches the FIB: the renderer gives each IPv4 cluster IP in a service
// CIDR the NAT44 renderer's verdict routes (the choice is
// servicerenderer.RejectIPs, shared with it): a /32 reject route
// (ICMP_PROHIBIT) in the main VRF, which refuses it at once (measured under
// cnat: TCP 26-59 ms, UDP ~0.35 s "No route to host",
// records-verdicts/verdicts-cnat.jsonl). Pod traffic reaches it through the
// pod VRF's route of the service CIDR, a lookup of the main VRF
// (servicerenderer.PodServiceLookup; ServiceRoutes), where the cluster
// IP's reject or the service CIDR's drop decides: one route per cluster
// IP. Rejects are made where VPP takes them (servicerenderer.Rejects):
// FACTS §1, a reject path in any table but 0 crashes VPP 25.02, so there a
// main VRF other than 0 gets none and the pod VRF's route is a drop; on a
// release that takes them in any table (Config.RejectAnyTable, from the
// agent's first connection: 26.06) they are made in whatever main VRF. Earlier versions kept a pod-VRF drop and a /32 lookup per
// cluster IP: both are taken for the renderer's, and a full apply
// replaces the drop by the lookup with one add (VPP replaces the path in
// place: no delete; ASSUMPTION: no moment without a route, the replace is
// recorded, its timing not) before deleting the /32 lookups; no
// translation is written. A cluster IP that one of its service's ports
// translates gets no reject route when the main VRF is table 0: cnat puts
// a translated address in table 0 with its own FIB source, which outranks
// the API's, so the route would forward nothing (measured on 25.02: a port
// a translated cluster IP does not define is dropped, not refused). It
// gets its route when its last translation goes, in the same apply and
// before that translation's delete (planChanges), and loses it after its
// first translation is made. This halved a first programming's calls at
// W(10000) (10 003 reject routes of 21 036 calls, issue 34). Otherwise:
//
//   - an unallocated service-CIDR address: dropped (the main VRF's
//     service-CIDR route);
//   - a cluster IP under the Local internal policy whose endpoints are
//     all on other nodes: no translation and no reject route, so the
//     service-CIDR route drops it (kube-proxy's DROP);
//   - a LoadBalancer or external IP, or a NodePort, of a port without an
//     endpoint of its family, of a service with a cluster IP of that
//     family (kube-proxy's REJECT; a family the service does not serve is
//     left untranslated, as kube-proxy leaves it): a translation with
//     one path to the reject sink, the service CIDR's first address
//     (servicerenderer.RejectSink; Kubernetes never allocates it), whose
//     /32 (IPv6: /128, with the IPv6 path protocol) reject route in the
//     main VRF refuses it (a translated packet is looked up in its
//     interface's table, the pod VRF's reaching the main VRF's); cnat-output translates the ICMP error back to the
//     frontend (measured, records-verdicts/verdicts-cnat.jsonl: TCP 9-15
//     ms from outside and from a pod, the NodePort alike; UDP with
//     ICMP_PROHIBIT 0.13-0.43 s, "No route to host"). No route outside
//     the service CIDR is needed: an untagged one could not be told from
//     another program's after a restart. Where no reject is made (main
//     VRF other than 0 on 25.02): no translation (routed on by
//     destination, as before);
//   - a LoadBalancer or external IP under the Local external policy with
//     no local endpoint (endpoints elsewhere; kube-proxy's DROP): one path
//     to the drop sink, the IPv4 service CIDR's last address
//     (servicerenderer.DropSink), which the service-CIDR route drops
//     (measured: the client times out, from outside and from a pod). No
//     IPv6 drop sink (Kubernetes allocates an IPv6 range's last address):
//     an IPv6 one is routed on, as before. A NodePort without a local
//     endpoint is not translated: ip4-local drops it (measured alike with
//     a drop-sink translation: both time out);
//   - IPv6 cluster IPs: no reject route. Measured: VPP survives a /128
//     reject in table 0 (and crashes on one in table 1, as IPv4), but the
//     ICMPv6 error leaves cnat-output with its inner header rewritten to
//     the node's IPv6 SNAT address, from outside and from a pod, so the
//     client ignores it and times out; the IPv6 service-CIDR route drops
//     (a drop in the pod VRF too). (IPv4 from outside shows the same
//     rewrite: an outside client of a cluster IP's undefined port times
//     out; pods, the case kube-proxy's REJECT is for, are refused.)
//
// Translations to a sink are the renderer's whatever their VIP when every
// path goes to a sink (sinkOnly): one left on the external IP of a service
// deleted while the agent was down is deleted by the next full apply
// (ASSUMPTION: no other program translates to a service CIDR's first or
// last address).
// Switching a frontend between a sink and backends is one
// cnat_translation_update, which cuts no connection (FACTS §6).
//
// Ownership as for the drop routes: routes have no tag, so a /32 reject in
// the main VRF, or a /32 lookup of the main VRF in the pod VRF (an earlier
// version's), on an address of an IPv4 service CIDR, and a /128 reject in
// the main VRF in an IPv6 one (the IPv6 reject sink's), is the renderer's
// (ASSUMPTION: whoever made it). Every
// full apply reads them back (ip_route_v2_dump of the pod and the main
// VRF): a restarted agent writes nothing, one whose service is gone is
// deleted. They are not in the node record (Store): the key decides, and
// recording them would make each service change rewrite the record. One
// left in a service CIDR no longer configured stays (not owned any more).
// The views (DesiredNode, AppliedNode) list them as Node.Verdicts, which
// agent.TraceCNAT reads.
//
// Weights: cnat has no weight field; when a translation has local and
// remote backends, each local backend's path is repeated
// serviceLocalEndpointWeight times (VPP spreads over paths, FACTS §6).
//
// # What VPP cannot tell, and the renderer's bookkeeping
//
//   - Ownership: translations have no tag. The renderer's are those on a
//     key a service claims, in a service CIDR, on a node IP within the
//     NodePort range, or on an external IP of a known service; every other
//     translation is foreign and never touched (Stats.Foreign counts them).
//   - is_real_ip, flags and flow_hash_config are never dumped: is_real_ip
//     is derived from the VIP being a node IP, the flow hash from the LB
//     type (Maglev only with affinity), flags are never set. A restarted
//     agent over an unchanged VPP makes no write.
//   - Ids are reused last in, first out: no id is kept. A full apply
//     deletes by the ids its own dump read; an incremental delete re-reads
//     the id from the reply of an identical update of the key.
//   - Node configuration (SNAT policy, tables, exclude prefixes, features)
//     cannot be read back, and enabling a feature twice puts it on the arc
//     twice: the renderer records what it applied (in memory and in the
//     optional Store) and sets the SNAT addresses last; a full apply trusts
//     the record only while VPP reports those addresses. A VPP restart
//     reaches the renderer so: plugins/vpp's connection notices, on
//     reconnecting, that VPP's process ID changed (Event.Restarted); the
//     agent (agent/vppwire.go) then queues a healing resync marked
//     DataplaneRestarted; in that resync, on the loop, the service
//     processor calls VPPRestarted on each renderer that implements
//     servicerenderer.Restarter, before the full apply. Without it, a full
//     apply still notices a restart: a restarted VPP reports no SNAT
//     address.
//   - Drop routes (and verdict routes, see Verdicts) are read back
//     (ip_route_v2_dump of the pod and main VRF)
//     by every full apply: a restarted agent writes nothing, a route VPP
//     lost is added again. Routes have no tag: a drop (or, in the pod
//     VRF, a lookup of the main VRF) on a service CIDR in the pod or main
//     VRF is the renderer's (as for nat44); one on a CIDR
//     no longer configured is deleted only while the trusted record says
//     the renderer added it.
//   - cnat_session_purge is never sent: it deletes every session and every
//     translation.
//   - Tables: after a VPP restart the API answers before the startup
//     configuration has made the pod VRF's table, and a route into it
//     answers -3 for seconds (FACTS §6). Such a route waits
//     (PendingTables), as an interface's configuration waits for the
//     interface: not a failure, no healing; an apply with interface news
//     tries it again.
//
// # Calls and logs
//
// With a VPP that implements Pipeliner (plugins/vpp.CNAT does), Apply
// sends translation updates, deletes by a dumped id and interfaces'
// features and tables without waiting for each answer (Pipelined); an
// object's next call waits for its previous answer, so results per object
// are as in a synchronous apply. Each apply logs one line ("cnat
// applied") with the translations added, removed and updated, the node
// calls, all calls, the invalid and transient failures, the pending
// interfaces, whether it pipelined and how long it took; at debug level
// when an incremental apply called nothing.
//
// # Differences from nat44
//
//   - Affinity: Kubernetes' ClientIP affinity has a timeout; cnat has none.
//     Maglev with the source-IP hash is stateless stickiness: a client
//     stays on its backend as long as the backend set does not change;
//     when a backend leaves only its clients move (Maglev), and the
//     timeout is ignored.
//   - Drain: no translation change cuts an established connection. A
//     removed backend keeps its connections and gets no new ones (graceful
//     termination by construction); nat44 cuts a leaving backend's
//     sessions. A deleted translation lets existing connections finish.
//     Which backends a frontend has is the service processor's choice, as
//     for nat44: serving-and-terminating endpoints only when none is ready
//     (scenario draining-connections in agent/testdata/scenarios).
//   - IPv6: cluster IPs, external IPs, NodePorts and backends of both
//     families are rendered (nat44 is IPv4 only). The node's IPv6 part
//     (the -ip6 features, INCLUDE_V6, an IPv6 SNAT address, IPv6 exclude
//     prefixes) follows Config.NodeIP6 and the IPv6 CIDRs, which the agent
//     fills from contivconf's nodeConfig[].mainInterface.ipv6CIDR,
//     ipam.podSubnetCIDRv6 and ipam.serviceCIDRv6 (scenario ipv6-node
//     in agent/testdata/scenarios); IPAM itself allocates IPv4 only. The
//     agent also publishes that ipv6CIDR address in the node's NodeSync
//     record, after the IPv4 one, so it reaches LocalNode.IPs: NodePorts
//     are translated on it to the service's IPv6 backends (none for an
//     IPv4-only service), with is_real_ip as on the IPv4 node IP
//     (ASSUMPTION: not recorded on VPP; see BuildService).
//   - No twice-NAT: local backends see the real client; remote backends and
//     hairpin traffic see the node IP (cnat's K8S source-NAT policy).
//   - A frontend with no backend has no translation: its traffic is not
//     translated; a cluster IP's is refused by its reject route, the rest
//     of the service CIDR dropped (the same ends as nat44's, measured);
//     LoadBalancer and external IPs and NodePorts get a translation to a
//     sink instead (see Verdicts): unlike nat44's, cnat's rejects reach
//     them.
//   - The renderer never removes nat44's state, nor nat44 the renderer's:
//     switching a node is an operator's procedure (docs/operations.md).
//
// # Shared with nat44 (package reconcile)
//
// The claims on frontends (the oldest service wins; a conflict is logged
// once per frontend and losing service, and logged resolved, as under
// nat44), the desired/applied/dirty bookkeeping, the interfaces and
// tables waited for, the failures, the run of operations and the apply
// skeleton are reconcile's. So is the lock contract: the controller's loop
// is the only writer; the introspection methods read snapshots; no lock
// is held while VPP is called (VPPRestarted, called on the loop during the
// restart's resync, raises a flag the next Apply takes).
//
// The agent builds the renderer with renderer: cnat (agent/renderers.go,
// the /v1/cnat view); offline.Render and contivctl render --renderer cnat
// run it offline into the simulated VPP.
package cnat
