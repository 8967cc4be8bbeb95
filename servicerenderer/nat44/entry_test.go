package nat44

import (
	"slices"
	"testing"
	"unsafe"

	"pgregory.net/rapid"

	"contiv.dev/vpp/servicerenderer"
)

// TestServiceEntryIsOneCacheLine: a change of a service reads its entry,
// which must fit one 64-byte cache line (it took two, with the routes in
// a third, when it kept the service's routes).
func TestServiceEntryIsOneCacheLine(t *testing.T) {
	if n := unsafe.Sizeof(serviceEntry{}); n > 64 {
		t.Errorf("serviceEntry takes %d bytes, more than a cache line", n)
	}
}

// TestSlottedEntriesAreCacheLines: the renderer's entries are each one
// aligned cache line (not two halves, as 56-byte entries or a chunk of 16
// KiB made them), and a freed place is given again before a new one.
func TestSlottedEntriesAreCacheLines(t *testing.T) {
	if n := unsafe.Sizeof(serviceEntry{}); n != 64 {
		t.Errorf("serviceEntry takes %d bytes, not 64", n)
	}
	var s slotted
	var got []*serviceEntry
	for i := range 3*slotChunk + 8 {
		e := s.take()
		if at := uintptr(unsafe.Pointer(e)); at%64 != 0 {
			t.Fatalf("entry %d starts %d bytes into a cache line", i, at%64)
		}
		got = append(got, e)
	}
	got[7].mappingTag = "x"
	s.give(got[7])
	if e := s.take(); e != got[7] || e.mappingTag != "" {
		t.Errorf("a freed place is not given again, empty: %p %q", e, e.mappingTag)
	}
	if len(s.chunks) != 4 {
		t.Errorf("%d chunks for %d entries", len(s.chunks), 3*slotChunk+8)
	}
}

// TestSameRoutes: whenever sameRoutes says two services have the same
// verdict routes, BuildRoutes gives both the same.
func TestSameRoutes(t *testing.T) {
	cfg := testConfig()
	cfg.MainVRF = 0
	genIPs := rapid.SliceOfN(rapid.SampledFrom(ips("10.96.0.1", "10.96.0.2", "10.200.0.1", "fd00::1", "::ffff:10.96.0.3")), 0, 2)
	genPolicy := rapid.Custom(func(t *rapid.T) servicerenderer.TrafficPolicy {
		return servicerenderer.TrafficPolicy(rapid.IntRange(0, 1).Draw(t, "policy"))
	})
	genPorts := rapid.Custom(func(t *rapid.T) []servicerenderer.Port {
		var ps []servicerenderer.Port
		for i := range rapid.IntRange(0, 2).Draw(t, "ports") {
			var bs []servicerenderer.Backend
			for range rapid.IntRange(0, 2).Draw(t, "backends") {
				bs = append(bs, be("10.1.1.2", 8080))
			}
			p := port("p", uint16(80+i), 0, bs...)
			if rapid.Bool().Draw(t, "local") {
				p.LocalBackends = bs
			}
			ps = append(ps, p)
		}
		return ps
	})
	rapid.Check(t, func(t *rapid.T) {
		a := &servicerenderer.ContivService{
			ID:             servicerenderer.ServiceID{Namespace: "ns", Name: "s"},
			ClusterIPs:     genIPs.Draw(t, "clusterIPs"),
			InternalPolicy: genPolicy.Draw(t, "internalPolicy"),
			Ports:          genPorts.Draw(t, "ports"),
		}
		// b is a, or a changed in its ports, cluster IPs or policy.
		b := a
		if rapid.Bool().Draw(t, "changed") {
			c := *a
			c.Ports = genPorts.Draw(t, "bPorts")
			if rapid.Bool().Draw(t, "otherIPs") {
				c.ClusterIPs = genIPs.Draw(t, "bClusterIPs")
			}
			if rapid.Bool().Draw(t, "otherPolicy") {
				c.InternalPolicy = genPolicy.Draw(t, "bInternalPolicy")
			}
			b = &c
		}
		if sameRoutes(a, b) && !slices.Equal(BuildRoutes(a, testNode(), &cfg), BuildRoutes(b, testNode(), &cfg)) {
			t.Fatalf("sameRoutes, yet routes %v and %v", BuildRoutes(a, testNode(), &cfg), BuildRoutes(b, testNode(), &cfg))
		}
	})
	if !sameRoutes(nil, nil) || sameRoutes(nil, &servicerenderer.ContivService{}) {
		t.Error("sameRoutes of nil services")
	}
}
