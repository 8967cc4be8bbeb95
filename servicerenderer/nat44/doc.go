// Package nat44 renders ContivServices into VPP NAT44-ED configuration.
//
// Build (pure) turns services, interface roles and this node's addresses
// into a desired State; Diff (pure) compares desired with applied state and
// yields the minimal list of operations; the apply step runs them through
// the small VPP interface, which plugins/vpp implements over govpp. It knows
// nothing about etcd, the controller or Kubernetes objects.
package nat44
