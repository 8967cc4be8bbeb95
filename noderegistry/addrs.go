package noderegistry

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"contiv.dev/vpp/kubestate"
)

// Addresses are the addresses a node publishes in its record.
type Addresses struct {
	// VppIPs are the node's VPP interface addresses with their network
	// length, e.g. 192.168.16.1/24 and 2001:db8:16::1/64; a record stores
	// them IPv4 first.
	VppIPs []netip.Prefix
	// MgmtIPs are the node's management (host) addresses.
	MgmtIPs []netip.Addr
}

// canonical returns the addresses as a record stores them: text, sorted
// (IPv4 before IPv6), without duplicates.
func (a Addresses) canonical() (vpp, mgmt []string) {
	ps := slices.Clone(a.VppIPs)
	slices.SortFunc(ps, netip.Prefix.Compare)
	for _, p := range slices.Compact(ps) {
		vpp = append(vpp, p.String())
	}
	as := slices.Clone(a.MgmtIPs)
	slices.SortFunc(as, netip.Addr.Compare)
	for _, ip := range slices.Compact(as) {
		mgmt = append(mgmt, ip.String())
	}
	return vpp, mgmt
}

// RecordAddresses parses a record's addresses. Bad ones are left out and
// reported (naming the node and the value); the rest are returned.
func RecordAddresses(rec *kubestate.VppNode) (Addresses, error) {
	var a Addresses
	var vppErr, mgmtErr error
	a.VppIPs, vppErr = parseEach(rec.VppIPs, netip.ParsePrefix, func(s string) error {
		return fmt.Errorf("node %s: VPP IP %q: want an address with its prefix length", rec.Name, s)
	})
	a.MgmtIPs, mgmtErr = parseEach(rec.MgmtIPs, netip.ParseAddr, func(s string) error {
		return fmt.Errorf("node %s: management IP %q: not an address", rec.Name, s)
	})
	return a, errors.Join(vppErr, mgmtErr)
}

// parseEach parses each of ss; a bad one is left out and reported as bad
// says.
func parseEach[T any](ss []string, parse func(string) (T, error), bad func(s string) error) ([]T, error) {
	var out []T
	var errs []error
	for _, s := range ss {
		v, err := parse(s)
		if err != nil {
			errs = append(errs, bad(s))
			continue
		}
		out = append(out, v)
	}
	return out, errors.Join(errs...)
}

// MgmtIPs returns a Kubernetes node's management addresses: its InternalIP
// and ExternalIP entries, sorted. Bad ones are left out and reported.
func MgmtIPs(n *kubestate.Node) ([]netip.Addr, error) {
	var ips []netip.Addr
	var errs []error
	for _, a := range n.Addresses {
		if a.Type != "InternalIP" && a.Type != "ExternalIP" {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s: %s %q: not an address", n.Name, a.Type, a.Address))
			continue
		}
		ips = append(ips, ip.Unmap())
	}
	slices.SortFunc(ips, netip.Addr.Compare)
	return slices.Compact(ips), errors.Join(errs...)
}
