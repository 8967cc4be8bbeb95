package e2evpp

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Node 1's agent records every binary-API message it exchanges with its VPP
// (plugins/vpp's Recorder, CONTIV_VPP_RECORD) into the run's artifacts.
// With E2EVPP_RECORD=1 the suite keeps, at the end of each renderer's run,
// a trimmed copy in testdata/vpp-<version>/records-e2evpp/<renderer>.jsonl
// (README.md there), which the simulated VPP's replay test
// (plugins/vpp/sim/records_e2evpp_test.go) replays in make test. A normal
// run leaves the tree alone.

// recordEnv asks the suite to keep the record in testdata.
const recordEnv = "E2EVPP_RECORD"

// keepReads is how many identical answers to one read-only request the
// kept record holds: the periodic resyncs and health probes repeat the
// same dumps and pings every few seconds.
const keepReads = 2

// maxRecord is the size past which the kept record is gzipped.
const maxRecord = 2 << 20

// recorded tells whether the node's agent records: node 1's own agent
// (not a second agent pointed at its VPP).
func (n *node) recorded() bool { return n.id == 1 && n.sock == "" && !n.s.noRecord }

// recordFile is where node 1's agent records, among the run's artifacts.
func (s *suite) recordFile() string { return s.artifact("node-1-vpp-api.jsonl") }

// keepRecord copies node 1's record, trimmed, into testdata when
// E2EVPP_RECORD=1.
func (s *suite) keepRecord() {
	if os.Getenv(recordEnv) != "1" || s.noRecord {
		return
	}
	if s.t.Failed() {
		// What VPP answered is still what VPP answers, whatever the
		// agent got wrong: the record is kept.
		s.t.Logf("%s: the run failed; its record is kept all the same", recordEnv)
	}
	raw, err := os.ReadFile(s.recordFile())
	if err != nil {
		s.t.Errorf("%s: %v", recordEnv, err)
		return
	}
	kept, dropped, err := trimRecord(raw, s.renderer)
	if err != nil {
		s.t.Errorf("%s: trimming %s: %v", recordEnv, s.recordFile(), err)
		return
	}
	dir := filepath.Join("..", "testdata", "vpp-"+release(env.version), "records-e2evpp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.t.Error(err)
		return
	}
	name := s.renderer
	if s.recordAs != "" {
		name = s.recordAs
	}
	out := filepath.Join(dir, name+".jsonl")
	_ = os.Remove(out)
	_ = os.Remove(out + ".gz")
	if len(kept) > maxRecord {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(kept)
		_ = zw.Close()
		kept, out = b.Bytes(), out+".gz"
	}
	if err := os.WriteFile(out, kept, 0o644); err != nil {
		s.t.Error(err)
		return
	}
	s.t.Logf("%s: kept %s (%d bytes; %d repeated reads dropped)", recordEnv, out, len(kept), dropped)
}

// release is a VPP version's release, "25.02" of "25.02.0-release".
func release(version string) string {
	v, _, _ := strings.Cut(version, "-")
	if f := strings.Split(v, "."); len(f) > 2 {
		v = f[0] + "." + f[1]
	}
	return v
}

// trimRecord keeps every record of a record file but the repeats of a
// read-only request with the same answer past keepReads, names the
// scenario and numbers the steps anew.
func trimRecord(raw []byte, scenario string) ([]byte, int, error) {
	seen := map[string]int{}
	var out bytes.Buffer
	dropped, step := 0, 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var r map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, 0, fmt.Errorf("line %d: %w", line, err)
		}
		var req struct {
			Name string `json:"name"`
		}
		if q, ok := r["request"]; ok {
			_ = json.Unmarshal(q, &req)
		}
		if readOnly(req.Name) && len(r["error"]) == 0 {
			key := string(r["request"]) + string(r["replies"])
			seen[key]++
			if seen[key] > keepReads {
				dropped++
				continue
			}
		}
		r["scenario"], _ = json.Marshal(scenario)
		// Steps start again with each agent process: number the kept lines.
		step++
		r["step"], _ = json.Marshal(step)
		b, err := json.Marshal(r)
		if err != nil {
			return nil, 0, err
		}
		out.Write(append(b, '\n'))
	}
	return out.Bytes(), dropped, sc.Err()
}

// readOnly tells a request that changes nothing in VPP (want_* registers
// the connection for events: it counts as a change).
func readOnly(name string) bool {
	return strings.HasSuffix(name, "_dump") || strings.HasSuffix(name, "_get") || strings.Contains(name, "_get_") || name == "control_ping" ||
		strings.HasPrefix(name, "show_") || strings.Contains(name, "_show_")
}
