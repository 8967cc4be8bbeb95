package nat44

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"contiv.dev/vpp/servicerenderer"
)

// TestHandlesAreHints: a renderer told the services with handles, right,
// colliding, reused or absurd, holds the same desired state, conflicts
// and failures as one told the same services without handles.
func TestHandlesAreHints(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		withH := newTestRenderer(t, testConfig(), newFakeVPP())
		without := newTestRenderer(t, testConfig(), newFakeVPP())
		names := []string{"s1", "s2", "s3"}
		known := map[string]*servicerenderer.ContivService{} // what withH was told
		gen := func(t *rapid.T, name string) *servicerenderer.ContivService {
			// Two services of one cluster IP contest its frontends.
			ip := rapid.SampledFrom([]string{"10.96.0.1", "10.96.0.2", "10.96.0." + name[1:]}).Draw(t, "clusterIP")
			bs := rapid.SliceOfN(rapid.SampledFrom([]string{"10.1.1.2", "10.1.1.3", "10.1.2.2"}), 0, 3).Draw(t, "backends")
			var backends []servicerenderer.Backend
			for _, b := range slices.Compact(slices.Sorted(slices.Values(bs))) {
				backends = append(backends, be(b, 8080))
			}
			svc := service("ns", name, rapid.IntRange(0, 2).Draw(t, "age"), ip, port("http", 80, 0, backends...))
			svc.Handle = rapid.SampledFrom([]uint32{0, 1, 2, 3, 4, 1 << 30}).Draw(t, "handle")
			return svc
		}
		bare := func(svc *servicerenderer.ContivService) *servicerenderer.ContivService {
			c := *svc
			c.Handle = 0
			return &c
		}
		check := func(t *rapid.T, err1, err2 error) {
			if fmt.Sprint(err1) != fmt.Sprint(err2) {
				t.Fatalf("errors differ: %v, without handles %v", err1, err2)
			}
			if a, b := withH.Desired().Lines(), without.Desired().Lines(); !slices.Equal(a, b) {
				t.Fatalf("desired state differs:\n%v\nwithout handles:\n%v", a, b)
			}
			if a, b := fmt.Sprint(withH.Conflicts()), fmt.Sprint(without.Conflicts()); a != b {
				t.Fatalf("conflicts differ: %s, without handles %s", a, b)
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"set": func(t *rapid.T) {
				name := rapid.SampledFrom(names).Draw(t, "name")
				svc := gen(t, name)
				var err1, err2 error
				if old := known[name]; old != nil {
					err1, err2 = withH.UpdateService(old, svc), without.UpdateService(bare(old), bare(svc))
				} else {
					err1, err2 = withH.AddService(svc), without.AddService(bare(svc))
				}
				known[name] = svc
				check(t, err1, err2)
			},
			"delete": func(t *rapid.T) {
				name := rapid.SampledFrom(names).Draw(t, "name")
				svc := known[name]
				if svc == nil {
					svc = gen(t, name) // an unknown service: ignored by both
				}
				// The delete may carry another handle (a value made by hand).
				del := *svc
				del.Handle = rapid.SampledFrom([]uint32{svc.Handle, 0, 1, 2}).Draw(t, "handle")
				delete(known, name)
				check(t, withH.DeleteService(&del), without.DeleteService(bare(svc)))
			},
			"resync": func(t *rapid.T) {
				data := &servicerenderer.ResyncData{Node: testNode()}
				for _, name := range names {
					if svc := known[name]; svc != nil {
						data.Services = append(data.Services, svc)
					}
				}
				bareData := &servicerenderer.ResyncData{Node: testNode()}
				for _, svc := range data.Services {
					bareData.Services = append(bareData.Services, bare(svc))
				}
				check(t, withH.Resync(data), without.Resync(bareData))
			},
		})
	})
}
