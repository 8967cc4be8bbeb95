// Package simnode is what a simulated VPP node has beside the agent: the
// interfaces its startup configuration creates (Interfaces,
// EnsureInterfaces) and a CNI that gives every local pod a tagged tap
// interface (CNI, a controller handler). The agent's simulated dataplane
// and the offline render use it. NOTHING FORWARDS PACKETS.
package simnode
