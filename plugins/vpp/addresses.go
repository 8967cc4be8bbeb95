package vpp

import (
	"context"
	"fmt"
	"net/netip"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	ipapi "go.fd.io/govpp/binapi/ip"
)

// HoldingAddress finds the interface that holds addr (IPv4 or IPv6) among
// the cached interfaces, reading each one's addresses from VPP
// (ip_address_dump, one call per interface). ok is false when none does,
// as before VPP's startup configuration has addressed its NICs.
func (t *Interfaces) HoldingAddress(ctx context.Context, addr netip.Addr) (_ Interface, ok bool, err error) {
	addr = addr.Unmap()
	for _, i := range t.List() {
		found := false
		err := t.conn.dump(ctx, &ipapi.IPAddressDump{SwIfIndex: interface_types.InterfaceIndex(i.Index), IsIPv6: addr.Is6()},
			func(m api.Message) error {
				d, ok := m.(*ipapi.IPAddressDetails)
				if !ok {
					return fmt.Errorf("ip_address_dump: unexpected %s", m.GetMessageName())
				}
				if a, ok := netip.AddrFromSlice(d.Prefix.Address.ToIP()); ok && a.Unmap() == addr {
					found = true
				}
				return nil
			})
		if err != nil {
			return Interface{}, false, fmt.Errorf("reading the addresses of VPP interface %s: %w", i.Name, err)
		}
		if found {
			return i, true, nil
		}
	}
	return Interface{}, false, nil
}
