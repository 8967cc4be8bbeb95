package vppcorpus

import (
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
