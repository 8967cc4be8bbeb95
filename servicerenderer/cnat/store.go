package cnat

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Store keeps the node configuration applied to VPP (which cannot be read
// back) across agent restarts.
type Store interface {
	// Load returns the stored configuration; nil when none is stored.
	Load() (*Node, error)
	Save(n *Node) error
}

// FileStore is a Store in one JSON file, replaced atomically.
type FileStore struct{ Path string }

// Load implements Store.
func (s FileStore) Load() (*Node, error) {
	b, err := os.ReadFile(s.Path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var n Node
	if err := json.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("cnat node record %s: %w", s.Path, err)
	}
	return &n, nil
}

// Save implements Store.
func (s FileStore) Save(n *Node) error {
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.Path), ".cnat-node-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), s.Path)
}

// MemStore is a Store in memory (tests, and an agent restarting in process).
type MemStore struct {
	mu sync.Mutex
	n  *Node
}

// Load implements Store.
func (s *MemStore) Load() (*Node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		return nil, nil
	}
	return s.n.Clone(), nil
}

// Save implements Store.
func (s *MemStore) Save(n *Node) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n = n.Clone()
	return nil
}
