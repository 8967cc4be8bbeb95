package noderegistry

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "nodesync.json")
	if _, ok, err := ReadState(path); ok || err != nil {
		t.Fatalf("missing file: %v %v", ok, err)
	}
	if err := WriteState(path, State{Name: "a", ID: 3}); err != nil {
		t.Fatal(err)
	}
	if err := WriteState(path, State{Name: "a", ID: 4}); err != nil {
		t.Fatal(err)
	}
	st, ok, err := ReadState(path)
	if err != nil || !ok || st != (State{Name: "a", ID: 4}) {
		t.Fatalf("read %+v %v %v", st, ok, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	for _, bad := range []string{`{"name":"a"}`, `{"id":1}`, `[]`} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ReadState(path); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", bad, err)
		}
	}
}
