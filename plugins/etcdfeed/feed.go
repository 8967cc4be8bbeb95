package etcdfeed

import (
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"

	"contiv.dev/vpp/kubestate"
)

// Change is the new value of one watched key.
type Change struct {
	Key kubestate.Key
	// Rev is the etcd revision of the change.
	Rev int64
	// Obj is the decoding of the stored value; nil for a delete.
	Obj kubestate.Object
}

// Listing is every watched object at one revision.
type Listing struct {
	Revision int64
	// Objects holds the objects by key.
	Objects map[kubestate.Key]kubestate.Object
	// Bad holds the keys whose stored value did not decode: the consumer
	// keeps their last good value.
	Bad map[kubestate.Key]bool
	// Listed holds Objects' objects in the order they were listed (by key,
	// prefix after prefix), each once.
	Listed []kubestate.Object
}

// Sink takes in what the feed reads; both methods are called from the
// feed's goroutines, must not block for long, and own what they are handed
// (the feed keeps nothing of it).
type Sink interface {
	// Resync takes in a listing: it supersedes every change handed before.
	// startup is set for the first listing of a Run.
	Resync(l *Listing, startup bool)
	// Changes takes in the changes of one watch response, in revision
	// order. The slice is reused once Changes returns.
	Changes(chs []Change)
}

// Backoff paces the retries: the first wait is Initial, each next one
// doubles, up to Max; each is jittered (wait.Backoff, Jitter 0.5: up to
// half as long again) so that many agents failing together retry apart.
type Backoff struct {
	Initial, Max time.Duration
}

// Default backoff, for a Backoff left zero.
const (
	DefaultBackoffInitial = 100 * time.Millisecond
	DefaultBackoffMax     = 30 * time.Second
)

// backoffJitter is wait.Backoff's Jitter: each wait is drawn from [d, 1.5d].
const backoffJitter = 0.5

func (b Backoff) wait() wait.Backoff {
	if b.Initial <= 0 {
		b.Initial = DefaultBackoffInitial
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoffMax
	}
	return wait.Backoff{Duration: b.Initial, Factor: 2, Jitter: backoffJitter, Steps: math.MaxInt32, Cap: max(b.Max, b.Initial)}
}

// Params configures a Feed.
type Params struct {
	// Logger receives the feed's logs; nil discards them.
	Logger *slog.Logger
	// Client is the etcd client the feed lists and watches through.
	Client *clientv3.Client
	// Resources are the kinds of objects listed and watched (default
	// kubestate.Resources).
	Resources []kubestate.Resource
	// PodNode, when set, narrows the pods to that node's
	// (kubestate.PodPrefix).
	PodNode string
	// Backoff paces the retries after failures (listing, watching).
	Backoff Backoff
	// RelistJitter spreads the re-listing after etcd comes back over a
	// random delay below it (one RelistJitter per 500 nodes of
	// ClusterSize); 0 re-lists at once.
	RelistJitter time.Duration
	// ClusterSize, when set, is the number of nodes.
	ClusterSize func() int
	// RequireSynced takes in only listings that are a complete reflector
	// output (kubestate.Completeness); others are held (Status.Held).
	RequireSynced bool
	// HistoryCheck is how often a running watch checks that etcd still
	// holds the history it follows; 0 never.
	HistoryCheck time.Duration
	// MaxResumes is how many times in a row a watch that cannot be
	// followed is resumed from its revision before etcd is listed again
	// (default DefaultMaxResumes).
	MaxResumes int
	// Hooks are called, when set, at points tests synchronise on; nil in
	// the product. The feed reads its fields when it calls them: they may
	// be set after New, before Run.
	Hooks *Hooks
}

// DefaultMaxResumes is Params.MaxResumes's default.
const DefaultMaxResumes = 3

// Hooks are test hooks (Params.Hooks); each may be nil.
type Hooks struct {
	// AfterList runs after a listing is handed to the sink, before the
	// watch starts; AfterFirstPage after a listing's first page is read.
	AfterList, AfterFirstPage func()
	// Queued is told the revision of every watched event taken in.
	Queued func(rev int64)
	// Progressed is told the prefix and revision of every progress
	// notification taken in.
	Progressed func(prefix string, rev int64)
}

// Reasons a watch ends.
var (
	errReconnected     = errors.New("reconnected to etcd")
	errRelistRequested = errors.New("re-list requested")
	errOutputLost      = errors.New("etcd lost the reflector's output: its sync marker was deleted or put back older")
	errHistoryLost     = errors.New("etcd no longer holds the history the watch follows (restored from a backup or wiped)")
	// errUnfollowable ends a watch that cannot go on from where it is: a
	// response it cannot take in, a stream that keeps failing, a watch
	// etcd or the client ended. The feed resumes it from its revision, a
	// bounded number of times, then lists etcd again.
	errUnfollowable = errors.New("cannot follow etcd's watch")
)

// Feed lists the watched resources at one revision, hands the listing to
// its sink, then watches from the next revision and hands it every change.
// After a reconnection to an etcd that kept its history, each watch
// resumes after the last revision it delivered; a watch that cannot be
// followed is resumed a few times, with backoff, then etcd is listed
// again; when the watch is lost otherwise (compaction, a reconnection to
// an etcd restored or wiped, a history check) it lists again: the listing
// supersedes whatever the lost watch may have missed, and the revision it
// was taken at is where the next watch starts.
type Feed struct {
	p        Params
	log      *slog.Logger
	cli      *clientv3.Client
	sink     Sink
	hooks    *Hooks   // never nil
	prefixes []string // of the watched resources
	relist   chan struct{}
	st       counters
	backoff  wait.Backoff
	// watcher is clientv3's Watch over the guarded Watch client (guard.go).
	watcher clientv3.Watcher
	guard   *guard
	running bool

	// The run goroutine's.
	// listed is the number of objects of the last listing.
	listed int
	// markers has the newest sync marker taken in (listed or watched),
	// known since revision genRev; under takeIn's lock while a watch runs.
	markers kubestate.MarkerHistory
	genRev  int64
	// tookIn tells that a listing was handed to the sink.
	tookIn bool

	// seen is the newest put read from etcd since the last listing,
	// written by the goroutines that list or take in the watch, read by
	// the history check.
	seenMu sync.Mutex
	seen   seenPut
}

// seenPut is a put read from etcd (key and value as read, never changed).
// An etcd that still holds it at its revision kept the history it was read
// from.
type seenPut struct {
	key, value []byte
	rev        int64
}

// New returns a feed of p.Client's cluster state to sink; Run starts it.
func New(p Params, sink Sink) *Feed {
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	if len(p.Resources) == 0 {
		p.Resources = kubestate.Resources
	}
	if p.MaxResumes <= 0 {
		p.MaxResumes = DefaultMaxResumes
	}
	f := &Feed{p: p, log: p.Logger, cli: p.Client, sink: sink, relist: make(chan struct{}, 1), backoff: p.Backoff.wait()}
	f.hooks = p.Hooks
	if f.hooks == nil {
		f.hooks = &Hooks{}
	}
	for _, r := range p.Resources {
		pre := r.KeyPrefix()
		if r == kubestate.ResPod && p.PodNode != "" {
			pre = kubestate.PodPrefix(p.PodNode)
		}
		f.prefixes = append(f.prefixes, pre)
	}
	return f
}

// RequestRelist asks the feed to list etcd again (e.g. on an operator's
// request); safe from any goroutine.
func (f *Feed) RequestRelist() {
	select {
	case f.relist <- struct{}{}:
	default:
	}
}

// see takes in a put read from etcd; it keeps the read slices, copying
// nothing. Of puts at one revision (one transaction) the last read wins:
// the sync marker, read last by a listing, has a value no other etcd holds
// (its sweep's time).
func (f *Feed) see(key, value []byte, rev int64) {
	f.seenMu.Lock()
	if rev >= f.seen.rev {
		f.seen = seenPut{key: key, value: value, rev: rev}
	}
	f.seenMu.Unlock()
}

// lastSeen is the newest put read since the last listing.
func (f *Feed) lastSeen() seenPut {
	f.seenMu.Lock()
	defer f.seenMu.Unlock()
	return f.seen
}

func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// relistDelay spreads the agents' re-listing after etcd comes back: a
// random delay below the jitter, scaled by the cluster's size (one jitter
// per relistNodesPerJitter nodes), so that thousands of agents do not list
// etcd at once.
func (f *Feed) relistDelay() time.Duration {
	if f.p.RelistJitter <= 0 {
		return 0
	}
	span := f.p.RelistJitter
	if f.p.ClusterSize != nil {
		span *= time.Duration(max(1, f.p.ClusterSize()/relistNodesPerJitter))
	}
	return rand.N(span)
}

// relistNodesPerJitter is how many nodes share one RelistJitter of the
// spread: 5000 nodes re-list over 10 jitters.
const relistNodesPerJitter = 500
