package restapi

import (
	"context"
	"encoding/json"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"contiv.dev/vpp/agent/offline"
	"contiv.dev/vpp/agent/offline/offlinetest"
	"contiv.dev/vpp/servicerenderer/nat44"
)

func TestNAT44ObjectsRoundTrip(t *testing.T) {
	r, err := offline.Render(context.Background(), offline.Params{Objects: offlinetest.ExampleObjects(t), Config: offlinetest.Config("node-1")})
	if err != nil {
		t.Fatal(err)
	}
	st := r.Applied
	st.Identities[nat44.IdentityKey{IP: netip.MustParseAddr("192.168.16.1"), VRF: 0}] = &nat44.Identity{
		IdentityKey: nat44.IdentityKey{IP: netip.MustParseAddr("192.168.16.1")}, Tag: "contiv:snat",
	}
	b, err := json.Marshal(NAT44MappingsView{Desired: NewNAT44Objects(r.Desired), Applied: NewNAT44Objects(st)})
	if err != nil {
		t.Fatal(err)
	}
	var v NAT44MappingsView
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if got, want := v.Applied.State().Lines(), st.Lines(); !slices.Equal(got, want) {
		t.Errorf("round trip:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Only exported fields travel (the renderer's own notes do not).
	exported := func(m *nat44.Mapping) nat44.Mapping {
		return nat44.Mapping{MappingKey: m.MappingKey, Locals: m.Locals, TwiceNAT: m.TwiceNAT, Affinity: m.Affinity, Tag: m.Tag}
	}
	if got := v.Applied.State(); !maps.EqualFunc(got.Mappings, st.Mappings, func(a, b *nat44.Mapping) bool { return reflect.DeepEqual(exported(a), exported(b)) }) {
		t.Error("mappings differ after the round trip")
	}
	if !slices.IsSortedFunc(v.Desired.Mappings, func(a, b *nat44.Mapping) int { return compareMappingKeys(a.MappingKey, b.MappingKey) }) {
		t.Error("mappings not sorted")
	}
}
