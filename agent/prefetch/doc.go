// Package prefetch reads VPP's NAT44 state and routes ahead at the
// agent's start, while the controller lists etcd, so that the NAT44
// renderer's first full apply need not wait for its dump. It is for the
// agent's wiring, which hands the renderer a NAT44 (plugins/vpp's port
// with the read-ahead) and starts it once VPP is connected. The contract:
// the read-ahead stands for one dump only when nothing can have changed
// VPP since it was read (VPP this agent's, the same connection, no write
// through the port, the ownership check not having marked VPP); otherwise
// every Dump is VPP's own, as without it.
package prefetch
