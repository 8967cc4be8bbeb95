package agent

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"contiv.dev/vpp/contivconf"
)

// FuzzTagParser checks the pod interface tag parser against the tag
// format's only writer, NAT44Config.InterfaceTag: for every format the
// configuration accepts, the tag of a pod with valid Kubernetes names
// parses back to that pod, and any tag that parses is the tag of the pod it
// names (no tag is attributed to the wrong pod).
func FuzzTagParser(f *testing.F) {
	f.Add(contivconf.TagNamespace+"/"+contivconf.TagPod, "shop", "frontend-7d9c", "shop/frontend-7d9c")
	f.Add("pod:"+contivconf.TagPod+"@"+contivconf.TagNamespace, "kube-system", "coredns.1", "pod:x@y")
	f.Add(contivconf.TagNamespace+"_"+contivconf.TagPod+"{{", "a", "b", "a_b{{")
	f.Add(contivconf.TagNamespace+"/"+contivconf.TagPod, "a-b", "c", "a/b/c")
	f.Fuzz(func(t *testing.T, format, ns, pod, tag string) {
		n := contivconf.Defaults().NAT44
		n.PodInterfaceTag = format
		if !tagFormatAccepted(format) {
			return
		}
		p := newTagParser(format)
		if validation.IsDNS1123Label(ns) == nil && validation.IsDNS1123Subdomain(pod) == nil {
			want := n.InterfaceTag(ns, pod)
			gotNS, gotPod, ok := p.parse(want)
			if !ok || gotNS != ns || gotPod != pod {
				t.Fatalf("format %q: tag %q of %s/%s parses as %q/%q (ok=%v)", format, want, ns, pod, gotNS, gotPod, ok)
			}
		}
		if gotNS, gotPod, ok := p.parse(tag); ok {
			if back := n.InterfaceTag(gotNS, gotPod); back != tag {
				t.Fatalf("format %q: tag %q parses as %q/%q, whose tag is %q", format, tag, gotNS, gotPod, back)
			}
		}
	})
}

// tagFormatAccepted tells whether configuration validation accepts format
// as nat44.podInterfaceTag (the agent never sees a refused one).
func tagFormatAccepted(format string) bool {
	c := contivconf.Defaults()
	c.NAT44.PodInterfaceTag = format
	err := c.Validate()
	var fe *contivconf.FieldError
	for _, e := range unjoin(err) {
		if errors.As(e, &fe) && fe.Path == "nat44.podInterfaceTag" {
			return false
		}
	}
	return true
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
