package vppcorpus

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadsTheCorpus(t *testing.T) {
	recs, err := Scenario("plugin")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || recs[0].Request == nil || recs[0].Request.Name != "nat44_show_running_config" || len(recs[0].Replies) != 1 {
		t.Fatalf("plugin.jsonl's first record: %+v", recs[0])
	}
}

func TestNamesWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvDir, dir)
	if _, err := Scenario("absent"); err == nil {
		t.Error("a missing scenario file read without error")
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"step\":1}\n{nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(bad); err == nil || !strings.Contains(err.Error(), "bad.jsonl:2") {
		t.Errorf("a bad line: %v, want the file and line named", err)
	}
}

// TestCopyEqualsShared keeps the project's copy of the corpus equal to
// ../shared/vpp/corpus where that is present (CI has it; a plain clone
// need not).
func TestCopyEqualsShared(t *testing.T) {
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(dir, "..", "..", "..", "..", "shared", "vpp", "corpus")
	entries, err := os.ReadDir(shared)
	if err != nil {
		t.Skipf("no shared corpus beside the project (%v): nothing to compare", err)
	}
	for _, e := range entries {
		want, err := os.ReadFile(filepath.Join(shared, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Errorf("%s: in ../shared/vpp/corpus, not in the project's copy: %v", e.Name(), err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from ../shared/vpp/corpus: copy it again", e.Name())
		}
	}
}
