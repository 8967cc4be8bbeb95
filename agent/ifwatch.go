package agent

import (
	"context"
	"regexp"
	"strings"
	"time"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/service"
)

// ifacePoll is how often the interface table is re-read to notice pod
// interfaces the CNI created or removed after their pod was reflected.
const ifacePoll = 2 * time.Second

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
			b.WriteString(regexp.QuoteMeta("{{"))
			rest = rest[2:]
		}
	}
	b.WriteString("$")
	return tagParser{re: regexp.MustCompile(b.String())}
}

func (p tagParser) parse(tag string) (ns, pod string, ok bool) {
	m := p.re.FindStringSubmatch(tag)
	if m == nil {
		return "", "", false
	}
	return m[p.re.SubexpIndex("ns")], m[p.re.SubexpIndex("pod")], true
}

// watchInterfaces re-reads VPP's interface table periodically and queues a
// PodInterfaceEvent for every pod whose interface appeared, changed or
// disappeared, so the service processor looks it up again.
func (a *Agent) watchInterfaces(ctx context.Context) {
	parser := newTagParser(a.cfg.NAT44.PodInterfaceTag)
	seen := a.podInterfaces(parser)
	t := time.NewTicker(ifacePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := a.ifaces.Refresh(ctx); err != nil {
			continue // VPP away: the reconnect resyncs everything
		}
		now := a.podInterfaces(parser)
		for pod, name := range now {
			if seen[pod] != name {
				a.ctl.Push(&service.PodInterfaceEvent{Namespace: pod[0], Name: pod[1]})
			}
		}
		for pod := range seen {
			if _, ok := now[pod]; !ok {
				a.ctl.Push(&service.PodInterfaceEvent{Namespace: pod[0], Name: pod[1]})
			}
		}
		seen = now
	}
}

// podInterfaces maps each pod with a tagged interface to the interface name.
func (a *Agent) podInterfaces(p tagParser) map[[2]string]string {
	m := map[[2]string]string{}
	for _, i := range a.ifaces.List() {
		if ns, pod, ok := p.parse(i.Tag); ok {
			m[[2]string{ns, pod}] = i.Name
		}
	}
	return m
}
