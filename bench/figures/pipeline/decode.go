package pipeline

import (
	"context"
	"fmt"
	"time"

	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/internal/workload"
	"contiv.dev/vpp/kubestate"
)

// decodeRun is the cost of decoding one stored EndpointSlice of W(N).
type decodeRun struct {
	cpu    time.Duration // per decode
	allocs float64       // per decode
	bytes  int           // size of the stored value
}

// measureDecode decodes the stored form of service 0's EndpointSlice (10
// endpoints) iters times.
func measureDecode(iters int) (*decodeRun, error) {
	s := workload.Slice(0, workload.EndpointsPer, false)
	b, err := kubestate.Encode(s)
	if err != nil {
		return nil, err
	}
	k := s.Key()
	m := core.StartMark()
	for range iters {
		if _, err := kubestate.Decode(k, b); err != nil {
			return nil, fmt.Errorf("decode: %w", err)
		}
	}
	c := m.Since()
	return &decodeRun{cpu: c.CPU / time.Duration(iters), allocs: float64(c.Mallocs) / float64(iters), bytes: len(b)}, nil
}

// RunDecode measures the decode figure Options.Runs times (medians).
func RunDecode(_ context.Context, _ *core.Env, o core.Options, _ *core.Results, into *Results) error {
	o.Log.Info("decode")
	var cpu, allocs []float64
	var d *decodeRun
	for range o.Runs {
		var err error
		if d, err = measureDecode(o.DecodeIters); err != nil {
			return err
		}
		cpu = append(cpu, core.US(d.cpu))
		allocs = append(allocs, d.allocs)
	}
	into.DecodeUS = core.Median(cpu)
	into.DecodeAllocs, into.DecodeBytes = core.Median(allocs), d.bytes
	return nil
}

// DecodeRows is the decode figure's row.
func DecodeRows(_ *core.Results, r *Results, t *core.Rows) {
	if r.DecodeUS > 0 {
		t.AddSingle("decode one EndpointSlice (µs CPU)", fmt.Sprintf("%.2f (%.0f allocs, %d B)", r.DecodeUS, r.DecodeAllocs, r.DecodeBytes), "", "")
	}
}
