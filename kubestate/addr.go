package kubestate

import (
	"net/netip"
	"strings"
)

// compactAddr returns the address s is the usual text of (netip.Addr's
// String, no zone) and its flag; false for anything else.
func compactAddr(s string) (a [16]byte, flag uint32, ok bool) {
	if v4, ok := parseDotted(s); ok {
		copy(a[:], v4[:])
		return a, fAddr4, true
	}
	if len(s) > 45 || strings.IndexByte(s, ':') < 0 {
		return a, 0, false
	}
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" || !ip.Is6() {
		return a, 0, false
	}
	var buf [48]byte
	if string(ip.AppendTo(buf[:0])) != s {
		return a, 0, false
	}
	return ip.As16(), fAddr6, true
}

// parseDotted reads an IPv4 address in its usual text: four decimal
// fields of 0..255 without leading zeros.
func parseDotted(s string) (a [4]byte, ok bool) {
	field, n, digits := 0, 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			if digits == 1 && n == 0 {
				return a, false // a leading zero
			}
			n = n*10 + int(c-'0')
			digits++
			if n > 255 {
				return a, false
			}
		case c == '.' && digits > 0 && field < 3:
			a[field] = byte(n)
			field, n, digits = field+1, 0, 0
		default:
			return a, false
		}
	}
	if field != 3 || digits == 0 {
		return a, false
	}
	a[3] = byte(n)
	return a, true
}
