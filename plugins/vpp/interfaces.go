package vpp

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
)

// Interface is one VPP interface.
type Interface struct {
	Index uint32 `json:"index"`
	Name  string `json:"name"`
	// Tag is the interface's tag; the CNI tags pod interfaces
	// "<namespace>/<pod>".
	Tag string `json:"tag,omitempty"`
}

// ChangeKind says how an interface changed.
type ChangeKind uint8

// The kinds of interface changes.
const (
	// Added: an interface with a name the cache did not hold.
	Added ChangeKind = iota + 1
	// Changed: the interface with this name has another index or tag, or
	// VPP restarted and created it again (Restarted).
	Changed
	// Deleted: the interface is gone (a deleted event, or missing from a
	// full re-read).
	Deleted
)

// String names the kind.
func (k ChangeKind) String() string {
	switch k {
	case Added:
		return "added"
	case Changed:
		return "changed"
	case Deleted:
		return "deleted"
	}
	return fmt.Sprintf("ChangeKind(%d)", uint8(k))
}

// InterfaceChange is one change of VPP's interface table. Interfaces are
// identified by name, as the agent addresses them: a name moving to
// another index is Changed; an index taking another name is the old name
// Deleted and the new one Added.
type InterfaceChange struct {
	// Interface is the interface now; for Deleted, as it was.
	Interface Interface
	Kind      ChangeKind
	// Old is the interface before a Changed.
	Old Interface
	// Restarted is set on a change found by the first read of a VPP that
	// restarted (another process ID): Changed, VPP has the interface again
	// as a new one with the old name, without any of the configuration the
	// agent gave the old one; Deleted, the interface went with the old
	// process (a restarted VPP creates its interfaces over seconds). Either
	// way nothing was lost since the restart: the full resync a restart
	// brings reads VPP afresh.
	Restarted bool
}

// Interfaces is a cache of VPP's interface table (name, index, tag). Run
// keeps it current: it re-reads the table at every (re)connect, follows
// VPP's interface events, and re-reads every ResyncInterval as a safety
// net. Without Run it refreshes itself when a name or index is missing and
// after every reconnect. Every change is reported to onChange. Safe for
// concurrent use.
type Interfaces struct {
	conn     *Conn
	onChange func([]InterfaceChange)
	resync   time.Duration // full re-read period under Run

	upd sync.Mutex // serializes updates and their onChange calls

	mu      sync.RWMutex
	read    bool   // the table has been read at least once
	gen     uint64 // connection generation of the last full read
	pid     uint32 // VPP's process ID at the last full read
	byName  map[string]Interface
	byIndex map[uint32]Interface
	byTag   map[string]Interface
}

// NewInterfaces returns an empty cache over conn; call Run (or Refresh)
// to fill it. onChange, if not nil, gets every change of the table: it is
// called serialized (never concurrently), from Run's goroutine or from the
// goroutine whose call (Refresh, or a NAT44 call resolving an interface)
// read the table; it must not block nor call Refresh, but may read the
// cache (List, ByName, ...).
func NewInterfaces(conn *Conn, onChange func([]InterfaceChange)) *Interfaces {
	return &Interfaces{conn: conn, onChange: onChange, resync: ResyncInterval}
}

// Refresh reads the whole interface table from VPP and reports what
// changed. After a VPP restart every interface found again is reported
// Changed with Restarted set.
func (t *Interfaces) Refresh(ctx context.Context) error {
	t.upd.Lock()
	defer t.upd.Unlock()
	s := t.conn.session()
	list, err := t.dumpTable(ctx)
	if err != nil {
		return fmt.Errorf("reading VPP interfaces: %w", err)
	}
	if now := t.conn.session(); now.gen != s.gen || now.pid != s.pid {
		return fmt.Errorf("reading VPP interfaces: %w (the connection changed meanwhile)", ErrNotConnected)
	}
	t.mu.RLock()
	old, restarted := t.byName, t.read && t.pid != s.pid
	t.mu.RUnlock()
	changes := diff(old, list, restarted)
	t.store(list, func() { t.read, t.gen, t.pid = true, s.gen, s.pid })
	t.report(changes)
	return nil
}

// forget removes deleted interfaces (by index) without asking VPP, as a
// deleted event says, and reports them.
func (t *Interfaces) forget(indices []uint32) {
	t.upd.Lock()
	defer t.upd.Unlock()
	t.mu.RLock()
	var gone []InterfaceChange
	list := make([]Interface, 0, len(t.byIndex))
	for _, i := range t.byIndex {
		if slices.Contains(indices, i.Index) {
			gone = append(gone, InterfaceChange{Interface: i, Kind: Deleted})
		} else {
			list = append(list, i)
		}
	}
	t.mu.RUnlock()
	if len(gone) == 0 {
		return
	}
	slices.SortFunc(gone, func(a, b InterfaceChange) int { return cmp.Compare(a.Interface.Index, b.Interface.Index) })
	t.store(list, nil)
	t.report(gone)
}

// dumpTable reads every interface (sw_if_index ~0: 0 would also mean all).
func (t *Interfaces) dumpTable(ctx context.Context) ([]Interface, error) {
	var list []Interface
	err := t.conn.dump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: interface_types.InterfaceIndex(noIndex)},
		func(m api.Message) error {
			d, ok := m.(*interfaces.SwInterfaceDetails)
			if !ok {
				return fmt.Errorf("sw_interface_dump: unexpected %s", m.GetMessageName())
			}
			list = append(list, Interface{Index: uint32(d.SwIfIndex), Name: d.InterfaceName, Tag: d.Tag})
			return nil
		})
	return list, err
}

// diff compares the cached table (by name) with a full read.
func diff(old map[string]Interface, now []Interface, restarted bool) []InterfaceChange {
	var out []InterfaceChange
	seen := make(map[string]bool, len(now))
	for _, i := range now {
		seen[i.Name] = true
		o, had := old[i.Name]
		switch {
		case !had:
			out = append(out, InterfaceChange{Interface: i, Kind: Added})
		case restarted || o != i:
			out = append(out, InterfaceChange{Interface: i, Kind: Changed, Old: o, Restarted: restarted})
		}
	}
	for name, o := range old {
		if !seen[name] {
			out = append(out, InterfaceChange{Interface: o, Kind: Deleted, Restarted: restarted})
		}
	}
	// By index; on one index the name that left before the one that came.
	rank := func(k ChangeKind) int { return map[ChangeKind]int{Deleted: 0, Changed: 1, Added: 2}[k] }
	slices.SortFunc(out, func(a, b InterfaceChange) int {
		return cmp.Or(cmp.Compare(a.Interface.Index, b.Interface.Index), cmp.Compare(rank(a.Kind), rank(b.Kind)))
	})
	return out
}

// store replaces the table; also runs under the lock.
func (t *Interfaces) store(list []Interface, also func()) {
	slices.SortFunc(list, func(a, b Interface) int { return cmp.Compare(a.Index, b.Index) })
	byName := make(map[string]Interface, len(list))
	byIndex := make(map[uint32]Interface, len(list))
	byTag := make(map[string]Interface)
	for _, i := range list {
		byName[i.Name] = i
		byIndex[i.Index] = i
		if _, dup := byTag[i.Tag]; i.Tag != "" && !dup {
			byTag[i.Tag] = i // the lowest index wins a shared tag
		}
	}
	t.mu.Lock()
	t.byName, t.byIndex, t.byTag = byName, byIndex, byTag
	if also != nil {
		also()
	}
	t.mu.Unlock()
}

// report hands changes to onChange; called with upd held.
func (t *Interfaces) report(changes []InterfaceChange) {
	if len(changes) == 0 {
		return
	}
	for _, c := range changes {
		t.conn.log.Debug("VPP interface", "change", c.Kind, "name", c.Interface.Name, "index", c.Interface.Index,
			"tag", c.Interface.Tag, "restarted", c.Restarted)
	}
	if t.onChange != nil {
		t.onChange(changes)
	}
}

// List returns the cached interfaces sorted by index.
func (t *Interfaces) List() []Interface {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]Interface, 0, len(t.byIndex))
	for _, i := range t.byIndex {
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b Interface) int { return cmp.Compare(a.Index, b.Index) })
	return out
}

// ByName returns the cached interface with this name.
func (t *Interfaces) ByName(name string) (Interface, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	i, ok := t.byName[name]
	return i, ok
}

// ByIndex returns the cached interface with this sw_if_index.
func (t *Interfaces) ByIndex(idx uint32) (Interface, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	i, ok := t.byIndex[idx]
	return i, ok
}

// InterfaceByTag returns the name of the cached interface with this tag
// (the lowest-numbered one if several share it). Call Refresh first when
// an interface is expected but not found.
func (t *Interfaces) InterfaceByTag(tag string) (name string, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	i, ok := t.byTag[tag]
	return i.Name, ok
}

// fresh refreshes the cache if it predates the current connection.
func (t *Interfaces) fresh(ctx context.Context) error {
	t.mu.RLock()
	stale := !t.read || t.gen != t.conn.generation()
	t.mu.RUnlock()
	if stale {
		return t.Refresh(ctx)
	}
	return nil
}

// index resolves a name to its sw_if_index, refreshing once on a miss.
func (t *Interfaces) index(ctx context.Context, name string) (uint32, bool, error) {
	if err := t.fresh(ctx); err != nil {
		return 0, false, err
	}
	if i, ok := t.ByName(name); ok {
		return i.Index, true, nil
	}
	if err := t.Refresh(ctx); err != nil {
		return 0, false, err
	}
	i, ok := t.ByName(name)
	return i.Index, ok, nil
}

// name resolves a sw_if_index to its name, refreshing once on a miss.
func (t *Interfaces) name(ctx context.Context, idx uint32) (string, bool, error) {
	if err := t.fresh(ctx); err != nil {
		return "", false, err
	}
	if i, ok := t.ByIndex(idx); ok {
		return i.Name, true, nil
	}
	if err := t.Refresh(ctx); err != nil {
		return "", false, err
	}
	i, ok := t.ByIndex(idx)
	return i.Name, ok, nil
}
