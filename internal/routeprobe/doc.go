// Command routeprobe measures a real VPP's own cost of the agent's reject
// routes (issue 34: W(10000) first programming): N /32 ip_route_add_del in
// table 0 (ICMP_PROHIBIT, or DROP), pipelined on one govpp stream with at
// most -window in flight as the agent sends them (or one at a time with
// -sync), then deleted; with -cover under the service CIDR's /12 DROP
// route, with -random spread over the /12 as Kubernetes allocates
// addresses. -kind nat44 sends a load-balanced NAT44 mapping (2 locals)
// per address instead, -kind cnat a cnat translation (1 path): what the
// routes cost beside the calls they come with. It prints the wall time and
// VPP's CPU time (/proc/<-pid>/stat) per call. Run it against a VPP of its own (never a node's):
//
//	routeprobe -socket /tmp/x/api.sock -pid $(pidof vpp) -n 10000 -cover
//
// Not part of the agent.
package main
