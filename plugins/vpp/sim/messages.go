package sim

import (
	"strings"

	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/vpe"
)

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
	return []*msgDef{
		def(read, &memclnt.ControlPing{}, (*VPP).controlPing, &memclnt.ControlPingReply{}),
		def(read, &vpe.ShowVersion{}, (*VPP).showVersion, &vpe.ShowVersionReply{}),
		def(read, &interfaces.SwInterfaceDump{}, (*VPP).swInterfaceDump, &interfaces.SwInterfaceDetails{}),

		def(write, &nat44_ed.Nat44EdPluginEnableDisable{}, (*VPP).pluginEnableDisable, &nat44_ed.Nat44EdPluginEnableDisableReply{}),
		def(write, &nat44_ed.Nat44ForwardingEnableDisable{}, (*VPP).forwardingEnableDisable, &nat44_ed.Nat44ForwardingEnableDisableReply{}),
		def(write, &nat44_ed.NatSetTimeouts{}, (*VPP).setTimeouts, &nat44_ed.NatSetTimeoutsReply{}),
		def(read, &nat44_ed.Nat44ShowRunningConfig{}, (*VPP).showRunningConfig, &nat44_ed.Nat44ShowRunningConfigReply{}),

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
	}
}

func (v *VPP) controlPing(*memclnt.ControlPing) []api.Message {
	return []api.Message{&memclnt.ControlPingReply{VpePID: v.pid}}
}

func (v *VPP) showVersion(*vpe.ShowVersion) []api.Message {
	return []api.Message{&vpe.ShowVersionReply{Program: "vpp", Version: v.version, BuildDate: "simulated"}}
}

func (v *VPP) swInterfaceDump(req *interfaces.SwInterfaceDump) []api.Message {
	var out []api.Message
	for _, i := range v.interfacesLocked() {
		if uint32(req.SwIfIndex) != noIndex && uint32(req.SwIfIndex) != i.Index {
			continue
		}
		if req.NameFilterValid && !strings.Contains(i.Name, req.NameFilter) {
			continue
		}
		out = append(out, &interfaces.SwInterfaceDetails{
			SwIfIndex:     interface_types.InterfaceIndex(i.Index),
			SupSwIfIndex:  i.Index,
			Flags:         interface_types.IF_STATUS_API_FLAG_ADMIN_UP | interface_types.IF_STATUS_API_FLAG_LINK_UP,
			InterfaceName: i.Name,
			Tag:           i.Tag,
		})
	}
	return out
}
