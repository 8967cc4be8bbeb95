package core

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Options configure a benchmark run. Zero fields take the defaults of
// BENCH.md (SetDefaults).
type Options struct {
	// Sizes are the N of W(N); default 1000, 5000, 10000, 50000.
	Sizes []int
	// Runs is the number of runs whose median is reported; default 5.
	Runs int
	// Figures selects what to measure; default every figure but those
	// measured only when named.
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

// SetDefaults sets every zero field to its default.
func (o *Options) SetDefaults() {
	if len(o.Sizes) == 0 {
		o.Sizes = []int{1000, 5000, 10000, LargeSize}
	}
	if o.Runs <= 0 {
		o.Runs = 5
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

// Validate refuses sizes and agent counts below 1.
func (o *Options) Validate() error {
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
	return errors.Join(errs...)
}

// Sizes of the standard benchmark.
const (
	// TargetSize is the N at which BENCH.md's targets apply.
	TargetSize = 10000
	// LargeSize is the N of the large figure: W(50 000), issue 25.
	LargeSize = 50000
)
