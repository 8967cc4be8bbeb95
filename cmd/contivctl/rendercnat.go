package main

import (
	"cmp"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	"contiv.dev/vpp/agent/offline"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/servicerenderer/cnat"
)

// renderCNATOutput is what render --renderer cnat -o json prints.
type renderCNATOutput struct {
	Node     string       `json:"node"`
	NodeID   uint32       `json:"nodeID"`
	NodeIP   netip.Prefix `json:"nodeIP"`
	MgmtIPs  []netip.Addr `json:"mgmtIPs"`
	Renderer string       `json:"renderer"`
	// Translations are the desired translations, sorted by key; NodeConfig
	// the desired node configuration.
	Translations []*cnat.Translation `json:"translations"`
	NodeConfig   *cnat.Node          `json:"nodeConfig"`
	Failures     []cnat.Failure      `json:"failures"`
	Conflicts    []cnat.Conflict     `json:"conflicts"`
	Skipped      []service.Skip      `json:"skipped"`
}

func newRenderCNATOutput(r *offline.Rendered) renderCNATOutput {
	return renderCNATOutput{
		Node: r.Node, NodeID: r.NodeID, NodeIP: r.NodeIP, MgmtIPs: r.MgmtIPs, Renderer: r.Renderer,
		Translations: nonNil(r.CNAT.Desired), NodeConfig: r.CNAT.DesiredNode,
		Failures: nonNil(r.CNAT.Failures), Conflicts: nonNil(r.CNAT.Conflicts), Skipped: nonNil(r.Skipped),
	}
}

// cnatNodeLines are a cnat node configuration, one line per object: the
// SNAT addresses and policy, the exclude prefixes, then per interface
// (sorted) its SNAT tables and features.
func cnatNodeLines(n *cnat.Node) []string {
	if n == nil {
		return nil
	}
	addr := func(a netip.Addr) string {
		if !a.IsValid() {
			return "-"
		}
		return a.String()
	}
	out := []string{fmt.Sprintf("snat ip4=%s ip6=%s policy=%s", addr(n.SNAT4), addr(n.SNAT6), policyName(n.Policy))}
	for _, p := range n.Exclude {
		out = append(out, "exclude "+p.String())
	}
	names := make([]string, 0, len(n.Features)+len(n.Tables))
	for name := range n.Features {
		names = append(names, name)
	}
	for name := range n.Tables {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		line := "interface " + name
		if t := tableNames(n.Tables[name]); t != "" {
			line += " tables=" + t
		}
		if f := featureNames(n.Features[name]); f != "" {
			line += " features=" + f
		}
		out = append(out, line)
	}
	return out
}

func policyName(p cnat.SNATPolicy) string {
	switch p {
	case cnat.PolicyNone:
		return "none"
	case cnat.PolicyIfPfx:
		return "if-pfx"
	case cnat.PolicyK8S:
		return "k8s"
	}
	return fmt.Sprint(uint8(p))
}

func tableNames(t cnat.Tables) string {
	var names []string
	for i, name := range []string{"include-v4", "include-v6", "pod", "host"} {
		if t.Has(cnat.SNATTable(i)) {
			names = append(names, name)
		}
	}
	return strings.Join(names, ",")
}

func featureNames(f cnat.Feature) string {
	var names []string
	for _, one := range cnat.AllFeatures {
		if f&one != 0 {
			names = append(names, cnat.FeatureNode(one)+"/"+cnat.FeatureArc(one))
		}
	}
	return strings.Join(names, ",")
}

// cnatTranslationLine is one translation: its key, LB type, flow hash,
// is_real_ip and paths (a repeated path is listed each time: it weighs
// more).
func cnatTranslationLine(t *cnat.Translation) string {
	lb := "default"
	if t.LB == cnat.LBMaglev {
		lb = "maglev"
	}
	paths := make([]string, len(t.Paths))
	for i, p := range t.Paths {
		paths[i] = netip.AddrPortFrom(p.IP, p.Port).String()
	}
	return fmt.Sprintf("translation %s lb=%s fhc=%d real=%v -> %s", t.Key, lb, t.FlowHash, t.RealIP, strings.Join(paths, ", "))
}

// cnatRouteLines are a cnat node configuration's routes, the service-CIDR
// drop routes and the verdict routes, one line each in the NAT44 render's
// form ("route prefix vrf=N drop|reject|lookup table=T"), sorted as it
// sorts them: by prefix, then VRF.
func cnatRouteLines(n *cnat.Node) []string {
	if n == nil {
		return nil
	}
	routes := slices.Concat(n.Routes, n.Verdicts)
	slices.SortFunc(routes, func(a, b cnat.Route) int {
		return cmp.Or(a.Prefix.Addr().Compare(b.Prefix.Addr()), cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits()), a.Compare(b))
	})
	out := make([]string, len(routes))
	for i, rt := range routes {
		out[i] = "route " + rt.String()
		if rt.Kind == cnat.RouteDrop {
			out[i] += " drop"
		}
	}
	return out
}

// printCNAT prints the cnat node configuration, its routes, the
// translations, the failures and the conflicts.
func printCNAT(w io.Writer, c *offline.CNATRendered) error {
	var b strings.Builder
	for _, l := range slices.Concat(cnatNodeLines(c.DesiredNode), cnatRouteLines(c.DesiredNode)) {
		b.WriteString(l + "\n")
	}
	for _, t := range c.Desired {
		b.WriteString(cnatTranslationLine(t) + "\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	err := section(w, failuresTitle, c.Failures, []string{"OBJECT", "CALL", "REASON"}, func(f cnat.Failure) []string {
		return []string{f.Object.String(), f.Op.String(), f.Reason}
	})
	if err == nil {
		err = section(w, conflictsTitle, c.Conflicts, conflictHeader, func(cf cnat.Conflict) []string {
			return []string{cf.Key.String(), cf.Winner.String(), joinStrings(cf.Losers, ",")}
		})
	}
	return err
}
