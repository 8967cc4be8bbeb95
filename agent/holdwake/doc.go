// Package holdwake wakes the controller when the NAT44 renderer's hold of
// mapping operations runs out. After a VPP restart the renderer holds the
// mappings of a node interface until the interface's features are back
// (servicerenderer/nat44 hold.go), for at most a bound; if no interface
// event makes the controller apply before the bound, nothing would apply
// what was held. It is for the agent's wiring: arm the Waker after every
// apply; it pushes one Expired event a moment after the bound, none when
// nothing is held, and none after Stop.
package holdwake
