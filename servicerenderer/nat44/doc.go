// Package nat44 renders ContivServices into VPP NAT44-ED configuration.
//
// It provides three layers:
//
//   - Build (pure): BuildService turns one ContivService into its mappings
//     on this node; BuildGlobal the plugin settings, pools, interface
//     features and the identity mappings of source NAT.
//   - Diff (pure): Diff compares a desired with an applied State and yields
//     the ordered operations that turn one into the other, with endpoint
//     changes of a load-balanced mapping done in place, one local per call.
//   - Renderer: implements servicerenderer.Renderer by recording each change
//     at a cost proportional to that change, and Apply (the controller's
//     Applier) issues the calls for what changed, or after a resync dumps
//     VPP and issues only the differences, through the small VPP interface
//     (plugins/vpp implements it over govpp and a simulated VPP).
//
// Ownership: the agent owns the plugin settings, the pool addresses and the
// interface features of the VPP it runs beside; mappings and identity
// mappings are its own only when their tag starts with Config.TagPrefix.
// Foreign mappings are never changed or deleted; a frontend a foreign
// mapping holds is reported as a failure.
//
// Frontends without backends: a frontend with no backend to send to (no
// endpoints, or none on this node under a Local policy) gets no mapping, so
// with forwarding on its traffic passes untranslated. For a NodePort that
// means the node's own stack answers (nothing listens there: a reset or an
// ICMP port-unreachable, close to kube-proxy's reject); for cluster,
// external and LoadBalancer IPs the packet is routed by its destination.
// kube-proxy drops such traffic instead; doing so needs a drop route
// outside NAT44, which this package does not program (a known gap).
//
// Two services claiming one frontend address:port/protocol: the oldest
// (then the lower ID) wins, the other is logged once and listed by
// Conflicts, and takes over when the winner goes away.
//
// The package knows nothing about etcd, the controller, govpp or
// Kubernetes objects: it sees ContivServices and the VPP interface.
package nat44
