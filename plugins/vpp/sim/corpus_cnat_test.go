package sim

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"reflect"
	"strings"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
)

// The cnat files (corpus/README.md, "cnat round") were recorded on VPP
// instances that had been sent more than the file holds, and some files
// span several instances. corpusInstances says, per file, at which step
// a VPP instance begins and what it had been sent before: requests of
// other corpus files (applied without a connection; their replies must
// be the recorded ones) or an unrecorded probe. What each instance was
// sent is read from the recorded dumps (ids and contents) and the
// files' notes.

// corpusPrior is something a recorded VPP instance was sent before.
type corpusPrior struct {
	file     string // corpus file whose requests (dumps excepted) are applied
	from, to int    // its steps
	probe    func(v *VPP) error
	why      string
}

// corpusInstance is a VPP instance that begins at a file's step.
type corpusInstance struct {
	step   int
	before []corpusPrior
}

var (
	// c1Config is the working node configuration of cnat_node.jsonl:
	// cnat_sessions.jsonl's note says its instances held it (ids 0..7).
	c1Config = corpusPrior{file: "cnat_node.jsonl", from: 1, to: 40, why: "the C1 node configuration (translations 0..7)"}
	// sessions2 is the second instance of cnat_sessions.jsonl (pid
	// 24889), which cnat_affinity, cnat_edge (to step 19) and cnat_ipv6
	// continue: their dumps show its pid and ids.
	sessions2 = corpusPrior{file: "cnat_sessions.jsonl", from: 22, to: 36, why: "cnat_sessions.jsonl's second part (ends with a purge)"}
	affinity  = corpusPrior{file: "cnat_affinity.jsonl", from: 1, to: 7, why: "cnat_affinity.jsonl (ids 10, 9, 8 after the purge)"}
)

var corpusInstances = map[string][]corpusInstance{
	// Steps 5-8 ran on another VPP (pid 16478 -> 17094): lb_type 1 at
	// creation, dumped as 1.
	"cnat.jsonl": {{step: 5}},
	"cnat_sessions.jsonl": {
		{step: 1, before: []corpusPrior{c1Config}},
		{step: 22, before: []corpusPrior{c1Config}},
	},
	"cnat_affinity.jsonl": {{step: 1, before: []corpusPrior{c1Config, sessions2}}},
	"cnat_edge.jsonl": {
		{step: 1, before: []corpusPrior{c1Config, sessions2, affinity}},
		// Steps 20-25 ran on the fresh VPP of cnat_crash.jsonl's steps
		// 3-4 (ids 0, 1: 2000 paths each), with the C1 configuration
		// after them (ids 2..9).
		{step: 20, before: []corpusPrior{
			{file: "cnat_crash.jsonl", from: 3, to: 4, why: "cnat_crash.jsonl's 2000-path translations"},
			c1Config,
		}},
	},
	"cnat_ipv6.jsonl": {{step: 1, before: []corpusPrior{
		c1Config, sessions2, affinity,
		{file: "cnat_edge.jsonl", from: 1, to: 19, why: "cnat_edge.jsonl's first part"},
		{probe: capacityProbe, why: "the capacity probe of FACTS.md §6 (10 000 translations, ids 19..10018)"},
	}}},
}

// capacityProbe stands for the unrecorded capacity probe of FACTS.md §6
// whose 10 000 translations cnat_ipv6.jsonl's dump lists: VIPs
// 10.100.i/250.(i%250+1):80 TCP, paths 10.1.1.11:8080 and 10.1.1.12:8080.
// ASSUMPTION (reconstructed from the dump's ids: 10.100.39.250 has id 19,
// 10.100.0.1 id 10018): the probe created them, deleted them by id in
// creation order and created them again, the ids coming back
// last-freed-first.
func capacityProbe(v *VPP) error {
	const n = 10000
	path := func(a string) cnat.CnatEndpointTuple {
		return cnat.CnatEndpointTuple{
			DstEp: cnat.CnatEndpoint{Addr: toAnyAddr(netip.MustParseAddr(a)), SwIfIndex: ^interface_types.InterfaceIndex(0), Port: 8080},
			SrcEp: cnat.CnatEndpoint{Addr: toAnyAddr(netip.IPv4Unspecified()), SwIfIndex: ^interface_types.InterfaceIndex(0)},
		}
	}
	create := func() ([]uint32, error) {
		ids := make([]uint32, 0, n)
		for i := range n {
			vip := netip.AddrFrom4([4]byte{10, 100, byte(i / 250), byte(i%250 + 1)})
			a := v.applyDirect(&cnat.CnatTranslationUpdate{Translation: cnat.CnatTranslation{
				Vip:     cnat.CnatEndpoint{Addr: toAnyAddr(vip), SwIfIndex: ^interface_types.InterfaceIndex(0), Port: 80},
				IPProto: ip_types.IP_API_PROTO_TCP,
				Paths:   []cnat.CnatEndpointTuple{path("10.1.1.11"), path("10.1.1.12")},
			}})
			r := a[0].(*cnat.CnatTranslationUpdateReply)
			if r.Retval != 0 {
				return nil, fmt.Errorf("capacity probe: update %v: %d", vip, r.Retval)
			}
			ids = append(ids, r.ID)
		}
		return ids, nil
	}
	ids, err := create()
	if err != nil {
		return err
	}
	for _, id := range ids {
		if a := v.applyDirect(&cnat.CnatTranslationDel{ID: id}); a[0].(*cnat.CnatTranslationDelReply).Retval != 0 {
			return fmt.Errorf("capacity probe: delete %d failed", id)
		}
	}
	_, err = create()
	return err
}

// applyDirect hands a request to its handler, without a connection, and
// returns the answers.
func (v *VPP) applyDirect(m api.Message) []api.Message {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, d := range v.defs {
		if d.req.GetMessageName() == m.GetMessageName() {
			return d.handle(v, m)
		}
	}
	return nil
}

// instance starts the recording's VPP instance that begins at a step:
// a restart (but at step 1: the file's fresh VPP), then what it had been
// sent before.
func (r *replayer) instance(dir string, step int) {
	for _, in := range corpusInstances[r.file] {
		if in.step != step {
			continue
		}
		if step > 1 {
			r.disconnect()
			r.v.Restart()
			r.connect()
		}
		for _, p := range in.before {
			if err := r.prior(dir, p); err != nil {
				r.t.Fatalf("step %d: a new VPP instance that had been sent %s: %v", step, p.why, err)
			}
		}
	}
}

// prior applies one prior of an instance.
func (r *replayer) prior(dir string, p corpusPrior) error {
	if p.probe != nil {
		return p.probe(r.v)
	}
	for _, rec := range readCorpus(r.t, filepath.Join(dir, p.file)) {
		if rec.Step < p.from || rec.Step > p.to || rec.Request == nil || rec.Error != "" ||
			rec.Request.Name == "cli_inband" || strings.HasSuffix(rec.Request.Name, "_dump") {
			continue
		}
		m, err := message(rec.Request.Name, rec.Request.CRC)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(rec.Request.Fields, m); err != nil {
			return fmt.Errorf("%s step %d: %w", p.file, rec.Step, err)
		}
		// The answer must be the recorded one but for the ids (the
		// instance's pool differs from the recording's).
		got := r.v.applyDirect(m)
		if len(got) != 1 || len(rec.Replies) != 1 || got[0].GetMessageName() != rec.Replies[0].Name {
			return fmt.Errorf("%s step %d: answered %s, recorded %s", p.file, rec.Step, names(got), recNames(rec.Replies))
		}
		var want struct{ Retval int32 }
		_ = json.Unmarshal(rec.Replies[0].Fields, &want)
		if rv := retval(got[0]); rv != want.Retval {
			return fmt.Errorf("%s step %d: retval %d, recorded %d", p.file, rec.Step, rv, want.Retval)
		}
	}
	return nil
}

// retval reads a reply's Retval.
func retval(m api.Message) int32 {
	if f := reflect.ValueOf(m).Elem().FieldByName("Retval"); f.IsValid() {
		return int32(f.Int())
	}
	return 0
}
