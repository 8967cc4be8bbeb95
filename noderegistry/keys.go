package noderegistry

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"contiv.dev/vpp/kubestate"
)

// Key prefixes of NodeSync's own keys; the node record lives at
// kubestate.Key{Resource: kubestate.ResVppNode, Name: name}.
const (
	IDPrefix       = kubestate.Prefix + "nodesync/id/"
	ReleasedPrefix = kubestate.Prefix + "nodesync/released/"
	JoiningPrefix  = kubestate.Prefix + "nodesync/joining/"
)

// Errors callers branch on.
var (
	// ErrInvalid: bad parameters; retrying cannot help.
	ErrInvalid = errors.New("invalid node sync request")
	// ErrIDTaken: the ID this node held (recorded in its state file or its
	// record) now belongs to another node, or is quarantined for one. The
	// node must not take another ID silently: an operator decides.
	ErrIDTaken = errors.New("node ID taken by another node")
	// ErrIDConflict: etcd and the state file name different IDs for this node.
	ErrIDConflict = errors.New("node ID in etcd differs from the state file")
	// ErrNoFreeID: every ID up to the configured maximum is taken.
	ErrNoFreeID = errors.New("no free node ID")
	// ErrUnavailable: etcd did not answer before the deadline.
	ErrUnavailable = errors.New("etcd unavailable")
	// ErrReleased: the node's record or ID was released (or lost) meanwhile.
	ErrReleased = errors.New("node record released")
	// ErrCorrupt: a stored NodeSync value cannot be decoded.
	ErrCorrupt = errors.New("corrupt node sync record")
)

func recordKey(name string) string {
	return kubestate.Key{Resource: kubestate.ResVppNode, Name: name}.String()
}

func idKey(id uint32) string       { return IDPrefix + strconv.FormatUint(uint64(id), 10) }
func releasedKey(id uint32) string { return ReleasedPrefix + strconv.FormatUint(uint64(id), 10) }
func joiningKey(name string) string {
	return JoiningPrefix + name
}

// parseID parses the ID at the end of key (after prefix).
func parseID(key, prefix string) (uint32, bool) {
	s, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(s, 10, 32)
	if err != nil || id == 0 || strconv.FormatUint(id, 10) != s {
		return 0, false
	}
	return uint32(id), true
}

// checkName refuses names that cannot be a single key segment.
func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("node name %q: must be non-empty and contain no '/': %w", name, ErrInvalid)
	}
	return nil
}

// Tombstone is the value of a released ID's key.
type Tombstone struct {
	// Name is the node that held the ID.
	Name string `json:"name"`
	ID   uint32 `json:"id"`
	// Released is when the ID was released.
	Released time.Time `json:"released"`
	// Quarantine is how long the ID stays reserved.
	Quarantine string `json:"quarantine"`
}

func decodeTombstone(b []byte) (Tombstone, error) {
	var t Tombstone
	if err := json.Unmarshal(b, &t); err != nil {
		return t, fmt.Errorf("tombstone: %w: %w", ErrCorrupt, err)
	}
	return t, nil
}

// decodeRecord decodes a node record stored under name's key.
func decodeRecord(name string, b []byte) (*kubestate.VppNode, error) {
	o, err := kubestate.Decode(kubestate.Key{Resource: kubestate.ResVppNode, Name: name}, b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	rec := o.(*kubestate.VppNode)
	if rec.ID == 0 {
		return nil, fmt.Errorf("record of node %s holds ID 0: %w", name, ErrCorrupt)
	}
	return rec, nil
}
