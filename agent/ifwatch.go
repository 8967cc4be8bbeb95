package agent

import (
	"regexp"
	"slices"
	"strings"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/service"
	"contiv.dev/vpp/plugins/vpp"
)

// tagParser turns a pod interface tag back into the pod's namespace and
// name, following the configured tag format.
type tagParser struct{ re *regexp.Regexp }

func newTagParser(format string) tagParser {
	var b strings.Builder
	b.WriteString("^")
	rest := format
	for rest != "" {
		i := strings.Index(rest, "{{")
		if i < 0 {
			b.WriteString(regexp.QuoteMeta(rest))
			break
		}
		b.WriteString(regexp.QuoteMeta(rest[:i]))
		rest = rest[i:]
		switch {
		case strings.HasPrefix(rest, contivconf.TagNamespace):
			b.WriteString(`(?P<ns>[a-z0-9.-]+)`)
			rest = rest[len(contivconf.TagNamespace):]
		case strings.HasPrefix(rest, contivconf.TagPod):
			b.WriteString(`(?P<pod>[a-z0-9.-]+)`)
			rest = rest[len(contivconf.TagPod):]
		default:
			// A brace that starts no placeholder is text; the next one
			// may start one ("{{{pod}}").
			b.WriteString(regexp.QuoteMeta("{"))
			rest = rest[1:]
		}
	}
	b.WriteString("$")
	return tagParser{re: regexp.MustCompile(b.String())}
}

func (p tagParser) parse(tag string) (ns, pod string, ok bool) {
	m := p.re.FindStringSubmatch(tag)
	i, j := p.re.SubexpIndex("ns"), p.re.SubexpIndex("pod")
	if m == nil || i < 0 || j < 0 {
		return "", "", false
	}
	return m[i], m[j], true
}

// onInterfaces turns VPP's interface changes (reported by vpp.Interfaces
// from VPP's interface events and its re-reads of the table) into
// controller events (interfaceEvents). It runs on the interface cache's
// goroutine and never blocks.
func (a *Agent) onInterfaces(changes []vpp.InterfaceChange) {
	if !a.built.Load() {
		return // the first resync, still to come, reads the table
	}
	for _, ev := range interfaceEvents(changes, a.tags) {
		a.ctl.Push(ev)
	}
}

// interfaceEvents are the controller events of interface changes, in
// order: per change, an InterfaceEvent (renderers are told the interface's
// role again, so that what waited for it is applied, and whether what was
// configured on it is lost), then a PodInterfaceEvent for each pod its old
// or new tag names (the service processor looks the pod up again).
func interfaceEvents(changes []vpp.InterfaceChange, tags tagParser) []controller.Event {
	var out []controller.Event
	for _, c := range changes {
		// A deleted interface took its features with it, and so did one
		// that another interface replaced under the same name (another
		// index), outside a VPP restart: what a restart took, the full
		// resync it brings reads again from VPP, and a restarted VPP often
		// gives a re-created interface its old index, so that a loss
		// handled after that resync configured the new one would wrongly
		// forget the new one's features. The event is handled later,
		// possibly after a full apply already configured the interface that
		// took the name: the lost index tells renderers which one lost its
		// configuration.
		lost := !c.Restarted && (c.Kind == vpp.Deleted || c.Kind == vpp.Changed && c.Old.Index != c.Interface.Index)
		lostIndex := c.Interface.Index
		if c.Kind == vpp.Changed {
			lostIndex = c.Old.Index
		}
		// The loss goes first: a pod looked up while its interface is
		// away loses its role for a moment, and were the renderers still
		// to hold the lost features, they would remove them from the
		// interface the CNI has re-created meanwhile (VPP: -6).
		out = append(out, &service.InterfaceEvent{Name: c.Interface.Name, Lost: lost, LostIndex: lostIndex})
		var pods [][2]string
		for _, i := range []vpp.Interface{c.Interface, c.Old} {
			if ns, pod, ok := tags.parse(i.Tag); ok && !slices.Contains(pods, [2]string{ns, pod}) {
				pods = append(pods, [2]string{ns, pod})
			}
		}
		for _, pod := range pods {
			out = append(out, &service.PodInterfaceEvent{Namespace: pod[0], Name: pod[1]})
		}
	}
	return out
}
