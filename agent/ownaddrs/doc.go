// Package ownaddrs follows this node's own VPP addresses from IPAM's
// publish, through NodeSync's record in etcd and back to the service
// processor, to the apply that programs their NodePorts. It is for the
// agent's wiring and readiness: PublishTap records what IPAM publishes,
// the processor's view of this node reports what it read (Tracker.Saw),
// and readiness records each successful apply. The contract: Missing
// lists the published addresses no successful apply has seen yet, and
// Reason turns them into the reason the agent is not ready.
package ownaddrs
