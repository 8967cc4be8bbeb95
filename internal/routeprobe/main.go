package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/api"
	cnatapi "go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/interface_types"
	ipapi "go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"go.fd.io/govpp/binapi/vlib"
	"go.fd.io/govpp/core"
)

func cpu(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		log.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.Atoi(f[11])
	k, _ := strconv.Atoi(f[12])
	return time.Duration(u+k) * 10 * time.Millisecond
}

func route(a netip.Addr, bits int, table uint32, typ fib_types.FibPathType, add bool) *ipapi.IPRouteAddDel {
	return &ipapi.IPRouteAddDel{IsAdd: add, Route: ipapi.IPRoute{TableID: table,
		Prefix: ip_types.Prefix{Address: ip_types.NewAddress(a.AsSlice()), Len: uint8(bits)}, NPaths: 1,
		Paths: []fib_types.FibPath{{SwIfIndex: ^uint32(0), Type: typ}}}}
}

func main() {
	sock := flag.String("socket", "", "VPP API socket")
	pid := flag.Int("pid", 0, "VPP's pid")
	n := flag.Int("n", 10000, "routes")
	win := flag.Int("window", 256, "calls in flight")
	cover := flag.Bool("cover", false, "add the /12 DROP route of 10.96.0.0/12 in table 0 first")
	typ := flag.String("type", "prohibit", "prohibit|drop")
	table := flag.Uint("table", 0, "table")
	sync := flag.Bool("sync", false, "one call at a time")
	del := flag.Bool("del", true, "delete them afterwards (measured too)")
	random := flag.Bool("random", false, "spread the addresses over the /12 (as Kubernetes allocates) rather than consecutive")
	kind := flag.String("kind", "route", "route, nat44 (a load-balanced mapping of 2 locals per address, the NAT44 plugin enabled first) or cnat (a translation of one path per address; not deleted)")
	flag.Parse()
	conn, err := core.Connect(socketclient.NewVppClient(*sock))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Disconnect()
	t := fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT
	if *typ == "drop" {
		t = fib_types.FIB_API_PATH_TYPE_DROP
	}
	base := netip.MustParseAddr("10.96.0.0").As4()
	addr := func(i int) netip.Addr {
		v := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
		off := uint32(i + 1)
		if *random {
			off = (uint32(i)*2654435761 + 12345) & 0xFFFFF // a permutation of the /12
			if off == 0 {
				off = 1
			}
		}
		v += off
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	run := func(what string, reqs func(i int) api.Message) {
		ctx := context.Background()
		c0, t0 := cpu(*pid), time.Now()
		if *sync {
			ch, _ := conn.NewAPIChannel()
			for i := 0; i < *n; i++ {
				if err := ch.SendRequest(reqs(i)).ReceiveReply(replyOf(reqs(i))); err != nil {
					log.Fatalf("%s %d: %v", what, i, err)
				}
			}
			ch.Close()
		} else {
			s, err := conn.NewStream(ctx, core.WithRequestSize(*win), core.WithReplySize(*win+8), core.WithReplyTimeout(10*time.Second))
			if err != nil {
				log.Fatal(err)
			}
			inflight := 0
			recv := func() {
				m, err := s.RecvMsg()
				if err != nil {
					log.Fatalf("%s: %v", what, err)
				}
				if rv := retval(m); rv != 0 {
					log.Fatalf("%s: %#v", what, m)
				}
				inflight--
			}
			for i := 0; i < *n; i++ {
				if inflight >= *win {
					recv()
				}
				if err := s.SendMsg(reqs(i)); err != nil {
					log.Fatal(err)
				}
				inflight++
			}
			for inflight > 0 {
				recv()
			}
			s.Close()
		}
		d, c := time.Since(t0), cpu(*pid)-c0
		fmt.Printf("%-28s n=%d window=%d: %v wall (%.1f µs/call), VPP CPU %v (%.1f µs/call)\n", what, *n, *win, d.Round(time.Millisecond),
			float64(d.Microseconds())/float64(*n), c, float64(c.Microseconds())/float64(*n))
	}
	if *cover {
		ch, _ := conn.NewAPIChannel()
		if err := ch.SendRequest(route(netip.MustParseAddr("10.96.0.0"), 12, uint32(*table), fib_types.FIB_API_PATH_TYPE_DROP, true)).ReceiveReply(&ipapi.IPRouteAddDelReply{}); err != nil {
			log.Fatal(err)
		}
		ch.Close()
	}
	switch *kind {
	case "nat44":
		ch, _ := conn.NewAPIChannel()
		if err := ch.SendRequest(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true}).ReceiveReply(&nat44_ed.Nat44EdPluginEnableDisableReply{}); err != nil {
			log.Printf("enable NAT44: %v", err)
		}
		ch.Close()
		run("add nat44 mapping", func(i int) api.Message { return mapping(addr(i), true) })
		if *del {
			run("del nat44 mapping", func(i int) api.Message { return mapping(addr(i), false) })
		}
		return
	case "cnat":
		run("update cnat translation", func(i int) api.Message { return translation(addr(i)) })
		return
	}
	run("add "+*typ, func(i int) api.Message { return route(addr(i), 32, uint32(*table), t, true) })
	ch, _ := conn.NewAPIChannel()
	r := &vlib.CliInbandReply{}
	_ = ch.SendRequest(&vlib.CliInband{Cmd: "show ip fib summary"}).ReceiveReply(r)
	fmt.Print(r.Reply)
	if *del {
		run("del "+*typ, func(i int) api.Message { return route(addr(i), 32, uint32(*table), t, false) })
	}
	if *cover {
		_ = ch.SendRequest(route(netip.MustParseAddr("10.96.0.0"), 12, uint32(*table), fib_types.FIB_API_PATH_TYPE_DROP, false)).ReceiveReply(&ipapi.IPRouteAddDelReply{})
	}
	ch.Close()
}

// mapping is a load-balanced NAT44 mapping of a:80/TCP to two locals.
func mapping(a netip.Addr, add bool) *nat44_ed.Nat44AddDelLbStaticMapping {
	l := func(last byte) nat44_ed.Nat44LbAddrPort {
		return nat44_ed.Nat44LbAddrPort{Addr: ip_types.IP4Address{10, 1, 2, last}, Port: 8080, Probability: 1}
	}
	return &nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: add, Flags: nat_types.NAT_IS_OUT2IN_ONLY | nat_types.NAT_IS_SELF_TWICE_NAT,
		ExternalAddr: a.As4(), ExternalPort: 80, Protocol: 6, LocalNum: 2, Locals: []nat44_ed.Nat44LbAddrPort{l(10), l(11)}}
}

// translation is a cnat translation of a:80/TCP to one backend.
func translation(a netip.Addr) *cnatapi.CnatTranslationUpdate {
	return &cnatapi.CnatTranslationUpdate{Translation: cnatapi.CnatTranslation{
		Vip: cnatapi.CnatEndpoint{Addr: ip_types.NewAddress(a.AsSlice()), SwIfIndex: noIndex, Port: 80}, IPProto: ip_types.IP_API_PROTO_TCP,
		NPaths: 1, Paths: []cnatapi.CnatEndpointTuple{{
			DstEp: cnatapi.CnatEndpoint{Addr: ip_types.NewAddress([]byte{10, 1, 2, 10}), SwIfIndex: noIndex, Port: 8080},
			SrcEp: cnatapi.CnatEndpoint{Addr: ip_types.NewAddress([]byte{0, 0, 0, 0}), SwIfIndex: noIndex}}}}}
}

// replyOf is the reply of a probe's request.
func replyOf(req api.Message) api.Message {
	switch req.(type) {
	case *nat44_ed.Nat44AddDelLbStaticMapping:
		return &nat44_ed.Nat44AddDelLbStaticMappingReply{}
	case *cnatapi.CnatTranslationUpdate:
		return &cnatapi.CnatTranslationUpdateReply{}
	}
	return &ipapi.IPRouteAddDelReply{}
}

// retval is a probe reply's retval (-999 for a message no probe sends).
func retval(m api.Message) int32 {
	switch r := m.(type) {
	case *ipapi.IPRouteAddDelReply:
		return r.Retval
	case *nat44_ed.Nat44AddDelLbStaticMappingReply:
		return r.Retval
	case *cnatapi.CnatTranslationUpdateReply:
		return r.Retval
	}
	return -999
}

// noIndex is ~0, "no interface".
const noIndex = interface_types.InterfaceIndex(^uint32(0))
