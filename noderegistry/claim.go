package noderegistry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/backoff"
	"contiv.dev/vpp/kubestate"
)

// Etcd is what NodeSync needs of an etcd client; *clientv3.Client has it.
type Etcd interface {
	Txn(ctx context.Context) clientv3.Txn
	Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error)
	Revoke(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error)
}

// Params configures Claim.
type Params struct {
	// Client reaches etcd; required.
	Client Etcd
	// Name is the node's (Kubernetes) name; required.
	Name string
	// StateFile is the local file keeping the node's ID; empty means none.
	StateFile string
	// WantID is the ID this node is known to hold (a running agent claiming
	// again); 0 means none. It must agree with the state file.
	WantID uint32
	// MaxID bounds the ID of a joining node (the address plan's capacity);
	// 0 means no bound.
	MaxID uint32
	// QueueTTL is how long a crashed joiner stays in the queue; default 10s.
	QueueTTL time.Duration
	// AttemptTimeout bounds one round trip to etcd; default 5s.
	AttemptTimeout time.Duration
	// MaxBackoff caps the jittered pause between attempts; default 500ms.
	MaxBackoff time.Duration
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
}

const (
	defaultQueueTTL       = 10 * time.Second
	defaultAttemptTimeout = 5 * time.Second
	defaultMaxBackoff     = 500 * time.Millisecond
	minBackoff            = 2 * time.Millisecond
)

// Claim returns this node's ID: the one its record in etcd holds; else the
// one its state file (or p.WantID) names, claimed again; else the smallest
// free ID. A new ID is claimed in one transaction with the node record, so no
// two nodes ever hold one ID, and an ID whose tombstone still lives is not
// free. Lost races are retried with jittered backoff until ctx ends: then the
// error wraps ErrUnavailable if etcd did not answer. On success the state file
// holds the ID.
func Claim(ctx context.Context, p Params) (uint32, error) {
	if err := checkName(p.Name); err != nil {
		return 0, err
	}
	if p.Client == nil {
		return 0, fmt.Errorf("node %s: no etcd client: %w", p.Name, ErrInvalid)
	}
	log := p.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	want := p.WantID
	var st State
	var haveState bool
	if p.StateFile != "" {
		var err error
		if st, haveState, err = ReadState(p.StateFile); err != nil {
			return 0, fmt.Errorf("node %s: %w", p.Name, err)
		}
		switch {
		case !haveState:
		case st.Name != p.Name:
			log.Warn("nodesync: state file belongs to another node name, ignored",
				"file", p.StateFile, "fileNode", st.Name, "fileID", st.ID, "node", p.Name)
			haveState = false
		case want != 0 && want != st.ID:
			return 0, fmt.Errorf("node %s: the state file %s says ID %d, the agent holds ID %d: %w",
				p.Name, p.StateFile, st.ID, want, ErrIDConflict)
		default:
			want = st.ID
		}
	}
	c := &claimer{
		cli:            p.Client,
		name:           p.Name,
		want:           want,
		fromStateFile:  haveState,
		stateFile:      p.StateFile,
		maxID:          p.MaxID,
		queueTTL:       orDefault(p.QueueTTL, defaultQueueTTL),
		attemptTimeout: orDefault(p.AttemptTimeout, defaultAttemptTimeout),
		maxBackoff:     orDefault(p.MaxBackoff, defaultMaxBackoff),
		log:            log,
	}
	start := time.Now()
	id, err := c.run(ctx)
	if err != nil {
		return 0, err
	}
	if p.StateFile != "" && (!haveState || st.ID != id) {
		if err := WriteState(p.StateFile, State{Name: p.Name, ID: id}); err != nil {
			return 0, fmt.Errorf("node %s: ID %d claimed, but: %w", p.Name, id, err)
		}
	}
	log.Info("nodesync: node ID claimed", "node", p.Name, "id", id,
		"attempts", c.attempts, "took", time.Since(start))
	return id, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// claimer is one run of Claim.
type claimer struct {
	cli            Etcd
	name           string
	want           uint32
	fromStateFile  bool
	stateFile      string
	maxID          uint32
	queueTTL       time.Duration
	attemptTimeout time.Duration
	maxBackoff     time.Duration
	log            *slog.Logger

	lease    clientv3.LeaseID // of the queue entry, once granted
	attempts int
	warned   bool // about keys that are not NodeSync's

	hooks claimHooks // tests only
}

// claimHooks let tests force races the joiners' queue makes rare; zero in
// production.
type claimHooks struct {
	// noQueue makes a joiner claim the lowest free ID without queueing,
	// as if it were first in the queue.
	noQueue bool
	// beforeCommit runs between the read of a view and the transaction
	// claiming id on it; rev is the view's revision.
	beforeCommit func(id uint32, rev int64)
}

// errLostRace marks a claim transaction whose comparisons failed.
var errLostRace = errors.New("lost a race for the ID")

func (c *claimer) run(ctx context.Context) (id uint32, err error) {
	defer func() {
		if err != nil {
			c.leaveQueue(ctx)
		}
	}()
	var (
		v       *view
		lastErr error
		fails   int
	)
	for {
		if ctx.Err() != nil {
			return 0, c.deadlineError(ctx, lastErr)
		}
		var err error
		if v == nil {
			v, err = c.read(ctx)
		} else {
			if len(v.bad) > 0 && !c.warned {
				c.warned = true
				c.log.Warn("nodesync: keys with no valid ID ignored", "keys", v.bad)
			}
			var s step
			s, err = decide(v, c)
			switch {
			case err != nil:
				return 0, err
			case s.done:
				return s.id, nil
			case s.enqueue:
				v, err = c.enqueue(ctx)
			default:
				if c.hooks.beforeCommit != nil {
					c.hooks.beforeCommit(s.id, v.rev)
				}
				var ok bool
				ok, v, err = c.commit(ctx, s)
				if ok {
					return s.id, nil
				}
				if err == nil {
					err = errLostRace
					c.log.Debug("nodesync: lost a race for an ID", "node", c.name, "id", s.id)
				}
			}
		}
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return 0, c.deadlineError(ctx, lastErr)
		}
		lastErr = err
		if !errors.Is(err, errLostRace) {
			v = nil
			c.log.Debug("nodesync: etcd request failed", "node", c.name, "err", err)
		}
		fails++
		if !backoff.Sleep(ctx, pause(fails, c.maxBackoff)) {
			return 0, c.deadlineError(ctx, lastErr)
		}
	}
}

func (c *claimer) deadlineError(ctx context.Context, lastErr error) error {
	switch {
	case lastErr == nil:
		return fmt.Errorf("node %s: claim ID: %w", c.name, ctx.Err())
	case errors.Is(lastErr, errLostRace):
		return fmt.Errorf("node %s: claim ID: no race won in %d attempts: %w", c.name, c.attempts, ctx.Err())
	}
	return fmt.Errorf("node %s: claim ID: %w (last error, after %d attempts: %v): %w",
		c.name, ErrUnavailable, c.attempts, lastErr, ctx.Err())
}

// pause is the jittered wait after fails failures in a row (0: the first
// retry): minBackoff·2^fails, at most ceiling.
func pause(fails int, ceiling time.Duration) time.Duration {
	return backoff.Policy{Initial: minBackoff, Max: ceiling, Jitter: true}.Delay(fails + 1)
}

// read reads the view at one revision.
func (c *claimer) read(ctx context.Context) (*view, error) {
	ctx, cancel := context.WithTimeout(ctx, c.attemptTimeout)
	defer cancel()
	c.attempts++
	resp, err := c.cli.Txn(ctx).Then(viewOps(c.name)...).Commit()
	if err != nil {
		return nil, fmt.Errorf("read node IDs: %w", err)
	}
	return parseView(c.name, resp.Header.GetRevision(), resp.Responses)
}

// enqueue puts this node in the joiners' queue and reads the view.
func (c *claimer) enqueue(ctx context.Context) (*view, error) {
	ctx, cancel := context.WithTimeout(ctx, c.attemptTimeout)
	defer cancel()
	c.attempts++
	if c.lease == 0 {
		l, err := c.cli.Grant(ctx, int64((c.queueTTL+time.Second-1)/time.Second))
		if err != nil {
			return nil, fmt.Errorf("join the queue: %w", err)
		}
		c.lease = l.ID
	}
	ops := append([]clientv3.Op{clientv3.OpPut(joiningKey(c.name), c.name, clientv3.WithLease(c.lease))}, viewOps(c.name)...)
	resp, err := c.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		if isLeaseGone(err) {
			c.lease = 0 // expired while etcd was away: take a new one
		}
		return nil, fmt.Errorf("join the queue: %w", err)
	}
	return parseView(c.name, resp.Header.GetRevision(), resp.Responses[1:])
}

func isLeaseGone(err error) bool { return errors.Is(err, rpctypes.ErrLeaseNotFound) }

// commit runs a claim transaction; when it loses, it returns the fresh view.
func (c *claimer) commit(ctx context.Context, s step) (bool, *view, error) {
	ctx, cancel := context.WithTimeout(ctx, c.attemptTimeout)
	defer cancel()
	c.attempts++
	resp, err := c.cli.Txn(ctx).If(s.cmps...).Then(s.ops...).Else(viewOps(c.name)...).Commit()
	if err != nil {
		return false, nil, fmt.Errorf("claim ID %d: %w", s.id, err)
	}
	if resp.Succeeded {
		return true, nil, nil
	}
	v, err := parseView(c.name, resp.Header.GetRevision(), resp.Responses)
	return false, v, err
}

// leaveQueue revokes the queue entry's lease after a failed run, taking the
// node out of the queue at once. (A successful claim deleted the entry; its
// lease, holding no key any more, just expires.)
func (c *claimer) leaveQueue(ctx context.Context) {
	if c.lease == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_, _ = c.cli.Revoke(ctx, c.lease)
}

// view is what a claim decides on, read at one revision.
type view struct {
	rev    int64            // etcd's revision when read
	record *entry           // this node's record
	owners map[uint32]entry // ID key → holder's name
	tombs  map[uint32]entry // released ID → tombstone
	queue  []queued         // joiners, first come first
	bad    []string         // keys that are not NodeSync's
}

type entry struct {
	value       []byte
	create, mod int64
}

type queued struct {
	name   string
	create int64
}

func viewOps(name string) []clientv3.Op {
	return []clientv3.Op{
		clientv3.OpGet(recordKey(name)),
		clientv3.OpGet(IDPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(ReleasedPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(JoiningPrefix, clientv3.WithPrefix()),
	}
}

func parseView(name string, rev int64, rs []*pb.ResponseOp) (*view, error) {
	if len(rs) != 4 {
		return nil, fmt.Errorf("read node IDs: %d answers to 4 reads", len(rs))
	}
	v := &view{rev: rev, owners: map[uint32]entry{}, tombs: map[uint32]entry{}}
	for _, kv := range rs[0].GetResponseRange().GetKvs() {
		v.record = &entry{value: kv.Value, create: kv.CreateRevision, mod: kv.ModRevision}
	}
	for i, m := range []map[uint32]entry{v.owners, v.tombs} {
		prefix := []string{IDPrefix, ReleasedPrefix}[i]
		for _, kv := range rs[i+1].GetResponseRange().GetKvs() {
			id, ok := parseID(string(kv.Key), prefix)
			if !ok {
				v.bad = append(v.bad, string(kv.Key))
				continue
			}
			m[id] = entry{value: kv.Value, create: kv.CreateRevision, mod: kv.ModRevision}
		}
	}
	for _, kv := range rs[3].GetResponseRange().GetKvs() {
		v.queue = append(v.queue, queued{name: strings.TrimPrefix(string(kv.Key), JoiningPrefix), create: kv.CreateRevision})
	}
	slices.SortFunc(v.queue, func(a, b queued) int {
		return cmp.Or(cmp.Compare(a.create, b.create), strings.Compare(a.name, b.name))
	})
	return v, nil
}

// rank is this node's place in the joiners' queue, -1 if not queued.
func (v *view) rank(name string) int {
	return slices.IndexFunc(v.queue, func(q queued) bool { return q.name == name })
}

// tombName is the node named in id's tombstone ("" if unreadable).
func (v *view) tombName(id uint32) string {
	t, err := decodeTombstone(v.tombs[id].value)
	if err != nil {
		return ""
	}
	return t.Name
}

// free returns the n-th (from 0) ID that is neither held nor quarantined.
func (v *view) free(n int) uint32 {
	for id := uint32(1); ; id++ {
		_, held := v.owners[id]
		_, quarantined := v.tombs[id]
		if held || quarantined {
			continue
		}
		if n == 0 {
			return id
		}
		n--
	}
}

// step is what to do next.
type step struct {
	done    bool // the node holds id: nothing to write
	enqueue bool // join the queue first
	id      uint32
	cmps    []clientv3.Cmp
	ops     []clientv3.Op
}

// decide looks at v and says what claims this node's ID. An error is final.
func decide(v *view, c *claimer) (step, error) {
	name, want := c.name, c.want
	var rec *kubestate.VppNode
	if v.record != nil {
		var err error
		if rec, err = decodeRecord(name, v.record.value); err != nil {
			return step{}, fmt.Errorf("node %s: %w", name, err)
		}
		if want != 0 && want != rec.ID {
			src := "the agent holds"
			if c.fromStateFile {
				src = "the state file " + c.stateFile + " says"
			}
			return step{}, fmt.Errorf("node %s: etcd records ID %d, %s ID %d (remove the state file to accept %d): %w",
				name, rec.ID, src, want, rec.ID, ErrIDConflict)
		}
		want = rec.ID
	}
	if want == 0 {
		// A half-released node, or one whose ID is quarantined in its name,
		// takes its own ID back.
		want = lowestID(v.owners, func(e entry) bool { return string(e.value) == name })
	}
	if want == 0 {
		want = lowestID(v.tombs, func(e entry) bool { t, err := decodeTombstone(e.value); return err == nil && t.Name == name })
	}
	if want != 0 {
		return reclaim(v, name, want, rec)
	}
	r := v.rank(name)
	if r < 0 && c.hooks.noQueue {
		r = 0
	}
	if r < 0 {
		return step{enqueue: true}, nil
	}
	id := v.free(r)
	if c.maxID != 0 && id > c.maxID {
		return step{}, fmt.Errorf("node %s: the lowest ID left for it is %d, above the largest the address plan fits (%d): %w",
			name, id, c.maxID, ErrNoFreeID)
	}
	recVal, err := kubestate.Encode(&kubestate.VppNode{Name: name, ID: id})
	if err != nil {
		return step{}, err
	}
	return step{
		id: id,
		cmps: []clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(idKey(id)), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(releasedKey(id)), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(recordKey(name)), "=", 0),
		},
		ops: []clientv3.Op{
			clientv3.OpPut(idKey(id), name),
			clientv3.OpPut(recordKey(name), string(recVal)),
			clientv3.OpDelete(joiningKey(name)),
		},
	}, nil
}

// lowestID is the lowest ID in m whose entry matches, 0 if none.
func lowestID(m map[uint32]entry, match func(entry) bool) uint32 {
	var low uint32
	for id, e := range m {
		if match(e) && (low == 0 || id < low) {
			low = id
		}
	}
	return low
}

// reclaim makes this node hold want again, if no other node does.
func reclaim(v *view, name string, want uint32, rec *kubestate.VppNode) (step, error) {
	owner, held := v.owners[want]
	if held && string(owner.value) != name {
		return step{}, fmt.Errorf("node %s: its ID %d now belongs to node %s (after a loss of etcd data?); "+
			"an operator must release one of them: %w", name, want, owner.value, ErrIDTaken)
	}
	tomb, quarantined := v.tombs[want]
	if quarantined {
		if other := v.tombName(want); other != name {
			return step{}, fmt.Errorf("node %s: its ID %d was released by node %q and is quarantined: %w",
				name, want, other, ErrIDTaken)
		}
	}
	queued := v.rank(name) >= 0
	if held && rec != nil && !quarantined && !queued {
		return step{done: true, id: want}, nil
	}
	s := step{id: want}
	if held {
		s.cmps = append(s.cmps, clientv3.Compare(clientv3.ModRevision(idKey(want)), "=", owner.mod))
	} else {
		s.cmps = append(s.cmps, clientv3.Compare(clientv3.CreateRevision(idKey(want)), "=", 0))
		s.ops = append(s.ops, clientv3.OpPut(idKey(want), name))
	}
	if quarantined {
		s.cmps = append(s.cmps, clientv3.Compare(clientv3.ModRevision(releasedKey(want)), "=", tomb.mod))
		s.ops = append(s.ops, clientv3.OpDelete(releasedKey(want)))
	} else {
		s.cmps = append(s.cmps, clientv3.Compare(clientv3.CreateRevision(releasedKey(want)), "=", 0))
	}
	if rec != nil {
		s.cmps = append(s.cmps, clientv3.Compare(clientv3.ModRevision(recordKey(name)), "=", v.record.mod))
	} else {
		val, err := kubestate.Encode(&kubestate.VppNode{Name: name, ID: want})
		if err != nil {
			return step{}, err
		}
		s.cmps = append(s.cmps, clientv3.Compare(clientv3.CreateRevision(recordKey(name)), "=", 0))
		s.ops = append(s.ops, clientv3.OpPut(recordKey(name), string(val)))
	}
	if queued {
		s.ops = append(s.ops, clientv3.OpDelete(joiningKey(name)))
	}
	return s, nil
}
