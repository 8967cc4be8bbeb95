package servicerenderer

import (
	"cmp"
	"encoding/binary"
	"net/netip"
)

// IP is a backend's address without a pointer: its 16-byte form and its
// family. A Backend holding one is pointer-free, so the processor's
// hundreds of thousands of backends are memory the garbage collector
// does not scan, and 8 bytes smaller than with a netip.Addr. It compares,
// prints and encodes (text, JSON) as the netip.Addr it stands for; a
// zone is not kept (the processor never makes a backend of a zoned
// address). The zero IP is invalid, as the zero netip.Addr.
type IP struct {
	a   [16]byte
	bit uint8 // 0: invalid; 32: IPv4; 128: IPv6 (netip.Addr's BitLen)
}

// IPOf is the IP of a (without its zone).
func IPOf(a netip.Addr) IP {
	return IP{a: a.As16(), bit: uint8(a.BitLen())}
}

// Addr is the address as a netip.Addr.
func (ip IP) Addr() netip.Addr {
	switch ip.bit {
	case 32:
		return netip.AddrFrom4(ip.As4())
	case 128:
		return netip.AddrFrom16(ip.a)
	}
	return netip.Addr{}
}

// IsValid reports whether ip is an address (not the zero IP).
func (ip IP) IsValid() bool { return ip.bit != 0 }

// Is4 reports whether ip is an IPv4 address.
func (ip IP) Is4() bool { return ip.bit == 32 }

// Is6 reports whether ip is an IPv6 address (IPv4-mapped ones included).
func (ip IP) Is6() bool { return ip.bit == 128 }

// As4 is the IPv4 address's 4 bytes (the last four of its 16-byte form).
func (ip IP) As4() [4]byte { return [4]byte(ip.a[12:]) }

// As16 is the address's 16-byte form (IPv4 addresses as IPv4-mapped).
func (ip IP) As16() [16]byte { return ip.a }

// Compare orders as netip.Addr.Compare: by family (invalid, IPv4, IPv6),
// then by address. It takes pointers: sorting backends calls it often,
// and so it is inlined and copies nothing.
func (ip *IP) Compare(o *IP) int {
	if ip.bit != o.bit {
		return cmp.Compare(ip.bit, o.bit)
	}
	if c := cmp.Compare(binary.BigEndian.Uint64(ip.a[:8]), binary.BigEndian.Uint64(o.a[:8])); c != 0 {
		return c
	}
	return cmp.Compare(binary.BigEndian.Uint64(ip.a[8:]), binary.BigEndian.Uint64(o.a[8:]))
}

// String prints the address as netip.Addr does.
func (ip IP) String() string { return ip.Addr().String() }

// MarshalText encodes the address as netip.Addr does.
func (ip IP) MarshalText() ([]byte, error) { return ip.Addr().MarshalText() }

// UnmarshalText decodes what MarshalText encodes.
func (ip *IP) UnmarshalText(b []byte) error {
	var a netip.Addr
	if err := a.UnmarshalText(b); err != nil {
		return err
	}
	*ip = IPOf(a)
	return nil
}

// Unmap is ip with an IPv4-mapped IPv6 address made IPv4.
func (ip IP) Unmap() IP {
	if ip.bit == 128 && binary.BigEndian.Uint64(ip.a[:8]) == 0 && binary.BigEndian.Uint32(ip.a[8:12]) == 0xffff {
		ip.bit = 32
	}
	return ip
}
