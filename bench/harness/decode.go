package harness

import (
	"fmt"
	"time"

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
	m := startMark()
	for range iters {
		if _, err := kubestate.Decode(k, b); err != nil {
			return nil, fmt.Errorf("decode: %w", err)
		}
	}
	c := m.since()
	return &decodeRun{cpu: c.cpu / time.Duration(iters), allocs: float64(c.mallocs) / float64(iters), bytes: len(b)}, nil
}
