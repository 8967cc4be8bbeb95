package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"pgregory.net/rapid"

	"contiv.dev/vpp/kubestate"
)

// seqRecorder is a handler that checks, per key, that every change arrives
// once and in order: each value carries a sequence number that grows with
// every write, so a duplicate or a regression shows as a number that does
// not grow; a ChangeEvent's Prev must be exactly what the handler holds.
type seqRecorder struct {
	mu         sync.Mutex
	view       map[kubestate.Key]kubestate.Object
	seq        map[kubestate.Key]int // highest sequence number seen per key
	rev        map[kubestate.Key]int64
	listedRev  int64
	violations []string
}

func newSeqRecorder() *seqRecorder {
	return &seqRecorder{view: map[kubestate.Key]kubestate.Object{}, seq: map[kubestate.Key]int{}, rev: map[kubestate.Key]int64{}}
}

func seqOf(o kubestate.Object) int {
	n, _ := strconv.Atoi(o.(*kubestate.Namespace).Labels["v"])
	return n
}

func (r *seqRecorder) Name() string            { return "seq" }
func (r *seqRecorder) HandlesEvent(Event) bool { return true }

func (r *seqRecorder) Resync(_ context.Context, ev *ResyncEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, o := range ev.State.Objects {
		if s := seqOf(o); s < r.seq[k] {
			r.violations = append(r.violations, fmt.Sprintf("resync %s: %s went back from %d to %d", ev.Kind, k.Name, r.seq[k], s))
		} else {
			r.seq[k] = s
		}
	}
	r.view = cloneObjects(ev.State.Objects)
	r.listedRev = max(r.listedRev, ev.State.Revision)
	return nil
}

func (r *seqRecorder) Update(_ context.Context, ev Event) error {
	e, ok := ev.(*ChangeEvent)
	if !ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	bad := func(format string, args ...any) {
		r.violations = append(r.violations, fmt.Sprintf("%s@%d: ", e.Key.Name, e.Revision)+fmt.Sprintf(format, args...))
	}
	if !reflect.DeepEqual(r.view[e.Key], e.Prev) {
		bad("prev %v, handler holds %v", e.Prev, r.view[e.Key])
	}
	if e.Revision <= r.rev[e.Key] {
		bad("revision not above the key's last %d", r.rev[e.Key])
	}
	r.rev[e.Key] = e.Revision
	if e.New == nil {
		if e.Prev == nil {
			bad("delete of an absent key delivered")
		}
		delete(r.view, e.Key)
		return nil
	}
	if s := seqOf(e.New); s <= r.seq[e.Key] {
		bad("value %d not above the last seen %d: duplicate or regression", s, r.seq[e.Key])
	} else {
		r.seq[e.Key] = s
	}
	r.view[e.Key] = e.New
	return nil
}

// pauser holds the watcher after its next listing, before it watches.
type pauser struct {
	armed   atomic.Pointer[pause]
	entered chan struct{}
}

type pause struct{ release chan struct{} }

func (p *pauser) hook() {
	if cur := p.armed.Swap(nil); cur != nil {
		p.entered <- struct{}{}
		<-cur.release
	}
}

// TestPropertyHandlersSeeEtcdExactly drives etcd with random puts, re-puts
// of the same value, deletes, forced relists (watcher restarts), bursts
// queued behind a blocked loop, and compactions (also while the watcher is
// held between its listing and its watch, so that its watch is compacted
// away). Afterwards the handler's view equals etcd, and per key every
// change was seen once and in order.
func TestPropertyHandlersSeeEtcdExactly(t *testing.T) {
	_, cli := testEtcd(t)
	keys := []string{"a", "b", "c", "d", "e"}
	rapid.Check(t, func(rt *rapid.T) {
		ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
		defer cancel()
		must := func(err error) {
			if err != nil {
				rt.Fatalf("etcd: %v", err)
			}
		}
		_, err := cli.Delete(ctx, kubestate.ResNamespace.KeyPrefix(), clientv3.WithPrefix())
		must(err)

		rec := newSeqRecorder()
		g := &blocker{}
		ctl := New(Params{Client: cli, Handlers: []Handler{g, rec}, Resources: []kubestate.Resource{kubestate.ResNamespace},
			HealingBackoff: Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond}})
		p := &pauser{entered: make(chan struct{})}
		ctl.hooks.AfterList = p.hook
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- ctl.Run(runCtx) }()
		defer func() {
			stop()
			<-done
		}()

		await := func(what string, cond func() bool) {
			for deadline := time.Now().Add(waitDeadline); !cond(); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					rt.Fatalf("gave up waiting for %s", what)
				}
			}
		}
		seq := 0
		putNS := func(name string, v int) int64 {
			b, _ := kubestate.Encode(ns(name, strconv.Itoa(v)))
			resp, err := cli.Put(ctx, nsKey(name).String(), string(b))
			must(err)
			return resp.Header.Revision
		}
		current := func(name string) (int, bool) {
			resp, err := cli.Get(ctx, nsKey(name).String())
			must(err)
			if len(resp.Kvs) == 0 {
				return 0, false
			}
			o, err := kubestate.Decode(nsKey(name), resp.Kvs[0].Value)
			must(err)
			return seqOf(o), true
		}
		write := func(rt *rapid.T) {
			k := rapid.SampledFrom(keys).Draw(rt, "key")
			switch rapid.IntRange(0, 3).Draw(rt, "write") {
			case 0, 1:
				seq++
				putNS(k, seq)
			case 2: // the same bytes again: a no-op for the handlers
				if v, ok := current(k); ok {
					putNS(k, v)
				}
			case 3:
				_, err := cli.Delete(ctx, nsKey(k).String())
				must(err)
			}
		}
		writes := func(rt *rapid.T, label string) {
			for range rapid.IntRange(1, 8).Draw(rt, label) {
				write(rt)
			}
		}
		compact := func() {
			resp, err := cli.Get(ctx, "/")
			must(err)
			if _, err = cli.Compact(ctx, resp.Header.Revision); !errors.Is(err, rpctypes.ErrCompacted) {
				must(err) // compacting twice at one revision is fine
			}
		}

		for range rapid.IntRange(1, 12).Draw(rt, "actions") {
			switch rapid.IntRange(0, 5).Draw(rt, "action") {
			case 0, 1:
				writes(rt, "writes")
			case 2: // the watcher restarts: its watch ends and it lists again
				ctl.RequestRelist()
				writes(rt, "writes around the relist")
			case 3: // compaction of history the watch no longer needs
				compact()
			case 4: // the watcher is held after listing; etcd moves on and compacts its watch away
				pa := &pause{release: make(chan struct{})}
				p.armed.Store(pa)
				ctl.RequestRelist()
				<-p.entered
				writes(rt, "writes while the watcher is held")
				compact()
				close(pa.release)
			case 5: // a burst queued behind a blocked loop coalesces; a listing supersedes it
				seq++
				release, entered := g.hold()
				putNS("gate", seq)
				<-entered
				writes(rt, "writes while the loop is blocked")
				if rapid.Bool().Draw(rt, "relist while the loop is blocked") {
					// The listing supersedes the changes queued before it.
					n := ctl.Status().Relists
					ctl.RequestRelist()
					await("the relist", func() bool { return ctl.Status().Relists > n })
					writes(rt, "writes after the relist")
				}
				close(release)
			}
		}

		// A last write: once the handler holds it, it has taken in every
		// change before it.
		seq++
		putNS("sentinel", seq)
		want := ns("sentinel", strconv.Itoa(seq))
		await("the sentinel", func() bool {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			return reflect.DeepEqual(rec.view[nsKey("sentinel")], want)
		})
		inEtcd := map[kubestate.Key]kubestate.Object{}
		resp, err := cli.Get(ctx, kubestate.ResNamespace.KeyPrefix(), clientv3.WithPrefix())
		must(err)
		for _, kv := range resp.Kvs {
			k, err := kubestate.ParseKey(string(kv.Key))
			must(err)
			o, err := kubestate.Decode(k, kv.Value)
			must(err)
			inEtcd[k] = o
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, v := range rec.violations {
			rt.Error(v)
		}
		if !reflect.DeepEqual(rec.view, inEtcd) {
			rt.Fatalf("handler view %s, etcd holds %s", seqs(rec.view), seqs(inEtcd))
		}
	})
}

// blocker blocks the loop in the first event it gets after hold.
type blocker struct {
	mu      sync.Mutex
	release chan struct{}
	entered chan struct{}
}

// hold arms the blocker: entered is closed once the loop is blocked, and
// closing release lets it go on.
func (b *blocker) hold() (release, entered chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.release, b.entered = make(chan struct{}), make(chan struct{})
	return b.release, b.entered
}

func (b *blocker) block(ctx context.Context) {
	b.mu.Lock()
	release, entered := b.release, b.entered
	b.release = nil
	b.mu.Unlock()
	if release == nil {
		return
	}
	close(entered)
	select {
	case <-release:
	case <-ctx.Done():
	}
}

func (b *blocker) Name() string            { return "blocker" }
func (b *blocker) HandlesEvent(Event) bool { return true }
func (b *blocker) Resync(ctx context.Context, _ *ResyncEvent) error {
	b.block(ctx)
	return nil
}
func (b *blocker) Update(ctx context.Context, _ Event) error {
	b.block(ctx)
	return nil
}

// seqs prints a view as sorted name=sequence pairs.
func seqs(m map[kubestate.Key]kubestate.Object) string {
	var out []string
	for k, o := range m {
		out = append(out, fmt.Sprintf("%s=%d", k.Name, seqOf(o)))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}
