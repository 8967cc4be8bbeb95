package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"time"
)

// Options configure Run. Zero fields take the defaults of BENCH.md.
type Options struct {
	// Sizes are the N of W(N); default 1000, 5000, 10000, 50000.
	Sizes []int
	// Runs is the number of runs whose median is reported; default 5.
	Runs int
	// Figures selects what to measure; default AllFigures.
	Figures []FigureName
	// DecodeIters is the number of decodes per run; default 20000.
	DecodeIters int
	// Joiners is K, the number of agents claiming IDs at once; default 100.
	Joiners int
	// ManyJoiners is K of the nodesync-many figure; default 1000.
	ManyJoiners int
	// NPLSize is the N of the latency figure; default 10000.
	NPLSize int
	// ProgramSize is the N of the vpp-program and startup figures;
	// default 10000.
	ProgramSize int
	// LargeSize is the N of the large figure; default 50000.
	LargeSize int
	// NPLDuration and NPLRate: how long and how many changes per second
	// are written; defaults 60s and 20.
	NPLDuration time.Duration
	NPLRate     float64
	// FanoutKs are the agent counts of the fan-out figure; default 50,
	// 100, 200. FanoutSize is its N (default 10000) and FanoutChanges the
	// changes written at each K (default 50).
	FanoutKs      []int
	FanoutSize    int
	FanoutChanges int
	// VPPSocket is the API socket of a freshly started real VPP that the
	// real-vpp figure may program (loopbacks, a table, W(N)).
	VPPSocket string
	// AgentChanges is the number of changes of the agent-change figure
	// (default 2000, in blocks of 100).
	AgentChanges int
	// FastEtcd gives embedded etcd short tick and election timings (tests);
	// the benchmark uses etcd's defaults.
	FastEtcd bool
	// ProfileDir, when set, receives CPU profiles of the resync and of the
	// per-change path at the largest N (resync.pprof, change.pprof), taken
	// after the measured runs; ProfileTime is the length of each (default
	// 5s).
	ProfileDir  string
	ProfileTime time.Duration
	// Log receives progress lines; nil discards them.
	Log *slog.Logger
	// AgentLog receives the agent's own logs in the latency figure; nil
	// discards them.
	AgentLog io.Writer
}

func (o *Options) setDefaults() {
	if len(o.Sizes) == 0 {
		o.Sizes = []int{1000, 5000, 10000, LargeSize}
	}
	if o.Runs <= 0 {
		o.Runs = 5
	}
	if len(o.Figures) == 0 {
		o.Figures = AllFigures()
	}
	if o.DecodeIters <= 0 {
		o.DecodeIters = 20000
	}
	if o.Joiners <= 0 {
		o.Joiners = 100
	}
	if o.ManyJoiners <= 0 {
		o.ManyJoiners = 1000
	}
	if o.NPLSize <= 0 {
		o.NPLSize = 10000
	}
	if o.ProgramSize <= 0 {
		o.ProgramSize = ProgramSize
	}
	if o.LargeSize <= 0 {
		o.LargeSize = LargeSize
	}
	if len(o.FanoutKs) == 0 {
		o.FanoutKs = []int{50, 100, 200}
	}
	if o.FanoutSize <= 0 {
		o.FanoutSize = TargetSize
	}
	if o.FanoutChanges <= 0 {
		o.FanoutChanges = 50
	}
	if o.AgentChanges <= 0 {
		o.AgentChanges = 2000
	}
	if o.NPLDuration <= 0 {
		o.NPLDuration = 60 * time.Second
	}
	if o.NPLRate <= 0 {
		o.NPLRate = 20
	}
	if o.ProfileTime <= 0 {
		o.ProfileTime = 5 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.AgentLog == nil {
		o.AgentLog = io.Discard
	}
}

// ErrOptions marks options Run cannot work with.
var ErrOptions = errors.New("invalid benchmark options")

func (o *Options) validate() error {
	var errs []error
	for _, n := range o.Sizes {
		if n < 1 {
			errs = append(errs, fmt.Errorf("%w: size %d: N must be at least 1", ErrOptions, n))
		}
	}
	for _, k := range o.FanoutKs {
		if k < 1 {
			errs = append(errs, fmt.Errorf("%w: fan-out K %d: must be at least 1", ErrOptions, k))
		}
	}
	for _, name := range o.Figures {
		f, ok := lookup(name)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%w: figure %q: want one of %v", ErrOptions, name, AllFigures()))
		case name == FigRealVPP && o.VPPSocket == "":
			errs = append(errs, fmt.Errorf("%w: figure %q needs the socket of a real VPP (-vpp-socket)", ErrOptions, f.Name()))
		}
	}
	return errors.Join(errs...)
}

func (o *Options) wants(f FigureName) bool { return slices.Contains(o.Figures, f) }

// Run measures the selected figures and returns them. The runs at each
// size are independent: every run builds its own pipeline over a fresh
// W(N).
func Run(ctx context.Context, o Options) (*Results, error) {
	o.setDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	env, err := NewEnv()
	if err != nil {
		return nil, err
	}
	res := &Results{N: map[string]*SizeResult{}, Runs: o.Runs, Figures: o.Figures}
	sizes := slices.Sorted(slices.Values(o.Sizes))
	sizes = slices.Compact(sizes)
	for _, n := range sizes {
		res.N[strconv.Itoa(n)] = &SizeResult{}
	}
	res.sizes = sizes
	for _, f := range registry() {
		if !o.wants(f.Name()) {
			continue
		}
		if err := f.run(ctx, env, o, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}
