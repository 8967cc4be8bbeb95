package ksr

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
)

// keysSeen is a controller handler that keeps the keys it holds.
type keysSeen struct {
	mu   sync.Mutex
	keys map[kubestate.Key]bool
}

func (h *keysSeen) Name() string                       { return "keys" }
func (h *keysSeen) HandlesEvent(controller.Event) bool { return true }
func (h *keysSeen) Apply(context.Context, bool) error  { return nil }
func (h *keysSeen) Update(_ context.Context, ev controller.Event) error {
	if c, ok := ev.(*controller.ChangeEvent); ok {
		h.mu.Lock()
		defer h.mu.Unlock()
		if c.New == nil {
			delete(h.keys, c.Key)
		} else {
			h.keys[c.Key] = true
		}
	}
	return nil
}

func (h *keysSeen) Resync(_ context.Context, ev *controller.ResyncEvent) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.keys = make(map[kubestate.Key]bool)
	if ev.State != nil {
		for k := range ev.State.Objects {
			h.keys[k] = true
		}
	}
	return nil
}

func (h *keysSeen) has(k kubestate.Key) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.keys[k]
}

// lazy formats as what its function returns when formatted: a failure
// message then tells the state at the failure.
type lazy func() string

func (l lazy) String() string { return l() }

// agent runs an agent's controller (RequireSynced) over the fixture's etcd
// until the test ends.
func (f *fixture) agent() (*controller.Controller, *keysSeen) {
	f.t.Helper()
	h := &keysSeen{}
	ctl := controller.New(controller.Params{Client: f.etcd.Client(), Handlers: []controller.Handler{h},
		Appliers: []controller.Applier{h}, RequireSynced: true,
		HealingBackoff: controller.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Run(ctx) }()
	f.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			f.t.Errorf("controller: %v", err)
		}
	})
	return ctl, h
}

// TestClockBehindAfterWipeIsTakenIn (issue 37, defect 3): an agent took in
// the output of a reflector replica; etcd loses its data, and another
// replica, whose clock is an hour behind the first's, sweeps it again. The
// agent takes that complete output in: its order is etcd's, not a clock's.
func TestClockBehindAfterWipeIsTakenIn(t *testing.T) {
	f := newFixture(t, service("shop", "a", "10.96.0.1", 80), namespace("shop", nil))
	r1 := f.start(Params{Identity: "ksr-1"})
	r1.waitSynced(t, 1)
	ctl, seen := f.agent()
	eventually(t, ctl.Ready, "the agent took the first replica's output in")

	r1.stop()
	f.etcd.Wipe()
	eventually(t, func() bool { return ctl.Held() != "" }, "the agent holds the wiped etcd")
	b := service("shop", "b", "10.96.0.2", 80)
	f.create(b)
	r2 := f.start(Params{Identity: "ksr-2", Now: func() time.Time { return time.Now().Add(-time.Hour) }})
	r2.waitSynced(t, 1)
	eventually(t, func() bool { return ctl.Ready() && seen.has(keyOf(t, b)) },
		"the agent takes in the output of the replica whose clock is behind (held: %s)", lazy(ctl.Held))
	require.Empty(t, ctl.Held())
}
