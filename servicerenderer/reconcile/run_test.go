package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// op is a fake operation: on object obj, failing with err; pipelined ones
// are sent without waiting.
type op struct {
	obj       string
	name      string
	pipelined bool
	err       error
}

// port is a fake Port: it records what is called, sent and answered, in
// order, and answers pipelined calls in send order.
type port struct {
	ops       []op
	unordered string // an object whose calls do not wait for each other
	inflight  []*op
	log       []string
	cancel    func()
	cancelAt  string
}

func (p *port) Object(o *op) string    { return o.obj }
func (p *port) Ordered(id string) bool { return id != p.unordered }
func (p *port) Pipelined(o *op) bool   { return o.pipelined }
func (p *port) Send(o *op) error {
	p.log = append(p.log, "send "+o.name)
	p.inflight = append(p.inflight, o)
	return nil
}
func (p *port) Call(o *op) (string, error) {
	p.log = append(p.log, "call "+o.name)
	p.hook(o)
	return o.name, o.err
}
func (p *port) Recv() (string, error) {
	o := p.inflight[0]
	p.inflight = p.inflight[1:]
	p.hook(o)
	return o.name, o.err
}
func (p *port) Result(i int, res string, err error) bool {
	if res != p.ops[i].name {
		p.log = append(p.log, fmt.Sprintf("answer %s for %s", res, p.ops[i].name))
	}
	p.log = append(p.log, fmt.Sprintf("result %s %v", res, err))
	return err != nil
}
func (p *port) hook(o *op) {
	if o.name == p.cancelAt {
		p.cancel()
	}
}

var errRefused = errors.New("refused")

func TestRun(t *testing.T) {
	tests := []struct {
		name        string
		ops         []op
		unordered   string
		cancelAt    string
		maxInFlight int
		want        []string
		stopped     int // index Do returned false at; -1: none
	}{{
		name: "synchronous calls in order",
		ops:  []op{{obj: "a", name: "a1"}, {obj: "b", name: "b1"}},
		want: []string{"call a1", "result a1 <nil>", "call b1", "result b1 <nil>"},
	}, {
		name: "a failed call skips its object's rest, not the others'",
		ops:  []op{{obj: "a", name: "a1", err: errRefused}, {obj: "b", name: "b1"}, {obj: "a", name: "a2"}},
		want: []string{"call a1", "result a1 refused", "call b1", "result b1 <nil>"},
	}, {
		name: "pipelined calls answered in send order; a synchronous call waits for them",
		ops:  []op{{obj: "a", name: "a1", pipelined: true}, {obj: "b", name: "b1", pipelined: true}, {obj: "c", name: "c1"}},
		want: []string{"send a1", "send b1", "result a1 <nil>", "result b1 <nil>", "call c1", "result c1 <nil>"},
	}, {
		name: "a pipelined object's next call waits for the answer, and a failure skips it",
		ops: []op{{obj: "a", name: "a1", pipelined: true, err: errRefused}, {obj: "b", name: "b1", pipelined: true},
			{obj: "a", name: "a2", pipelined: true}, {obj: "b", name: "b2", pipelined: true}},
		want: []string{"send a1", "send b1", "result a1 refused", "result b1 <nil>", "send b2", "result b2 <nil>"},
	}, {
		name:      "an unordered object's calls go out together",
		unordered: "i",
		ops:       []op{{obj: "i", name: "i1", pipelined: true, err: errRefused}, {obj: "i", name: "i2", pipelined: true}},
		want:      []string{"send i1", "send i2", "result i1 refused", "result i2 <nil>"},
	}, {
		name:        "at most MaxInFlight calls in flight: the oldest answer is recorded before the next call",
		maxInFlight: 2,
		ops: []op{{obj: "a", name: "a1", pipelined: true}, {obj: "b", name: "b1", pipelined: true},
			{obj: "c", name: "c1", pipelined: true}, {obj: "d", name: "d1", pipelined: true}},
		want: []string{"send a1", "send b1", "result a1 <nil>", "send c1", "result b1 <nil>", "send d1",
			"result c1 <nil>", "result d1 <nil>"},
	}, {
		name:     "a done context stops the run",
		cancelAt: "a1",
		ops:      []op{{obj: "a", name: "a1"}, {obj: "b", name: "b1"}},
		want:     []string{"call a1", "result a1 <nil>"},
		stopped:  1,
	}}
	var q Run[op, string, string] // reused, as renderers do
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := &port{ops: tt.ops, unordered: tt.unordered, cancel: cancel, cancelAt: tt.cancelAt}
			q.MaxInFlight = tt.maxInFlight
			q.Start(ctx, p, tt.ops)
			stopped := -1
			for i := range tt.ops {
				if !q.Do(i) {
					stopped = i
					break
				}
			}
			q.Drain()
			q.End()
			if tt.stopped == 0 {
				tt.stopped = -1
			}
			if !slices.Equal(p.log, tt.want) || stopped != tt.stopped {
				t.Errorf("run:\n%s\nstopped at %d; want:\n%s\nstopped at %d", strings.Join(p.log, "\n"), stopped,
					strings.Join(tt.want, "\n"), tt.stopped)
			}
		})
	}
}

// cycle is a fake Cycle recording its steps and whether the lock was held
// in each.
type cycle struct {
	mu      sync.Mutex
	synced  bool
	dumpErr error
	log     []string
}

func (c *cycle) note(step string) {
	if c.mu.TryLock() {
		c.mu.Unlock()
		c.log = append(c.log, step+" unlocked")
	} else {
		c.log = append(c.log, step+" locked")
	}
}

func (c *cycle) Begin(full bool) bool {
	c.note("begin")
	return full || !c.synced
}

func (c *cycle) Dump(context.Context) (string, error) {
	c.note("dump")
	return "vpp", c.dumpErr
}

func (c *cycle) PlanFull(d string) []string {
	c.note("load " + d)
	c.synced = true
	return []string{"all"}
}

func (c *cycle) PlanChanges() []string {
	c.note("plan")
	return []string{"changed"}
}

func (c *cycle) Run(_ context.Context, ops []string, full bool) error {
	c.note(fmt.Sprintf("run %v full=%v", ops, full))
	return nil
}

func (c *cycle) End(full bool, ops []string) { c.note(fmt.Sprintf("end %v", ops)) }

// The first apply is full; VPP is read and called without the lock; a
// failed dump ends the apply.
func TestApply(t *testing.T) {
	c := &cycle{}
	ctx := context.Background()
	if err := Apply(ctx, &c.mu, c, false); err != nil {
		t.Fatal(err)
	}
	if err := Apply(ctx, &c.mu, c, false); err != nil {
		t.Fatal(err)
	}
	c.dumpErr = errRefused
	if err := Apply(ctx, &c.mu, c, true); !errors.Is(err, errRefused) {
		t.Errorf("apply with a failed dump: %v, want its error", err)
	}
	want := []string{
		"begin locked", "dump unlocked", "load vpp locked", "run [all] full=true unlocked", "end [all] locked",
		"begin locked", "plan locked", "run [changed] full=false unlocked", "end [changed] locked",
		"begin locked", "dump unlocked",
	}
	if !slices.Equal(c.log, want) {
		t.Errorf("applies:\n%s\nwant:\n%s", strings.Join(c.log, "\n"), strings.Join(want, "\n"))
	}
	if !c.mu.TryLock() {
		t.Error("left locked")
	}
}
