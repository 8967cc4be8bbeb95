package contivconf

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	samplePath      = "../deploy/examples/agent.yaml"
	nodesSamplePath = "../deploy/examples/agent-nodes.yaml"
)

// TestSampleIsDefaults keeps deploy/examples/agent.yaml equal to Defaults.
func TestSampleIsDefaults(t *testing.T) {
	c, err := Load(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Defaults()) {
		t.Errorf("%s differs from Defaults():\n%s", samplePath, diffJSON(t, c, Defaults()))
	}
}

// diffJSON lists the lines of got's indented JSON that differ from want's.
func diffJSON(t *testing.T, got, want Config) string {
	t.Helper()
	g, err1 := json.MarshalIndent(got, "", "  ")
	w, err2 := json.MarshalIndent(want, "", "  ")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	gl, wl := strings.Split(string(g), "\n"), strings.Split(string(w), "\n")
	var out []string
	for i := range max(len(gl), len(wl)) {
		var a, b string
		if i < len(gl) {
			a = gl[i]
		}
		if i < len(wl) {
			b = wl[i]
		}
		if a != b {
			out = append(out, fmt.Sprintf("file %s\nwant %s", strings.TrimSpace(a), strings.TrimSpace(b)))
		}
	}
	return strings.Join(out, "\n")
}

// TestSampleWritesEveryOption checks that the sample sets every field
// explicitly (not by omission) and comments each line that sets one.
func TestSampleWritesEveryOption(t *testing.T) {
	data, err := os.ReadFile(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := json.Unmarshal(mustYAMLToJSON(t, data), &tree); err != nil {
		t.Fatal(err)
	}
	got := treeLeaves(tree, "")
	want := typeLeaves(reflect.TypeFor[Config](), "")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the sample sets\n %v\nConfig has\n %v", got, want)
	}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		s := strings.TrimSpace(l)
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if i == 0 || !strings.HasPrefix(strings.TrimSpace(lines[i-1]), "#") {
			t.Errorf("%s:%d: %q has no comment line above it", samplePath, i+1, s)
		}
	}
}

// TestSampleListsOverrides keeps the sample's list of environment variables
// and flags complete.
func TestSampleListsOverrides(t *testing.T) {
	data, err := os.ReadFile(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range options() {
		flag := "(no flag)"
		if opt.flag != "" {
			flag = "--" + opt.flag
		}
		re := regexp.MustCompile(`(?m)^#\s+` + regexp.QuoteMeta(opt.env) + `\s+` + regexp.QuoteMeta(flag) + `\s+` + regexp.QuoteMeta(opt.path) + `( |$)`)
		if !re.Match(data) {
			t.Errorf("%s does not list %s %s %s", samplePath, opt.env, flag, opt.path)
		}
	}
}

// TestNodesSample loads the per-node example and checks its overrides.
func TestNodesSample(t *testing.T) {
	c, err := Load(nodesSamplePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.NodeConfig) != 2 || c.Etcd.UseEmbedded() || !c.Etcd.TLS.Enabled() {
		t.Fatalf("unexpected sample: %+v", c)
	}
	n1 := c.ForNode("node-1")
	if n1.MainInterface.IPCIDR != netip.MustParsePrefix("192.168.16.1/24") || n1.MainInterface.IPv6CIDR != netip.MustParsePrefix("2001:db8:16::1/64") || n1.Gateway != netip.MustParseAddr("192.168.16.254") || !n1.NATExternalTraffic || len(n1.OtherInterfaces) != 1 {
		t.Errorf("node-1: %+v", n1)
	}
	n2 := c.ForNode("node-2")
	if !n2.MainInterface.UseDHCP || n2.Gateway.IsValid() || n2.NATExternalTraffic {
		t.Errorf("node-2: %+v", n2)
	}
	if n3 := c.ForNode("node-3"); n3.Gateway != netip.MustParseAddr("192.168.16.100") || !n3.NATExternalTraffic || n3.MainInterface.Name != "" {
		t.Errorf("node-3: %+v", n3)
	}
}

// TestSampleRoundTrip checks that a Config marshalled to JSON (as REST
// serves it) parses back to itself.
func TestSampleRoundTrip(t *testing.T) {
	c, err := Load(nodesSamplePath)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatalf("Parse(%s): %v", b, err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip\n got  %+v\n want %+v", back, c)
	}
}

func mustYAMLToJSON(t *testing.T, data []byte) []byte {
	t.Helper()
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// treeLeaves lists the paths of the values a YAML tree sets; lists are
// leaves.
func treeLeaves(v any, path string) []string {
	m, ok := v.(map[string]any)
	if !ok {
		return []string{path}
	}
	var out []string
	for k, e := range m {
		out = append(out, treeLeaves(e, join(path, k))...)
	}
	return out
}

// typeLeaves lists the paths of Config's settable values; lists are leaves.
func typeLeaves(t reflect.Type, path string) []string {
	if isLeaf(t) || t.Kind() != reflect.Struct {
		return []string{path}
	}
	var out []string
	for i := range t.NumField() {
		if n := jsonName(t.Field(i)); n != "" {
			out = append(out, typeLeaves(t.Field(i).Type, join(path, n))...)
		}
	}
	return out
}
