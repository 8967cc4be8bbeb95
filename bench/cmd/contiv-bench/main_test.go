package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// os/signal's watcher goroutine, started by signal.NotifyContext, lives
// as long as the process.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("os/signal.loop")) }

func TestFlagErrors(t *testing.T) {
	for _, args := range [][]string{{"-n", "10,x"}, {"-n", "0"}, {"extra"}, {"-figures", "nope"}, {"-fanout-k", "50,x"}} {
		var out, errb bytes.Buffer
		if err := run(args, &out, &errb); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// TestDecodeOnly runs the cheapest figure and checks the table and the
// JSON file.
func TestDecodeOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	var out, errb bytes.Buffer
	if err := run([]string{"-figures", "decode", "-runs", "1", "-decode-iters", "200", "-out", path}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "decode one EndpointSlice") {
		t.Errorf("table:\n%s", out.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		DecodeUS float64 `json:"decode_us"`
	}
	if err := json.Unmarshal(b, &got); err != nil || got.DecodeUS <= 0 {
		t.Errorf("results.json %s: %v", b, err)
	}
}
