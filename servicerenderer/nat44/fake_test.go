package nat44

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
)

// errTransient is the fake's transient failure.
var errTransient = errors.New("fake VPP: connection reset")

// fakeVPP is a stateful fake of VPP's NAT44-ED configuration enforcing the
// measured rules of VPP 25.02 (FACTS §1, §2) the renderer relies on: a
// load-balanced mapping needs at least 2 locals at creation; 256 or more
// locals in one add, or a mapping left with only probability-0 locals,
// crash VPP (the fake panics: a test failure); a local cannot be removed
// while fewer than 3 remain (-1); re-adding an existing local (whatever
// its probability) answers "value exists"; deletes of missing objects "no
// such entry"; tags are cut to 63 bytes; the dump never returns affinity;
// drop routes are idempotent (add twice, delete missing: 0). It can fail a
// chosen fraction of calls transiently, before or after taking effect (a
// lost reply), and reject chosen mappings as invalid.
type fakeVPP struct {
	mu    sync.Mutex
	state *State
	// calls logs every call but Dump, as Op strings.
	calls []string
	// dumps counts Dump calls, routeDumps DumpRoutes calls.
	dumps, routeDumps int
	// failRate is the fraction of calls (dumps included) failing
	// transiently; rng decides.
	failRate float64
	rng      *rand.Rand
	// reject makes adds of the mappings it matches fail as invalid.
	reject func(m *Mapping) bool
	// missing names interfaces VPP does not have.
	missing map[string]bool
	// index is the sw_if_index of each interface a call named (given at
	// first use); recreate gives one another.
	index  map[string]uint32
	nextIf uint32
	// otherRoutes are routes VPP holds that are not the agent's (dumped by
	// DumpRoutes along with the agent's).
	otherRoutes []Route
	// rejectAnyTable: the VPP takes a reject route in any table (26.02
	// and later); unset, one outside table 0 is refused (plugins/vpp never
	// sends it: it crashes VPP 25.02).
	rejectAnyTable bool
}

func newFakeVPP() *fakeVPP {
	return &fakeVPP{state: NewState(), rng: rand.New(rand.NewPCG(1, 2))}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("fake VPP: "+format+": %w", append(args, ErrInvalid)...)
}

// begin logs a call and decides whether it fails transiently: fail before
// it takes effect, or lost after it did.
func (f *fakeVPP) begin(op Op) (fail, lost bool) {
	f.calls = append(f.calls, op.String())
	if f.failRate > 0 && f.rng.Float64() < f.failRate {
		return true, f.rng.IntN(2) == 0
	}
	return false, false
}

// do runs one call under the fake's rules.
func (f *fakeVPP) do(op Op, apply func() error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail, lost := f.begin(op)
	if fail && !lost {
		return errTransient
	}
	if err := apply(); err != nil {
		return err
	}
	if fail {
		return errTransient
	}
	return nil
}

func (f *fakeVPP) SetGlobal(_ context.Context, g Global) error {
	return f.do(Op{Kind: OpSetGlobal, Global: g}, func() error {
		f.state.Global = g
		return nil
	})
}

func (f *fakeVPP) AddDelPoolAddress(_ context.Context, a PoolAddress, add bool) error {
	op := Op{Kind: OpDelPool, Pool: a}
	if add {
		op.Kind = OpAddPool
	}
	return f.do(op, func() error {
		has := slices.ContainsFunc(f.state.Pool, func(p PoolAddress) bool { return p.IP == a.IP })
		switch {
		case add && has:
			return invalid("pool address %s: value exists", a.IP)
		case !add && !slices.Contains(f.state.Pool, a):
			return invalid("pool address %s: no such entry", a.IP)
		}
		f.state.Apply(op)
		return nil
	})
}

// recreate is VPP deleting an interface and creating another under its
// name: features gone, another index. It returns the old index.
func (f *fakeVPP) recreate(name string) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.indexOf(name)
	delete(f.state.Interfaces, name)
	f.nextIf++
	f.index[name] = f.nextIf
	return old
}

// indexOf is the index of an interface, given at first use; f.mu held.
func (f *fakeVPP) indexOf(name string) uint32 {
	if f.index == nil {
		f.index = map[string]uint32{}
	}
	if _, ok := f.index[name]; !ok {
		f.nextIf++
		f.index[name] = f.nextIf
	}
	return f.index[name]
}

func (f *fakeVPP) SetInterfaceFeatures(_ context.Context, name string, old, new Features) (uint32, error) {
	op := Op{Kind: OpSetInterface, Interface: name, OldFeatures: old, NewFeatures: new}
	var idx uint32
	err := f.do(op, func() error {
		if name == "" || f.missing[name] {
			return fmt.Errorf("fake VPP: interface %q: %w: %w", name, ErrNoInterface, ErrInvalid)
		}
		idx = f.indexOf(name)
		if cur := f.state.Interfaces[name]; cur != old {
			return invalid("interface %s has features %s, not %s", name, cur, old)
		}
		if new&FeatureOutput != 0 && new&(FeatureIn|FeatureOut) != 0 {
			return invalid("interface %s: output feature excludes in and out", name)
		}
		f.state.Apply(op)
		return nil
	})
	return idx, err
}

func (f *fakeVPP) AddDelIdentity(_ context.Context, id *Identity, add bool) error {
	op := Op{Kind: OpDelIdentity, Identity: id}
	if add {
		op.Kind = OpAddIdentity
	}
	return f.do(op, func() error {
		_, has := f.state.Identities[id.IdentityKey]
		switch {
		case add && has:
			return invalid("identity %s: value exists", id.IdentityKey)
		case !add && !has:
			return invalid("identity %s: no such entry", id.IdentityKey)
		}
		c := *id
		c.Tag = cutTag(c.Tag)
		op.Identity = &c
		f.state.Apply(op)
		return nil
	})
}

func (f *fakeVPP) AddDelMapping(_ context.Context, m *Mapping, add bool) error {
	op := Op{Kind: OpDelMapping, Mapping: m}
	if add {
		op.Kind = OpAddMapping
	}
	return f.do(op, func() error {
		cur, has := f.state.Mappings[m.MappingKey]
		if !add {
			if !has {
				return invalid("mapping %s: no such entry", m.MappingKey)
			}
			if (len(cur.Locals) == 1) != (len(m.Locals) == 1) {
				return invalid("mapping %s: static and load-balanced APIs mixed", m.MappingKey)
			}
			f.state.Apply(op)
			return nil
		}
		switch {
		case has:
			return invalid("mapping %s: value exists", m.MappingKey)
		case len(m.Locals) == 0:
			return invalid("mapping %s: no locals", m.MappingKey)
		case m.Port == 0 || (len(m.Locals) == 1 && m.Locals[0].Port == 0):
			return invalid("mapping %s: port 0", m.MappingKey)
		case f.reject != nil && f.reject(m):
			return invalid("mapping %s: rejected", m.MappingKey)
		}
		if len(m.Locals) > MaxLocalsPerAdd {
			panic(fmt.Sprintf("fake VPP crashed (SIGABRT): mapping %s added with %d locals", m.MappingKey, len(m.Locals)))
		}
		if len(m.Locals) > 1 {
			if bad := badSum(m.Locals); bad != "" {
				panic(fmt.Sprintf("fake VPP: mapping %s added %s", m.MappingKey, bad))
			}
		}
		for i, l := range m.Locals {
			if i > 0 && compareLocals(m.Locals[i-1], l) >= 0 {
				return invalid("mapping %s: locals duplicate or unsorted", m.MappingKey)
			}
		}
		c := *m
		c.Locals = slices.Clone(m.Locals)
		c.Tag = cutTag(c.Tag)
		op.Mapping = &c
		f.state.Apply(op)
		return nil
	})
}

func (f *fakeVPP) AddDelLBLocal(_ context.Context, key MappingKey, l Local, add bool) error {
	op := Op{Kind: OpDelLocal, Mapping: &Mapping{MappingKey: key}, Local: l}
	if add {
		op.Kind = OpAddLocal
	}
	return f.do(op, func() error {
		cur, has := f.state.Mappings[key]
		switch {
		case !has:
			return invalid("mapping %s: no such entry", key)
		case len(cur.Locals) < 2:
			return invalid("mapping %s: not load-balanced", key)
		}
		_, found := slices.BinarySearchFunc(cur.Locals, l, compareLocals)
		switch {
		case add && found:
			return invalid("mapping %s: local %s: value exists", key, l)
		case !add && !found:
			return invalid("mapping %s: local %s: no such entry", key, l)
		case !add && len(cur.Locals) < 3:
			return fmt.Errorf("fake VPP: mapping %s: cannot remove a local from %d (-1): %w", key, len(cur.Locals), ErrInvalid)
		}
		f.state.Apply(op)
		if bad := badSum(f.state.Mappings[key].Locals); bad != "" {
			panic(fmt.Sprintf("fake VPP: mapping %s left %s", key, bad))
		}
		return nil
	})
}

// badSum says what VPP 25.02 does with a load-balanced mapping whose
// probabilities sum outside 1..255 (FACTS §1); "" when they do not.
func badSum(ls []Local) string {
	switch s := probabilitySum(ls); {
	case s%256 == 0:
		return fmt.Sprintf("with probabilities summing to %d: VPP crashes on the first packet (SIGFPE)", s)
	case s > MaxProbabilitySum:
		return fmt.Sprintf("with probabilities summing to %d: VPP's pick is skewed", s)
	}
	return ""
}

// cutTag is a tag as VPP keeps it.
func cutTag(tag string) string { return tag[:min(len(tag), MaxTagLen)] }

func (f *fakeVPP) AddDelRoute(_ context.Context, r Route, add bool) error {
	op := Op{Kind: OpDelRoute, Route: r}
	if add {
		op.Kind = OpAddRoute
	}
	return f.do(op, func() error {
		if r.Kind == RouteReject && r.VRF != 0 && !f.rejectAnyTable {
			return invalid("reject route %s outside table 0", r.RouteKey)
		}
		f.state.Apply(op) // idempotent both ways, as VPP answers 0
		return nil
	})
}

func (f *fakeVPP) DumpRoutes(_ context.Context, vrfs []uint32) ([]Route, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routeDumps++
	if f.failRate > 0 && f.rng.Float64() < f.failRate {
		return nil, errTransient
	}
	var out []Route
	for _, r := range f.otherRoutes {
		if slices.Contains(vrfs, r.VRF) {
			out = append(out, r)
		}
	}
	for _, r := range f.state.Routes {
		if slices.Contains(vrfs, r.VRF) {
			out = append(out, *r)
		}
	}
	return out, nil
}

func (f *fakeVPP) Dump(context.Context) (*State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dumps++
	if f.failRate > 0 && f.rng.Float64() < f.failRate {
		return nil, errTransient
	}
	c := f.state.Clone()
	c.Routes = nil
	for k, m := range c.Mappings {
		mc := *m
		mc.Locals = slices.Clone(m.Locals)
		mc.Affinity = 0 // VPP's dump never returns it
		c.Mappings[k] = &mc
	}
	for k, id := range c.Identities {
		ic := *id
		c.Identities[k] = &ic
	}
	return c, nil
}

// takeCalls returns the calls logged since the last take.
func (f *fakeVPP) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// dump is the fake's state as sorted lines.
func (f *fakeVPP) dump() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state.Lines()
}

// countingVPP accepts every call and only counts them: the benchmarks'
// VPP.
type countingVPP struct{ calls int }

func (c *countingVPP) SetGlobal(context.Context, Global) error { c.calls++; return nil }
func (c *countingVPP) AddDelPoolAddress(context.Context, PoolAddress, bool) error {
	c.calls++
	return nil
}
func (c *countingVPP) SetInterfaceFeatures(context.Context, string, Features, Features) (uint32, error) {
	c.calls++
	return 1, nil
}
func (c *countingVPP) AddDelMapping(context.Context, *Mapping, bool) error { c.calls++; return nil }
func (c *countingVPP) AddDelLBLocal(context.Context, MappingKey, Local, bool) error {
	c.calls++
	return nil
}
func (c *countingVPP) AddDelIdentity(context.Context, *Identity, bool) error { c.calls++; return nil }
func (c *countingVPP) AddDelRoute(context.Context, Route, bool) error        { c.calls++; return nil }
func (c *countingVPP) DumpRoutes(context.Context, []uint32) ([]Route, error) { return nil, nil }
func (c *countingVPP) Dump(context.Context) (*State, error)                  { return NewState(), nil }
