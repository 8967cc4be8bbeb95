package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"contiv.dev/vpp/servicerenderer/cnat"
)

const renderCNATGolden = "testdata/render-cluster-node-1-cnat.golden"

// TestRenderCNATGolden renders the example cluster for node-1 through the
// cnat renderer and compares the output with the golden file (-update
// rewrites it).
func TestRenderCNATGolden(t *testing.T) {
	code, out, errs := contivctl(t, "", "render", "-f", clusterYAML, "--node", "node-1", "--renderer", "cnat")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if *update {
		if err := os.WriteFile(renderCNATGolden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(renderCNATGolden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("render differs from %s:\n%s", renderCNATGolden, out)
	}
	// The renderer named by the configuration file gives the same bytes.
	cfg := writeFile(t, "renderer: cnat\n")
	if _, again, errs := contivctl(t, "", "render", "-f", clusterYAML, "--node", "node-1", "--config", cfg); again != out {
		t.Errorf("renderer: cnat in --config differs:\n%s\n%s", again, errs)
	}
	// --renderer nat44 overrides the file and gives the NAT44 golden.
	nat, err := os.ReadFile(renderGolden)
	if err != nil {
		t.Fatal(err)
	}
	if _, got, errs := contivctl(t, "", "render", "-f", clusterYAML, "--node", "node-1", "--config", cfg, "--renderer", "nat44"); got != string(nat) {
		t.Errorf("--renderer nat44 differs from %s:\n%s\n%s", renderGolden, got, errs)
	}
}

func TestRenderCNATJSON(t *testing.T) {
	code, out, errs := contivctl(t, "", "render", "-f", clusterYAML, "--node", "node-1", "--renderer", "cnat", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got renderCNATOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Renderer != "cnat" || got.NodeID != 1 || got.NodeConfig == nil || got.NodeConfig.Policy != cnat.PolicyK8S ||
		got.NodeConfig.SNAT4.String() != "192.168.16.1" || len(got.Skipped) != 3 {
		t.Errorf("%+v", got)
	}
	// The translations are those of the table output, in its order.
	golden, _ := os.ReadFile(renderCNATGolden)
	var lines []string
	for _, l := range strings.Split(string(golden), "\n") {
		if strings.HasPrefix(l, "translation ") {
			lines = append(lines, l)
		}
	}
	if len(got.Translations) != len(lines) || len(lines) == 0 {
		t.Fatalf("%d translations in JSON, %d in %s", len(got.Translations), len(lines), renderCNATGolden)
	}
	for i, tr := range got.Translations {
		if l := cnatTranslationLine(tr); l != lines[i] {
			t.Errorf("translation %d: %s, table says %s", i, l, lines[i])
		}
	}
	// The NAT44 JSON is not given: it has no "desired" field.
	if strings.Contains(out, `"desired"`) {
		t.Errorf("cnat JSON holds NAT44 fields:\n%s", out)
	}
}

func TestRenderCNATErrors(t *testing.T) {
	code, out, errs := contivctl(t, "", "render", "-f", clusterYAML, "--node", "node-1", "--renderer", "vpp")
	if code != 2 || out != "" || !strings.Contains(errs, `--renderer "vpp": want nat44 or cnat`) {
		t.Errorf("bad renderer: exit %d, %q, %q", code, out, errs)
	}
	code, _, errs = contivctl(t, "", "trace", "10.96.10.30:8080/TCP", "--renderer", "cnat")
	if code != 2 || !strings.Contains(errs, "they need -f FILE") {
		t.Errorf("--renderer without -f: exit %d, %q", code, errs)
	}
}

// TestTraceCNAT: an offline trace through the cnat renderer names the
// translation and the backends with their shares, as the simulated VPP's
// cnat oracle answers; an address nothing translates is not translated.
func TestTraceCNAT(t *testing.T) {
	code, out, errs := contivctl(t, "", "trace", "10.96.10.30:8080/TCP", "-f", clusterYAML, "--node", "node-1", "--renderer", "cnat")
	if code != 0 {
		t.Fatalf("trace through cnat: exit %d, %q", code, errs)
	}
	// FACTS §6: a local backend sees the real client, a remote one the
	// node IP.
	for _, want := range []string{"cnat translation", "50.0%",
		"10.1.1.4:8080  0    50.0%        192.0.2.1 (client's, kept)",
		"10.1.3.4:8080  0    50.0%        192.168.16.1 (rewritten: cnat source NAT)"} {
		if !strings.Contains(out, want) {
			t.Errorf("trace lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = contivctl(t, "", "trace", "10.96.99.99:80/TCP", "-f", clusterYAML, "--node", "node-1", "--renderer", "cnat")
	if code != 0 || !strings.Contains(out, "not translated") {
		t.Errorf("trace of an unknown VIP through cnat: exit %d:\n%s", code, out)
	}
}
