package noderegistry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// State is the content of a node's local state file: the ID it holds, kept
// outside etcd so that a loss of etcd's data does not move the node to
// another ID.
type State struct {
	Name string `json:"name"`
	ID   uint32 `json:"id"`
}

// ReadState reads the state file at path. A missing file is no error: ok is
// false. A file that cannot be decoded is an error wrapping ErrCorrupt.
func ReadState(path string) (s State, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, fmt.Errorf("state file: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, false, fmt.Errorf("state file %s: %w: %w", path, ErrCorrupt, err)
	}
	if s.Name == "" || s.ID == 0 {
		return State{}, false, fmt.Errorf("state file %s: want a name and an ID > 0, have %+v: %w", path, s, ErrCorrupt)
	}
	return s, true, nil
}

// WriteState replaces the state file at path atomically: a reader sees the
// old content or the new one, never a part.
func WriteState(path string, s State) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("state file %s: %w", path, err)
	}
	// Make the rename itself durable.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
