package core

import (
	"context"
	"net/netip"

	"contiv.dev/vpp/servicerenderer/cnat"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// CountingVPP is a VPP that executes nothing: it counts the operations the
// apply step issues, and its dump answers an empty NAT44 state, as a VPP
// that was just started. It keeps nothing, so it adds nothing to the heap
// being measured.
type CountingVPP struct {
	Calls int
	Dumps int
}

var _ nat44.VPP = (*CountingVPP)(nil)

func (c *CountingVPP) SetGlobal(context.Context, nat44.Global) error { c.Calls++; return nil }

func (c *CountingVPP) AddDelPoolAddress(context.Context, nat44.PoolAddress, bool) error {
	c.Calls++
	return nil
}

func (c *CountingVPP) SetInterfaceFeatures(context.Context, string, nat44.Features, nat44.Features) (uint32, error) {
	c.Calls++
	return 1, nil
}

func (c *CountingVPP) AddDelMapping(context.Context, *nat44.Mapping, bool) error {
	c.Calls++
	return nil
}

func (c *CountingVPP) AddDelLBLocal(context.Context, nat44.MappingKey, nat44.Local, bool) error {
	c.Calls++
	return nil
}

func (c *CountingVPP) AddDelIdentity(context.Context, *nat44.Identity, bool) error {
	c.Calls++
	return nil
}

func (c *CountingVPP) AddDelRoute(context.Context, nat44.Route, bool) error {
	c.Calls++
	return nil
}

func (c *CountingVPP) DumpRoutes(context.Context, []uint32) ([]nat44.Route, error) {
	c.Dumps++
	return nil, nil
}

func (c *CountingVPP) Dump(context.Context) (*nat44.State, error) {
	c.Dumps++
	return nat44.NewState(), nil
}

var _ cnat.VPP = (*CountingVPP)(nil)

func (c *CountingVPP) UpdateTranslation(context.Context, *cnat.Translation) (uint32, error) {
	c.Calls++
	return 0, nil
}

func (c *CountingVPP) DeleteTranslation(context.Context, uint32) error { c.Calls++; return nil }

func (c *CountingVPP) DumpTranslations(context.Context) ([]cnat.Dumped, error) {
	c.Dumps++
	return nil, nil
}

func (c *CountingVPP) SNATAddresses(context.Context) (netip.Addr, netip.Addr, error) {
	c.Dumps++
	return netip.IPv4Unspecified(), netip.IPv6Unspecified(), nil
}

func (c *CountingVPP) SetSNATAddresses(context.Context, netip.Addr, netip.Addr) error {
	c.Calls++
	return nil
}

func (c *CountingVPP) SetSNATPolicy(context.Context, cnat.SNATPolicy) error { c.Calls++; return nil }

func (c *CountingVPP) AddDelExcludePrefix(context.Context, netip.Prefix, bool) error {
	c.Calls++
	return nil
}

func (c *CountingVPP) AddDelSNATInterface(context.Context, string, cnat.SNATTable, bool) (uint32, error) {
	c.Calls++
	return 1, nil
}

func (c *CountingVPP) EnableDisableFeature(context.Context, string, cnat.Feature, bool) (uint32, error) {
	c.Calls++
	return 1, nil
}

func (c *CountingVPP) AddDelFIBRoute(context.Context, cnat.Route, bool) error {
	c.Calls++
	return nil
}

func (c *CountingVPP) DumpFIBRoutes(context.Context, []uint32, bool) ([]cnat.Route, error) {
	c.Dumps++
	return nil, nil
}
