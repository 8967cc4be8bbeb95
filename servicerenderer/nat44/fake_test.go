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
// rules of SPEC 6: a load-balanced mapping needs at least 2 locals, a local
// cannot be removed while fewer than 3 remain, duplicates answer "value
// exists", deletes of missing objects "no such entry". It can fail a chosen
// fraction of calls transiently, before or after taking effect (a lost
// reply), and reject chosen mappings as invalid.
type fakeVPP struct {
	mu    sync.Mutex
	state *State
	// calls logs every call but Dump, as Op strings.
	calls []string
	dumps int
	// failRate is the fraction of calls (dumps included) failing
	// transiently; rng decides.
	failRate float64
	rng      *rand.Rand
	// reject makes adds of the mappings it matches fail as invalid.
	reject func(m *Mapping) bool
	// missing names interfaces VPP does not have.
	missing map[string]bool
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

func (f *fakeVPP) SetInterfaceFeatures(_ context.Context, name string, old, new Features) error {
	op := Op{Kind: OpSetInterface, Interface: name, OldFeatures: old, NewFeatures: new}
	return f.do(op, func() error {
		if name == "" || f.missing[name] {
			return fmt.Errorf("fake VPP: interface %q: %w: %w", name, ErrNoInterface, ErrInvalid)
		}
		if cur := f.state.Interfaces[name]; cur != old {
			return invalid("interface %s has features %s, not %s", name, cur, old)
		}
		if new&FeatureOutput != 0 && new&(FeatureIn|FeatureOut) != 0 {
			return invalid("interface %s: output feature excludes in and out", name)
		}
		f.state.Apply(op)
		return nil
	})
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
		case m.Port == 0 || m.Locals[0].Port == 0:
			return invalid("mapping %s: port 0", m.MappingKey)
		case f.reject != nil && f.reject(m):
			return invalid("mapping %s: rejected", m.MappingKey)
		}
		for i, l := range m.Locals {
			if len(m.Locals) > 1 && l.Probability == 0 {
				return invalid("mapping %s: local %s: probability 0", m.MappingKey, l)
			}
			if i > 0 && compareLocals(m.Locals[i-1], l) >= 0 {
				return invalid("mapping %s: locals duplicate or unsorted", m.MappingKey)
			}
		}
		c := *m
		c.Locals = slices.Clone(m.Locals)
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
		case add && l.Probability == 0:
			return invalid("mapping %s: local %s: probability 0", key, l)
		case !add && !found:
			return invalid("mapping %s: local %s: no such entry", key, l)
		case !add && len(cur.Locals) < 3:
			return invalid("mapping %s: cannot remove a local from %d", key, len(cur.Locals))
		}
		f.state.Apply(op)
		return nil
	})
}

func (f *fakeVPP) Dump(context.Context) (*State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dumps++
	if f.failRate > 0 && f.rng.Float64() < f.failRate {
		return nil, errTransient
	}
	c := f.state.Clone()
	for k, m := range c.Mappings {
		mc := *m
		mc.Locals = slices.Clone(m.Locals)
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
func (c *countingVPP) SetInterfaceFeatures(context.Context, string, Features, Features) error {
	c.calls++
	return nil
}
func (c *countingVPP) AddDelMapping(context.Context, *Mapping, bool) error { c.calls++; return nil }
func (c *countingVPP) AddDelLBLocal(context.Context, MappingKey, Local, bool) error {
	c.calls++
	return nil
}
func (c *countingVPP) AddDelIdentity(context.Context, *Identity, bool) error { c.calls++; return nil }
func (c *countingVPP) Dump(context.Context) (*State, error)                  { return NewState(), nil }
