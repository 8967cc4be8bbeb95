package sim

import (
	"path"
	"reflect"
	"sort"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/cnat"
	featureapi "go.fd.io/govpp/binapi/feature"
	interfaces "go.fd.io/govpp/binapi/interface"
	ipapi "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/vlib"
	"go.fd.io/govpp/binapi/vpe"
)

// tablePackages are the govpp binapi packages whose messages the
// simulated VPP's message table lists, as VPP 25.02 with the nat and
// cnat plugins does (all of them pass govpp's compatibility check,
// connect.jsonl and cnat_compat.jsonl); only those in messageDefs are
// answered.
var tablePackages = []string{"memclnt", "vpe", "vlib", "interface", "ip", "nat44_ed", "cnat", "feature", "acl",
	"af_packet", "tapv2", "ip_neighbor"}

// tableLacks are messages of tablePackages that VPP 25.02 does not have
// (connect.jsonl's message table): govpp's binapi is generated from a
// later VPP.
var tableLacks = map[string]bool{"feature_is_enabled": true, "feature_is_enabled_reply": true}

// tableLacks2606 are those VPP 26.06 does not have (ip_punt_police went
// with the policer into a plugin; the 26.06 archive's ip.api).
var tableLacks2606 = map[string]bool{"ip_punt_police": true, "ip_punt_police_reply": true}

// tableMessages returns the messages of tablePackages in govpp's
// bindings, sorted by name; with rel2606 VPP 26.06's cnat messages
// replace govpp's (release.go).
func tableMessages(rel2606 bool) []api.Message {
	want := make(map[string]bool, len(tablePackages))
	for _, p := range tablePackages {
		want[p] = true
	}
	lacks := tableLacks
	var over map[string]api.Message
	if rel2606 {
		lacks = tableLacks2606
		over = make(map[string]api.Message)
		for _, m := range cnat2606Table() {
			over[m.GetMessageName()] = m
		}
	}
	var out []api.Message
	for _, m := range api.GetRegisteredMessages()[govppBindings] {
		switch {
		case !want[msgPackage(m)] || lacks[m.GetMessageName()]:
		case over != nil && msgPackage(m) == "cnat":
			// VPP 26.06's cnat messages, added below.
		default:
			out = append(out, m)
		}
	}
	for _, m := range over {
		out = append(out, m)
	}
	sort.Slice(out, func(a, b int) bool { return msgKey(out[a]) < msgKey(out[b]) })
	return out
}

// govppBindings is where govpp registers its bundled bindings.
const govppBindings = "go.fd.io/govpp/binapi"

// messageDefs are the requests this VPP answers: messageDefs, with VPP
// 26.06's replacing those of the same name on 26.06 (release.go).
func (v *VPP) messageDefs() []*msgDef {
	defs := messageDefs()
	if !v.rel2606 {
		return defs
	}
	extra := messageDefs2606()
	replaced := make(map[string]bool, len(extra))
	for _, d := range extra {
		replaced[d.req.GetMessageName()] = true
	}
	out := make([]*msgDef, 0, len(defs)+len(extra))
	for _, d := range defs {
		if !replaced[d.req.GetMessageName()] {
			out = append(out, d)
		}
	}
	return append(out, extra...)
}

// msgPackage is the binapi package of m ("acl", "nat44_ed", ...).
func msgPackage(m api.Message) string { return path.Base(reflect.TypeOf(m).Elem().PkgPath()) }

// msgDef is one request the simulator answers.
type msgDef struct {
	req api.Message
	// answers are the prototypes of the messages sent back; for a
	// state-changing request the last one is the reply carrying Retval.
	answers []api.Message
	// write marks requests that change state (fault injection, counters).
	write  bool
	handle func(v *VPP, req api.Message) []api.Message
}

// def builds a msgDef from a typed handler.
func def[R api.Message](write bool, req R, h func(v *VPP, req R) []api.Message, answers ...api.Message) *msgDef {
	return &msgDef{
		req:     req,
		answers: answers,
		write:   write,
		handle:  func(v *VPP, m api.Message) []api.Message { return h(v, m.(R)) },
	}
}

// reply answers a request with its reply carrying rv.
func reply(m api.Message, rv api.VPPApiError) []api.Message {
	return []api.Message{withRetval(m, rv)}
}

// messageDefs lists every request the simulator speaks.
func messageDefs() []*msgDef {
	const read, write = false, true
	return append([]*msgDef{
		def(read, &memclnt.ControlPing{}, (*VPP).controlPing, &memclnt.ControlPingReply{}),
		def(read, &vpe.ShowVersion{}, (*VPP).showVersion, &vpe.ShowVersionReply{}),
		def(read, &vlib.ShowThreads{}, (*VPP).showThreads, &vlib.ShowThreadsReply{}),
		def(read, &interfaces.SwInterfaceDump{}, (*VPP).swInterfaceDump, &interfaces.SwInterfaceDetails{}),
		def(write, &interfaces.SwInterfaceTagAddDel{}, (*VPP).swInterfaceTagAddDel, &interfaces.SwInterfaceTagAddDelReply{}),
		def(write, &interfaces.SwInterfaceSetFlags{}, (*VPP).swInterfaceSetFlags, &interfaces.SwInterfaceSetFlagsReply{}),
		// A registration for events is not configuration: not a write.
		def(read, &interfaces.WantInterfaceEvents{}, (*VPP).wantInterfaceEvents, &interfaces.WantInterfaceEventsReply{}),
		def(write, &interfaces.CreateLoopback{}, (*VPP).createLoopback, &interfaces.CreateLoopbackReply{}),
		def(write, &interfaces.DeleteLoopback{}, (*VPP).deleteLoopback, &interfaces.DeleteLoopbackReply{}),
		def(write, &ipapi.IPTableAddDel{}, (*VPP).ipTableAddDel, &ipapi.IPTableAddDelReply{}),
		def(read, &ipapi.IPAddressDump{}, (*VPP).ipAddressDump, &ipapi.IPAddressDetails{}),
		def(read, &ipapi.IPRouteV2Dump{}, (*VPP).ipRouteV2Dump, &ipapi.IPRouteV2Details{}),
		def(read, &ipapi.IPTableDump{}, (*VPP).ipTableDump, &ipapi.IPTableDetails{}),
		def(write, &ipapi.IPRouteAddDel{}, (*VPP).ipRouteAddDel, &ipapi.IPRouteAddDelReply{}),

		def(write, &nat44_ed.Nat44EdPluginEnableDisable{}, (*VPP).pluginEnableDisable, &nat44_ed.Nat44EdPluginEnableDisableReply{}),
		def(write, &nat44_ed.Nat44ForwardingEnableDisable{}, (*VPP).forwardingEnableDisable, &nat44_ed.Nat44ForwardingEnableDisableReply{}),
		def(write, &nat44_ed.NatSetTimeouts{}, (*VPP).setTimeouts, &nat44_ed.NatSetTimeoutsReply{}),
		def(read, &nat44_ed.Nat44ShowRunningConfig{}, (*VPP).showRunningConfig, &nat44_ed.Nat44ShowRunningConfigReply{}),
		def(write, &nat44_ed.Nat44SetSessionLimit{}, (*VPP).setSessionLimit, &nat44_ed.Nat44SetSessionLimitReply{}),
		def(write, &nat44_ed.Nat44AddDelInterfaceAddr{}, (*VPP).addDelInterfaceAddr, &nat44_ed.Nat44AddDelInterfaceAddrReply{}),
		def(read, &nat44_ed.Nat44InterfaceAddrDump{}, (*VPP).interfaceAddrDump, &nat44_ed.Nat44InterfaceAddrDetails{}),

		def(write, &nat44_ed.Nat44AddDelAddressRange{}, (*VPP).addDelAddressRange, &nat44_ed.Nat44AddDelAddressRangeReply{}),
		def(read, &nat44_ed.Nat44AddressDump{}, (*VPP).addressDump, &nat44_ed.Nat44AddressDetails{}),

		def(write, &nat44_ed.Nat44InterfaceAddDelFeature{}, (*VPP).interfaceAddDelFeature, &nat44_ed.Nat44InterfaceAddDelFeatureReply{}),
		def(read, &nat44_ed.Nat44InterfaceDump{}, (*VPP).interfaceDump, &nat44_ed.Nat44InterfaceDetails{}),
		def(write, &nat44_ed.Nat44EdAddDelOutputInterface{}, (*VPP).addDelOutputInterface, &nat44_ed.Nat44EdAddDelOutputInterfaceReply{}),
		def(read, &nat44_ed.Nat44EdOutputInterfaceGet{}, (*VPP).outputInterfaceGet,
			&nat44_ed.Nat44EdOutputInterfaceDetails{}, &nat44_ed.Nat44EdOutputInterfaceGetReply{}),

		def(write, &nat44_ed.Nat44AddDelStaticMappingV2{}, (*VPP).addDelStaticMapping, &nat44_ed.Nat44AddDelStaticMappingV2Reply{}),
		def(read, &nat44_ed.Nat44StaticMappingDump{}, (*VPP).staticMappingDump, &nat44_ed.Nat44StaticMappingDetails{}),
		def(write, &nat44_ed.Nat44AddDelLbStaticMapping{}, (*VPP).addDelLBStaticMapping, &nat44_ed.Nat44AddDelLbStaticMappingReply{}),
		def(write, &nat44_ed.Nat44LbStaticMappingAddDelLocal{}, (*VPP).lbStaticMappingAddDelLocal, &nat44_ed.Nat44LbStaticMappingAddDelLocalReply{}),
		def(read, &nat44_ed.Nat44LbStaticMappingDump{}, (*VPP).lbStaticMappingDump, &nat44_ed.Nat44LbStaticMappingDetails{}),
		def(write, &nat44_ed.Nat44AddDelIdentityMapping{}, (*VPP).addDelIdentityMapping, &nat44_ed.Nat44AddDelIdentityMappingReply{}),
		def(read, &nat44_ed.Nat44IdentityMappingDump{}, (*VPP).identityMappingDump, &nat44_ed.Nat44IdentityMappingDetails{}),

		// cnat.go, cnat_snat.go, cnat_sessions.go
		def(write, &cnat.CnatTranslationUpdate{}, (*VPP).cnatTranslationUpdate, &cnat.CnatTranslationUpdateReply{}),
		def(write, &cnat.CnatTranslationDel{}, (*VPP).cnatTranslationDel, &cnat.CnatTranslationDelReply{}),
		def(read, &cnat.CnatTranslationDump{}, (*VPP).cnatTranslationDump, &cnat.CnatTranslationDetails{}),
		def(write, &cnat.CnatSessionPurge{}, (*VPP).cnatSessionPurge, &cnat.CnatSessionPurgeReply{}),
		def(read, &cnat.CnatSessionDump{}, (*VPP).cnatSessionDump, &cnat.CnatSessionDetails{}),
		def(write, &cnat.CnatSetSnatAddresses{}, (*VPP).cnatSetSnatAddresses, &cnat.CnatSetSnatAddressesReply{}),
		def(read, &cnat.CnatGetSnatAddresses{}, (*VPP).cnatGetSnatAddresses, &cnat.CnatGetSnatAddressesReply{}),
		def(write, &cnat.CnatSetSnatPolicy{}, (*VPP).cnatSetSnatPolicy, &cnat.CnatSetSnatPolicyReply{}),
		def(write, &cnat.CnatSnatPolicyAddDelIf{}, (*VPP).cnatSnatPolicyAddDelIf, &cnat.CnatSnatPolicyAddDelIfReply{}),
		def(write, &cnat.CnatSnatPolicyAddDelExcludePfx{}, (*VPP).cnatSnatPolicyAddDelExcludePfx, &cnat.CnatSnatPolicyAddDelExcludePfxReply{}),
		def(write, &featureapi.FeatureEnableDisable{}, (*VPP).featureEnableDisable, &featureapi.FeatureEnableDisableReply{}),

		// acl.go (acl_plugin.so)
		def(write, &acl.ACLAddReplace{}, (*VPP).aclAddReplace, &acl.ACLAddReplaceReply{}),
		def(write, &acl.ACLDel{}, (*VPP).aclDel, &acl.ACLDelReply{}),
		def(write, &acl.ACLInterfaceSetACLList{}, (*VPP).aclInterfaceSetACLList, &acl.ACLInterfaceSetACLListReply{}),
		def(write, &acl.ACLInterfaceAddDel{}, (*VPP).aclInterfaceAddDel, &acl.ACLInterfaceAddDelReply{}),
		def(read, &acl.ACLDump{}, (*VPP).aclDump, &acl.ACLDetails{}),
		def(read, &acl.ACLInterfaceListDump{}, (*VPP).aclInterfaceListDump, &acl.ACLInterfaceListDetails{}),
	}, podMessageDefs()...)
}

func (v *VPP) controlPing(*memclnt.ControlPing) []api.Message {
	return []api.Message{&memclnt.ControlPingReply{VpePID: v.pid}}
}

func (v *VPP) showVersion(*vpe.ShowVersion) []api.Message {
	return []api.Message{&vpe.ShowVersionReply{
		Program: "vpe", Version: v.version, BuildDate: "simulated", BuildDirectory: "(simulated VPP)",
	}}
}

// showThreads answers as VPP with one main thread and no workers.
// ASSUMPTION: cpu and core 1, as recorded.
func (v *VPP) showThreads(*vlib.ShowThreads) []api.Message {
	return []api.Message{&vlib.ShowThreadsReply{
		Count:      1,
		ThreadData: []vlib.ThreadData{{Name: "vpp_main", PID: v.pid, CPUID: 1, Core: 1}},
	}}
}
