package vpp

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

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

// Interfaces is a cache of VPP's interface table. It refreshes itself
// when a name or index is missing, and after every reconnect (a restarted
// VPP may number its interfaces differently). Safe for concurrent use.
type Interfaces struct {
	conn *Conn

	mu      sync.RWMutex
	gen     uint64 // connection generation of the last refresh
	byName  map[string]Interface
	byIndex map[uint32]Interface
	byTag   map[string]Interface
}

// NewInterfaces returns an empty cache over conn; call Refresh to fill it.
func NewInterfaces(conn *Conn) *Interfaces {
	return &Interfaces{conn: conn}
}

// Refresh reads the interface table from VPP.
func (t *Interfaces) Refresh(ctx context.Context) error {
	gen := t.conn.generation()
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
	if err != nil {
		return fmt.Errorf("reading VPP interfaces: %w", err)
	}
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
	t.gen, t.byName, t.byIndex, t.byTag = gen, byName, byIndex, byTag
	t.mu.Unlock()
	return nil
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
	stale := t.byName == nil || t.gen != t.conn.generation()
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
