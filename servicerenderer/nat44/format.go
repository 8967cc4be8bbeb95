package nat44

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// String is "ip:port/proto".
func (k MappingKey) String() string {
	return k.IP.String() + ":" + strconv.Itoa(int(k.Port)) + "/" + k.Proto.String()
}

// String is "ip:port/proto vrf=N", or "ip vrf=N" for an address-only one.
func (k IdentityKey) String() string {
	s := k.IP.String()
	if k.Port != 0 {
		s += ":" + strconv.Itoa(int(k.Port)) + "/" + k.Proto.String()
	}
	return s + " vrf=" + strconv.FormatUint(uint64(k.VRF), 10)
}

// String is "prefix vrf=N".
func (k RouteKey) String() string {
	return k.Prefix.String() + " vrf=" + strconv.FormatUint(uint64(k.VRF), 10)
}

// String is "prefix vrf=N drop", "… reject" or "… lookup table=T".
func (r Route) String() string {
	switch r.Kind {
	case RouteReject:
		return r.RouteKey.String() + " reject"
	case RouteLookup:
		return r.RouteKey.String() + " lookup table=" + strconv.FormatUint(uint64(r.Table), 10)
	}
	return r.RouteKey.String() + " drop"
}

// String is "ip vrf=N", with "twice-nat" for a twice-NAT pool address.
func (a PoolAddress) String() string {
	s := a.IP.String() + " vrf=" + vrfString(a.VRF)
	if a.TwiceNAT {
		s += " twice-nat"
	}
	return s
}

func vrfString(vrf uint32) string {
	if vrf == AnyVRF {
		return "any"
	}
	return strconv.FormatUint(uint64(vrf), 10)
}

// String is "ip:port vrf=N p=N".
func (l Local) String() string {
	return fmt.Sprintf("%s:%d vrf=%d p=%d", l.IP, l.Port, l.VRF, l.Probability)
}

// String names the mode.
func (t TwiceNAT) String() string {
	switch t {
	case TwiceNATOff:
		return "off"
	case TwiceNATOn:
		return "on"
	case TwiceNATSelf:
		return "self"
	}
	return "unknown"
}

// String lists the features ("in,out"), "none" for none.
func (f Features) String() string {
	var parts []string
	if f&FeatureIn != 0 {
		parts = append(parts, "in")
	}
	if f&FeatureOut != 0 {
		parts = append(parts, "out")
	}
	if f&FeatureOutput != 0 {
		parts = append(parts, "output")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// String is one line: key, kind (static or lb), twice-NAT, affinity, tag
// and locals; what VPP does not keep for a static mapping (affinity and
// probability) is left out.
func (m *Mapping) String() string {
	var b strings.Builder
	b.WriteString(m.MappingKey.String())
	if len(m.Locals) == 1 {
		b.WriteString(" static")
	} else {
		b.WriteString(" lb")
	}
	fmt.Fprintf(&b, " twice-nat=%s", m.TwiceNAT)
	if len(m.Locals) != 1 {
		// A static mapping has no affinity in VPP.
		fmt.Fprintf(&b, " affinity=%d", m.Affinity)
	}
	fmt.Fprintf(&b, " tag=%s ->", m.Tag)
	for i, l := range m.Locals {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte(' ')
		if len(m.Locals) == 1 {
			fmt.Fprintf(&b, "%s:%d vrf=%d", l.IP, l.Port, l.VRF)
		} else {
			b.WriteString(l.String())
		}
	}
	return b.String()
}

// String is one line describing the call.
func (op Op) String() string {
	switch op.Kind {
	case OpSetGlobal:
		return op.Kind.String() + " " + op.Global.String()
	case OpAddPool, OpDelPool:
		return op.Kind.String() + " " + op.Pool.String()
	case OpSetInterface:
		return fmt.Sprintf("%s %s %s -> %s", op.Kind, op.Interface, op.OldFeatures, op.NewFeatures)
	case OpAddIdentity, OpDelIdentity:
		return op.Kind.String() + " " + op.Identity.IdentityKey.String() + " tag=" + op.Identity.Tag
	case OpAddRoute, OpDelRoute:
		return op.Kind.String() + " " + op.Route.String()
	case OpAddMapping, OpDelMapping:
		return op.Kind.String() + " " + op.Mapping.String()
	case OpAddLocal, OpDelLocal:
		return op.Kind.String() + " " + op.Mapping.MappingKey.String() + " " + op.Local.String()
	}
	return op.Kind.String()
}

// String is the plugin settings on one line.
func (g Global) String() string {
	fwd := "off"
	if g.Forwarding {
		fwd = "on"
	}
	return fmt.Sprintf("forwarding=%s sessions=%d timeouts=udp:%d,tcp-established:%d,tcp-transitory:%d,icmp:%d",
		fwd, g.SessionLimit, g.Timeouts.UDP, g.Timeouts.TCPEstablished, g.Timeouts.TCPTransitory, g.Timeouts.ICMP)
}

// Lines is the state as sorted text, one line per object: the plugin
// settings, pool addresses, interfaces, identity mappings, routes, then
// mappings.
// Tests compare it with golden files; contivctl prints it.
func (s *State) Lines() []string {
	lines := []string{"global " + s.Global.String()}
	pool := slices.Clone(s.Pool)
	slices.SortFunc(pool, comparePool)
	for _, p := range pool {
		lines = append(lines, "pool "+p.String())
	}
	for _, name := range slices.Sorted(maps.Keys(s.Interfaces)) {
		lines = append(lines, "interface "+name+" "+s.Interfaces[name].String())
	}
	ids := slices.Collect(maps.Keys(s.Identities))
	slices.SortFunc(ids, compareIdentityKeys)
	for _, k := range ids {
		lines = append(lines, "identity "+k.String()+" tag="+s.Identities[k].Tag)
	}
	routes := slices.Collect(maps.Keys(s.Routes))
	slices.SortFunc(routes, compareRouteKeys)
	for _, k := range routes {
		lines = append(lines, "route "+s.Routes[k].String())
	}
	keys := slices.Collect(maps.Keys(s.Mappings))
	slices.SortFunc(keys, compareMappingKeys)
	for _, k := range keys {
		lines = append(lines, "mapping "+s.Mappings[k].String())
	}
	return lines
}
