package sim

import (
	"go.fd.io/govpp/api"
	ipapi "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
)

// ipAddressDump lists the IPv4 address of one interface (the simulated
// interfaces have at most one, set by InterfaceSpec.Address).
// ASSUMPTION: the corpus records no ip_address_dump; the reply follows
// VPP's API definition: one ip_address_details per address of the
// interface asked for, none for IPv6 here and for an unknown index.
func (v *VPP) ipAddressDump(req *ipapi.IPAddressDump) []api.Message {
	i, ok := v.ifaces[uint32(req.SwIfIndex)]
	if !ok || req.IsIPv6 || !i.addr.IsValid() {
		return nil
	}
	return []api.Message{&ipapi.IPAddressDetails{
		SwIfIndex: req.SwIfIndex,
		Prefix: ip_types.AddressWithPrefix{
			Address: ip_types.NewAddress(i.addr.Addr().AsSlice()),
			Len:     uint8(i.addr.Bits()),
		},
	}}
}
