package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/bench/figures/startup"
)

// Run measures the figures o selects (default AllFigures) and returns
// them. The runs at each size are independent: every run builds its own
// pipeline over a fresh W(N).
func Run(ctx context.Context, o core.Options) (*core.Results, error) {
	if len(o.Figures) == 0 {
		o.Figures = AllFigures()
	}
	o.SetDefaults()
	if err := validate(o); err != nil {
		return nil, err
	}
	env, err := core.NewEnv()
	if err != nil {
		return nil, err
	}
	figs := registry()
	res := &core.Results{
		Sizes: slices.Compact(slices.Sorted(slices.Values(o.Sizes))), Runs: o.Runs, Figures: o.Figures,
		Table: figs, KeyOrder: keyOrder(),
	}
	for _, f := range figs {
		f.Prepare(res)
	}
	for _, f := range figs {
		if !slices.Contains(o.Figures, f.Name()) {
			continue
		}
		if err := f.Run(ctx, env, o, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// validate refuses what Run cannot work with: bad sizes, unknown figures,
// and options a figure asked for cannot work with.
func validate(o core.Options) error {
	errs := []error{o.Validate()}
	for _, name := range o.Figures {
		f, ok := lookup(name)
		if !ok {
			errs = append(errs, fmt.Errorf("%w: figure %q: want one of %v", core.ErrOptions, name, AllFigures()))
			continue
		}
		errs = append(errs, f.Check(o))
	}
	return errors.Join(errs...)
}

// RunChild runs this process as a child of the large figure (etcd, the
// simulated VPP or the agent, each in a process of its own) when the
// environment names its role, and then exits; otherwise it returns at
// once. A binary that runs Run (contiv-bench, this package's tests) calls
// it first thing.
func RunChild() { core.RunChild(startup.ChildRoles()) }
