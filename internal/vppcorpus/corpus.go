// Package vppcorpus reads the recorded binary-API corpus of a real VPP
// 25.02 (testdata/vpp-25.02/corpus at the module root, a copy of
// ../shared/vpp/corpus; format in its README.md):
// one JSON record per request with the replies VPP gave. The simulated
// VPP's replay test and the govpp client's tests both read it.
package vppcorpus

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// EnvDir overrides where the corpus is.
const EnvDir = "CONTIV_VPP_CORPUS"

// Msg is one recorded message: its name, CRC and the JSON of the govpp
// binapi struct (every json tag of which has omitempty).
type Msg struct {
	Name   string          `json:"name"`
	CRC    string          `json:"crc"`
	Fields json.RawMessage `json:"fields"`
}

// Compat is a record of govpp's compatibility check.
type Compat struct {
	Checked      int      `json:"checked"`
	Incompatible []string `json:"incompatible"`
}

// Record is one line of a scenario file.
type Record struct {
	Scenario string  `json:"scenario"`
	Step     int     `json:"step"`
	Note     string  `json:"note"`
	Request  *Msg    `json:"request"`
	Replies  []Msg   `json:"replies"`
	Events   []Msg   `json:"events"`
	Error    string  `json:"error"`
	Compat   *Compat `json:"compat"`
}

// Dir is the corpus directory: $CONTIV_VPP_CORPUS, else the project's own
// copy, testdata/vpp-25.02/corpus under the module root (the directory
// holding go.mod, found by walking up from the working directory). The copy
// is the project's record of what VPP 25.02 answered (taken from
// ../shared/vpp/corpus; TestCopyEqualsShared keeps them equal where the
// shared one is present). It fails when the corpus is not there.
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory: cannot locate the recorded VPP corpus (set " + EnvDir + ")")
		}
		dir = up
	}
	c := filepath.Join(dir, "testdata", "vpp-25.02", "corpus")
	if _, err := os.Stat(filepath.Join(c, "README.md")); err != nil {
		return "", fmt.Errorf("the recorded VPP 25.02 corpus is missing (expected at %s; set %s): %w", c, EnvDir, err)
	}
	return c, nil
}

// Read reads one scenario file.
func Read(path string) ([]*Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		r := &Record{}
		if err := json.Unmarshal(sc.Bytes(), r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// Scenario reads the scenario file NAME.jsonl of the corpus.
func Scenario(name string) ([]*Record, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	return Read(filepath.Join(dir, name+".jsonl"))
}
