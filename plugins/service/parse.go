package service

import (
	"net/netip"
	"slices"

	sr "contiv.dev/vpp/servicerenderer"
)

// parseIP parses an address the data plane can use: no zone, not
// unspecified, not an IPv4-mapped IPv6 address.
func parseIP(s string) (netip.Addr, bool) {
	if ip, ok := parseDotted(s); ok {
		return ip, !ip.IsUnspecified()
	}
	ip, err := netip.ParseAddr(s)
	if err != nil || !usableIP(ip) {
		return netip.Addr{}, false
	}
	return ip, true
}

// usableIP tells whether the data plane can use ip, as parseIP.
func usableIP(ip netip.Addr) bool {
	return ip.Zone() == "" && !ip.IsUnspecified() && !ip.Is4In6()
}

// parseDotted reads the usual form of an IPv4 address, four decimal
// fields of 0..255 without leading zeros, at a third of netip.ParseAddr's
// cost (a resync parses every endpoint's address); false on anything
// else, which netip.ParseAddr then judges. What it accepts, ParseAddr
// accepts as the same address.
func parseDotted(s string) (netip.Addr, bool) {
	var a [4]byte
	field, n, digits := 0, 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			if digits == 1 && n == 0 {
				return netip.Addr{}, false // a leading zero
			}
			n = n*10 + int(c-'0')
			digits++
			if n > 255 {
				return netip.Addr{}, false
			}
		case c == '.' && digits > 0 && field < 3:
			a[field] = byte(n)
			field, n, digits = field+1, 0, 0
		default:
			return netip.Addr{}, false
		}
	}
	if field != 3 || digits == 0 {
		return netip.Addr{}, false
	}
	a[3] = byte(n)
	return netip.AddrFrom4(a), true
}

// parseProtocol maps a Kubernetes protocol to a NAT44 one; the reason is
// non-zero when the protocol cannot be rendered.
func parseProtocol(s string) (sr.Protocol, Reason) {
	switch s {
	case "", "TCP":
		return sr.TCP, 0
	case "UDP":
		return sr.UDP, 0
	case "SCTP":
		return 0, ReasonSCTP
	}
	return 0, ReasonUnknownProtocol
}

// sortAddrs sorts and deduplicates ips; nil when empty.
func sortAddrs(ips []netip.Addr) []netip.Addr {
	if len(ips) == 0 {
		return nil
	}
	if len(ips) > 1 {
		slices.SortFunc(ips, netip.Addr.Compare)
		ips = slices.Compact(ips)
	}
	return ips
}
