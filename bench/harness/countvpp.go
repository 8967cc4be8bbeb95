package harness

import (
	"context"

	"contiv.dev/vpp/servicerenderer/nat44"
)

// countingVPP is a VPP that executes nothing: it counts the operations the
// apply step issues, and its dump answers an empty NAT44 state, as a VPP
// that was just started. It keeps nothing, so it adds nothing to the heap
// being measured.
type countingVPP struct {
	calls int
	dumps int
}

var _ nat44.VPP = (*countingVPP)(nil)

func (c *countingVPP) SetGlobal(context.Context, nat44.Global) error { c.calls++; return nil }

func (c *countingVPP) AddDelPoolAddress(context.Context, nat44.PoolAddress, bool) error {
	c.calls++
	return nil
}

func (c *countingVPP) SetInterfaceFeatures(context.Context, string, nat44.Features, nat44.Features) (uint32, error) {
	c.calls++
	return 1, nil
}

func (c *countingVPP) AddDelMapping(context.Context, *nat44.Mapping, bool) error {
	c.calls++
	return nil
}

func (c *countingVPP) AddDelLBLocal(context.Context, nat44.MappingKey, nat44.Local, bool) error {
	c.calls++
	return nil
}

func (c *countingVPP) AddDelIdentity(context.Context, *nat44.Identity, bool) error {
	c.calls++
	return nil
}

func (c *countingVPP) AddDelRoute(context.Context, nat44.Route, bool) error {
	c.calls++
	return nil
}

func (c *countingVPP) DumpRoutes(context.Context, []uint32) ([]nat44.Route, error) {
	c.dumps++
	return nil, nil
}

func (c *countingVPP) Dump(context.Context) (*nat44.State, error) {
	c.dumps++
	return nat44.NewState(), nil
}
