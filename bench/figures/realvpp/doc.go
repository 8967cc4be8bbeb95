// Package realvpp measures W(N) programmed by the agent's pipeline into a
// real VPP, and VPP's main heap before and after (figure real-vpp). It is
// for whoever runs the benchmark beside a freshly started VPP (never CI).
// The figure runs only when named, with Options.VPPSocket, and that VPP
// must serve nothing else (the figure makes loopbacks and a table in it);
// its result is the key real_vpp of bench/results.json.
package realvpp
