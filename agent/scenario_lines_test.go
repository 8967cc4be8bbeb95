package agent

// What the scenario steps read back from the agent and the simulated VPP,
// as lines (see scenario_test.go).

import (
	"bytes"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"contiv.dev/vpp/plugins/vpp/sim"
	sr "contiv.dev/vpp/servicerenderer"
)

// traceLines writes NAT44's oracle's answer (both directions) as a trace
// step's lines, in the words cnatTraceLines uses too, so that a trace both
// renderers answer alike is written once: "translated" (NAT44 adds
// "affinity=SECONDS"), then per backend "-> IP:PORT p=SHARE", with
// "src=S" when the backend sees another source and "reply dropped" when
// the reply does not come back.
func traceLines(res sim.Result, p sim.Packet) []string {
	switch res.Verdict {
	case sim.NotTranslated:
		return []string{"not translated"}
	case sim.Dropped:
		return []string{"dropped: " + res.Reason}
	case sim.Rejected:
		return []string{"rejected: " + res.Reason}
	case sim.Leaked:
		return []string{fmt.Sprintf("leaked out of %s source-NATed to %s", res.Egress, res.SNAT)}
	}
	head := "translated"
	if res.Affinity != 0 {
		head += " affinity=" + strconv.FormatUint(uint64(res.Affinity), 10)
	}
	out := []string{head}
	for _, b := range res.Backends {
		l := fmt.Sprintf("-> %s p=%.3g", netip.AddrPortFrom(b.IP, b.Port), b.Probability)
		if b.Src != p.Src {
			l += " src=" + b.Src.String()
		}
		if b.Reply == sim.Dropped {
			l += " reply dropped"
		}
		out = append(out, l)
	}
	return out
}

// translationID is a cnat translation's id in a trace's reason: VPP's pool
// index, which depends on the order translations were made in, so the
// lines leave it out.
var translationID = regexp.MustCompile(`cnat translation \d+`)

// cnatTraceLines writes the cnat oracle's answer as a trace step's lines
// (see traceLines): "translated" (with "maglev" for a Maglev
// translation), then per backend "-> IP:PORT p=SHARE [src=S]", ending in
// "dropped: REASON" when the connection fails; "not translated" (with
// "src=S" when the SNAT policy rewrites the source) or "dropped: REASON"
// when no path is resolved.
func cnatTraceLines(res sim.CnatResult, p sim.Packet, ts []sim.CnatTranslation) []string {
	switch res.Verdict {
	case sim.NotTranslated:
		if res.Src.IsValid() && res.Src != p.Src {
			return []string{"not translated src=" + res.Src.String()}
		}
		return []string{"not translated"}
	case sim.Dropped:
		return []string{"dropped: " + translationID.ReplaceAllString(res.Reason, "cnat translation")}
	case sim.Rejected:
		return []string{"rejected: " + translationID.ReplaceAllString(res.Reason, "cnat translation")}
	}
	head := "translated"
	if i := slices.IndexFunc(ts, func(t sim.CnatTranslation) bool { return t.ID == res.TranslationID }); i >= 0 && ts[i].LBType == 1 {
		head += " maglev"
	}
	out := []string{head}
	for _, b := range res.Backends {
		l := fmt.Sprintf("-> %s p=%.3g", b.Backend, b.Weight)
		if b.Src != p.Src {
			l += " src=" + b.Src.String()
		}
		if b.Verdict != sim.Translated {
			l += " dropped: " + b.Reason
		}
		out = append(out, l)
	}
	return out
}

// reported lists what the agent reports as left out, contested or refused.
func reported(a *Agent) []string {
	var out []string
	for _, sk := range a.Processor().Skipped() {
		l := fmt.Sprintf("skipped %s %s", sk.Object.Resource, sk.Object.ID())
		if sk.Port != "" {
			l += " port=" + sk.Port
		}
		l += " " + sk.Reason.String()
		if sk.Detail != "" {
			l += ": " + sk.Detail
		}
		out = append(out, l)
	}
	if a.cnat != nil {
		for _, c := range a.cnat.Conflicts() {
			out = append(out, conflictLine(c.Key.String(), c.Winner, c.Losers))
		}
		for _, f := range a.cnat.Failures() {
			out = append(out, fmt.Sprintf("failure %s %s: %s", f.Object, f.Op, f.Reason))
		}
		return out
	}
	for _, c := range a.Renderer().Conflicts() {
		out = append(out, conflictLine(c.Key.String(), c.Winner, c.Losers))
	}
	for _, f := range a.Renderer().Failures() {
		out = append(out, fmt.Sprintf("failure %s %s: %s", f.Object, f.Op, f.Reason))
	}
	return out
}

// conflictLine is a reported conflict: "conflict FRONTEND winner=ID losers=ID,...".
func conflictLine(key string, winner sr.ServiceID, losers []sr.ServiceID) string {
	ls := make([]string, len(losers))
	for i, id := range losers {
		ls[i] = id.String()
	}
	return fmt.Sprintf("conflict %s winner=%s losers=%s", key, winner, strings.Join(ls, ","))
}

// filterLines keeps the lines whose first word is one of kinds (all lines
// when kinds is empty).
func filterLines(lines []string, kinds map[string]bool) []string {
	if len(kinds) == 0 {
		return lines
	}
	var out []string
	for _, l := range lines {
		kind, _, _ := strings.Cut(l, " ")
		if kinds[kind] {
			out = append(out, l)
		}
	}
	return out
}

// diffLines shows the lines only one side has.
func diffLines(want, got []string) string {
	var b bytes.Buffer
	for _, l := range want {
		if !slices.Contains(got, l) {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	if b.Len() == 0 {
		fmt.Fprintf(&b, "same lines in another order:\n%s", strings.Join(got, "\n"))
	}
	return b.String()
}
