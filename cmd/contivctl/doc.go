// Command contivctl is the operator's command-line tool.
//
// Subcommands that inspect a running agent read its JSON views over HTTP
// (--agent URL or host:port; default http://127.0.0.1:9999, or the
// CONTIVCTL_AGENT environment variable) and print aligned tables, or with
// -o json the view as the agent serves it:
//
//	services [--skipped]   ContivServices: cluster and external IPs, one row
//	                       per port with its backends (how many local, and
//	                       how many a Local traffic policy uses), nodePort,
//	                       traffic policies, session affinity; --skipped
//	                       lists what was left out, and why; under the
//	                       table, each health-check NodePort and each
//	                       service's source ranges: NOT enforced on this
//	                       node, and why (cnat; VPP without acl_plugin.so),
//	                       from /v1/skipped, or enforced
//	nat44 [--applied]      the desired (or applied) NAT44 state, one sorted
//	                       line per object, then failures and conflicts
//	renderer               the renderer that runs (nat44 or cnat), in one
//	                       shape: apply counters, failures, conflicts,
//	                       pending interfaces and FIB tables (/v1/renderer)
//	nodes                  node names, IDs, VPP and management IPs
//	ipam                   the address plan and the pod IPs allocated
//	status                 readiness, VPP connection (SIMULATED when so),
//	                       controller, and one RENDERER row (/v1/renderer)
//	doctor [--allow-simulated]
//	                       names each missing piece of the node (VPP not
//	                       connected, main NIC not found, an interface VPP
//	                       or the CNI has not created — with its role —,
//	                       a FIB table VPP has not made, objects VPP refused
//	                       (either renderer), etcd lost, a SIMULATED
//	                       VPP; a warning for an optional VPP plugin VPP
//	                       lacks, e.g. acl_plugin.so) with what to do, from /v1/status, /v1/config,
//	                       /v1/interfaces and /v1/renderer; exit 1 when a check
//	                       fails (docs/vpp-node.md)
//	latency                network programming latency (the kube-proxy
//	                       SLI): p50, p99, max over the latest changes
//
// Offline, without an agent:
//
//	render -f FILE.yaml --node NAME [--config agent.yaml] [--node-id N] [--renderer nat44|cnat]
//	    the NAT44 state an agent on node NAME would program for the
//	    manifests, in the format of nat44 (offline.Render: the agent's own
//	    pipeline into a simulated VPP). The node's ID is --node-id, or else
//	    its position, from 1, among the file's Nodes sorted by name (the IDs
//	    NodeSync gives when nodes join in name order); its VPP IP comes from
//	    the configuration or the address plan, its management IPs from its
//	    Node's InternalIP and ExternalIP addresses. A line on standard error
//	    says which were used. Then failures, conflicts and what the service
//	    processor skipped, and why (in -o json: failures, conflicts, skipped).
//	    Through cnat (--renderer cnat, or renderer: cnat in --config): the
//	    node configuration, one line per object (snat addresses and policy,
//	    exclude prefixes, each interface's SNAT tables and features), its
//	    routes as under NAT44 (service-CIDR drop, reject, lookup), then
//	    one line per translation (key, LB type, flow hash, is_real_ip,
//	    paths), failures and skips (-o json: renderer, translations,
//	    nodeConfig, failures, skipped).
//
// Either way:
//
//	trace VIP:PORT/PROTO [--from SRC] [-f FILE.yaml --node NAME ...]
//	    which backends a packet from SRC (default 192.0.2.1, or 2001:db8::1
//	    for an IPv6 target: a client outside the cluster; SRC and the
//	    target must be of one family) to VIP:PORT/PROTO reaches, with
//	    probabilities, and the source address each backend sees (the
//	    client's, the node's twice-NAT address, or cnat's SNAT address).
//	    With -f it renders offline and asks the simulated VPP's oracle
//	    (NAT44's, or cnat's with --renderer cnat), the packet entering on
//	    the main NIC. Without, it asks the agent's renderer (/v1/config)
//	    and answers from the state VPP holds: for nat44 /v1/nat44/mappings
//	    with packettrace.NAT44, for cnat /v1/cnat and /v1/ipam (which
//	    backends are local) with packettrace.CNAT: both load that state
//	    into a simulated VPP and ask its oracle. A path repeated k times of n weighs k/n. A note on
//	    standard error says when VPP does not hold what the agent wants
//	    for the target. NAT44 translates IPv4 only: an IPv6 target needs
//	    cnat.
//
// And one that writes:
//
//	load -f FILE.yaml [--etcd host:port,...] [--prune]
//	    (--etcd defaults to the agent's embedded etcd, 127.0.0.1:12379:
//	    make run's agent answers without flags)
//	    decode Kubernetes YAML (Services, EndpointSlices, Pods, Nodes,
//	    Namespaces) and write it into etcd in the reflector's format, through
//	    the same kubestate.Writer the reflector uses; unchanged keys are not
//	    rewritten. With --prune, stored objects of the resources the file
//	    holds that the file does not name are deleted.
//
// Exit status: 0 success, 1 failure (agent unreachable, bad file, ...),
// 2 bad usage (unknown flag, bad VIP syntax, ...).
//
// main.go only wires the process; each subcommand is a function of
// (context, streams, args) returning an error, so it is tested in-process
// against embedded etcd, a served agent view or a real in-process agent.
// A new subcommand is one function and one entry in commands(). contivctl
// knows kubestate, the etcd client, and of the agent only its exported
// view types and Render (and package packettrace for the live trace).
package main
