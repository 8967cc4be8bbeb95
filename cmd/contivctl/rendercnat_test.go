package main

import (
	"encoding/json"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"contiv.dev/vpp/agent/restapi"
	"contiv.dev/vpp/contivconf"
	sr "contiv.dev/vpp/servicerenderer"
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
// cnat oracle answers; an address of the service CIDR nothing translates
// is dropped by the service-CIDR route, as under NAT44.
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
	if code != 0 || !strings.Contains(out, "dropped (no translation matched; dropped by the service-CIDR route") {
		t.Errorf("trace of an unknown VIP through cnat: exit %d:\n%s", code, out)
	}
}

// cannedCNATViews are the views of an agent running renderer cnat on
// node-1 whose VPP holds an older translation of the cart service: one
// local backend listed twice and a remote one.
func cannedCNATViews() map[string]any {
	ip := netip.MustParseAddr
	cart := cnat.Key{IP: ip("10.96.10.30"), Port: 8080, Proto: sr.TCP}
	held := &cnat.Translation{Key: cart, Paths: []cnat.Path{{IP: ip("10.1.1.4"), Port: 8080}, {IP: ip("10.1.1.4"), Port: 8080}, {IP: ip("10.1.3.4"), Port: 8080}}}
	wanted := &cnat.Translation{Key: cart, Paths: []cnat.Path{{IP: ip("10.1.1.4"), Port: 8080}, {IP: ip("10.1.3.4"), Port: 8080}}}
	node := &cnat.Node{SNAT4: ip("192.168.16.1"), Policy: cnat.PolicyK8S,
		Tables: map[string]cnat.Tables{"tap-shop-cart-1": 1<<cnat.TableIncludeV4 | 1<<cnat.TablePod}}
	cfg := contivconf.Defaults()
	cfg.Renderer = contivconf.RendererCNAT
	return map[string]any{
		"config": cfg,
		"cnat":   restapi.CNATView{Desired: []*cnat.Translation{wanted}, Applied: []*cnat.Translation{held}, DesiredNode: node, AppliedNode: node},
		"ipam":   restapi.IPAMView{NodeID: 1, PodSubnet: netip.MustParsePrefix("10.1.1.0/24")},
	}
}

// TestTraceCNATAgainstCannedAgent: contivctl trace asks the agent's
// renderer and, for cnat, answers from what VPP holds (a path repeated k
// times of n weighs k/n), with a note when the agent wants another
// translation.
func TestTraceCNATAgainstCannedAgent(t *testing.T) {
	url := serveViews(t, cannedCNATViews())
	code, out, errs := contivctl(t, "", "trace", "10.96.10.30:8080/TCP", "--agent", url)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"10.96.10.30:8080/TCP from 192.0.2.1: translated (cnat translation), tag cnat translation 10.96.10.30:8080/TCP",
		"10.1.1.4:8080 0 66.7% 192.0.2.1 (client's, kept)",
		"10.1.3.4:8080 0 33.3% 192.168.16.1 (rewritten: cnat source NAT)",
	} {
		if !strings.Contains(fields(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "note: VPP does not hold the cnat translation the agent wants for 10.96.10.30:8080/TCP") ||
		!strings.Contains(errs, "wanted: translation 10.96.10.30:8080/TCP lb=default fhc=0 real=false -> 10.1.1.4:8080, 10.1.3.4:8080") {
		t.Errorf("no note on the pending change: %s", errs)
	}
	// An untranslated address, from a pod: no note, it leaves unchanged
	// (the main NIC is not in INCLUDE_V4).
	code, out, errs = contivctl(t, "", "trace", "10.96.10.31:8080/TCP", "--agent", url, "--from", "10.1.1.4")
	if code != 0 || !strings.Contains(out, "not translated (no cnat translation of 10.96.10.31 port 8080 protocol 6)") || errs != "" {
		t.Errorf("no translation: exit %d\n%s%s", code, out, errs)
	}
	// IPv6: a family the target and --from must share.
	code, out, errs = contivctl(t, "", "trace", "[fd00:96::50]:80/TCP", "--agent", url)
	if code != 0 || !strings.Contains(out, "[fd00:96::50]:80/TCP from 2001:db8::1: not translated") {
		t.Errorf("IPv6 target: exit %d\n%s%s", code, out, errs)
	}
}

// TestTraceIPv6AgainstNAT44Agent: an agent running nat44 cannot trace an
// IPv6 target.
func TestTraceIPv6AgainstNAT44Agent(t *testing.T) {
	url := serveViews(t, cannedViews())
	code, out, errs := contivctl(t, "", "trace", "[fd00::10]:53/UDP", "--agent", url)
	if code != 2 || out != "" || !strings.Contains(errs, "NAT44 translates IPv4 only (the agent at "+url+" runs renderer nat44)") {
		t.Errorf("exit %d, %q, %q", code, out, errs)
	}
}

// TestRenderCNATRoutes: render through cnat prints the routes cnat
// programs, line for line as the NAT44 render prints the same routes: the
// service-CIDR drop routes and their lookups in the pod VRF. The example's
// cluster IPs all have endpoints, so cnat translates each of them and
// makes none of NAT44's reject routes (cnat's own FIB entry on a
// translated address would hide it).
func TestRenderCNATRoutes(t *testing.T) {
	routes := func(renderer string) []string {
		code, out, errs := contivctl(t, "", "render", "-f", clusterYAML, "--node", "node-1", "--renderer", renderer)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", renderer, code, errs)
		}
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "route ") {
				lines = append(lines, l)
			}
		}
		return lines
	}
	got, nat44 := routes("cnat"), routes("nat44")
	if len(nat44) == 0 || !slices.Contains(nat44, "route 10.96.0.0/12 vrf=0 drop") {
		t.Fatalf("the NAT44 render prints no service-CIDR drop route: %q", nat44)
	}
	want := slices.DeleteFunc(slices.Clone(nat44), func(l string) bool { return strings.HasSuffix(l, "/32 vrf=0 reject") })
	if len(want) == len(nat44) {
		t.Fatalf("the NAT44 render prints no reject route: %q", nat44)
	}
	if !slices.Equal(got, want) {
		t.Errorf("cnat render's routes differ from NAT44's\n got %q\nwant %q", got, want)
	}
}
