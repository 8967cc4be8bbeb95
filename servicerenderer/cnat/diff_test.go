package cnat

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	sr "contiv.dev/vpp/servicerenderer"
)

func TestDiffTranslation(t *testing.T) {
	a := &Translation{Key: key("10.96.0.10", 80, sr.TCP), Paths: []Path{path("10.1.1.11", 8080)}}
	b := &Translation{Key: a.Key, Paths: []Path{path("10.1.1.12", 8080)}}
	m := &Translation{Key: a.Key, Paths: a.Paths, LB: LBMaglev, FlowHash: FlowHashSrcIP}
	same := &Translation{Key: a.Key, Paths: []Path{path("10.1.1.11", 8080)}}
	kinds := func(ops []Op) []OpKind {
		var out []OpKind
		for _, o := range ops {
			out = append(out, o.Kind)
		}
		return out
	}
	cases := []struct {
		name             string
		desired, applied *Translation
		want             []OpKind
	}{
		{"both nil", nil, nil, nil},
		{"equal", a, same, nil},
		{"new", a, nil, []OpKind{OpUpdateTranslation}},
		{"gone", nil, a, []OpKind{OpDeleteTranslation}},
		{"paths changed: update in place", b, a, []OpKind{OpUpdateTranslation}},
		{"affinity on: delete and re-add", m, a, []OpKind{OpDeleteTranslation, OpUpdateTranslation}},
		{"affinity off: delete and re-add", a, m, []OpKind{OpDeleteTranslation, OpUpdateTranslation}},
	}
	for _, c := range cases {
		if got := kinds(DiffTranslation(c.desired, c.applied)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if ops := DiffTranslation(m, a); ops[0].Translation != a || ops[1].Translation != m || ops[0].HaveID {
		t.Errorf("delete+re-add carries the wrong translations: %+v", ops)
	}
}

func TestDiffNode(t *testing.T) {
	desired := BuildNode(testConfig(), map[string]sr.InterfaceRole{"host-vcup": sr.RoleFrontend, "host-vcw1": sr.RoleFrontend})
	empty := &Node{}
	ops := DiffNode(desired, empty)
	var got []string
	for _, o := range ops {
		got = append(got, opString(o))
	}
	// The SNAT addresses first: VPP 26.06 keeps the prefixes, the policy
	// and the tables in the entry they create (measured by the real-VPP
	// suite: before it, cnat_get_snat_addresses answers -30).
	want := []string{
		"snat-addresses 192.168.16.1",
		"exclude-prefix +10.1.0.0/16", "exclude-prefix +10.96.0.0/12", "exclude-prefix +192.168.16.0/24",
		"snat-policy 2",
		"feature +host-vcup cnat-input-ip4", "feature +host-vcup cnat-output-ip4",
		"snat-interface +host-vcw1 0", "snat-interface +host-vcw1 2",
		"feature +host-vcw1 cnat-input-ip4", "feature +host-vcw1 cnat-output-ip4",
		"route +10.96.0.0/12 vrf=0", "route +10.96.0.0/12 vrf=1 lookup table=0",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if ops := DiffNode(desired, desired.Clone()); len(ops) != 0 {
		t.Errorf("equal nodes: %v", ops)
	}
	// An interface leaving: features off (output before input), tables out.
	less := desired.Clone()
	delete(less.Features, "host-vcw1")
	delete(less.Tables, "host-vcw1")
	less.Exclude = less.Exclude[:2]
	less.Routes = less.Routes[1:]
	got = nil
	for _, o := range DiffNode(less, desired) {
		got = append(got, opString(o))
	}
	want = []string{"feature -host-vcw1 cnat-output-ip4", "feature -host-vcw1 cnat-input-ip4",
		"snat-interface -host-vcw1 0", "snat-interface -host-vcw1 2", "route -10.96.0.0/12 vrf=0",
		"exclude-prefix -192.168.16.0/24"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	// An earlier version's drop route in the pod VRF: the lookup's add
	// replaces it (VPP replaces the path), no delete (which would remove
	// the new route after the add, or leave none before it).
	old := desired.Clone()
	old.Routes[1].Kind = RouteDrop
	got = nil
	for _, o := range DiffNode(desired, old) {
		got = append(got, opString(o))
	}
	if want := []string{"route +10.96.0.0/12 vrf=1 lookup table=0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("drop to lookup: %q, want %q", got, want)
	}
	// Clearing the SNAT addresses comes last (it frees 26.06's entry).
	got = nil
	for _, o := range DiffNode(&Node{}, desired) {
		got = append(got, opString(o))
	}
	if len(got) == 0 || !strings.HasPrefix(got[len(got)-1], "snat-addresses") {
		t.Errorf("clearing: %q, want the SNAT addresses last", got)
	}
	// The SNAT addresses compare as VPP holds them: unset = unspecified.
	a := desired.Clone()
	a.SNAT6 = netip.IPv6Unspecified()
	if ops := DiffNode(desired, a); len(ops) != 0 {
		t.Errorf("unset vs :: differ: %v", ops)
	}
}

func opString(o Op) string {
	sign := "-"
	if o.Add {
		sign = "+"
	}
	switch o.Kind {
	case OpFeature:
		return "feature " + sign + o.Interface + " " + FeatureNode(o.Feature)
	case OpSNATInterface:
		return "snat-interface " + sign + o.Interface + " " + string(rune('0'+o.Table))
	case OpExcludePrefix:
		return "exclude-prefix " + sign + o.Prefix.String()
	case OpPolicy:
		return "snat-policy " + string(rune('0'+o.Policy))
	case OpSNATAddresses:
		return "snat-addresses " + o.IP4.String()
	case OpRoute:
		return "route " + sign + o.Route.String()
	}
	return o.Kind.String() + " " + o.Translation.Key.String()
}
