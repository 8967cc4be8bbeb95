package pods

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
)

// BenchmarkKernelSteps measures each kernel step of an af_packet pod's
// wiring, one pod at a time (so that each step's cost is its own), over
// 100 pods an iteration: the veth pair's creation (LinkAdd: two netdev
// registrations), the move of one end into another netns, its rename,
// the transmit checksum offload turned off, eth0's configuration (up,
// address, two routes, the gateway's ARP entry) and the pair's deletion.
// It reports each step's mean (ms), to decide what an ADD could do ahead
// of time (a pool of ready veth pairs saves the creation, not the move).
//
//	go test -run '^$' -bench KernelSteps -benchtime 3x ./plugins/pods/
func BenchmarkKernelSteps(b *testing.B) {
	needRoot(b)
	const n = 100
	e := &env{t: b}
	steps := []string{"create", "move", "rename", "csumoff", "eth0", "delete", "create-in-netns", "csumoff-in-netns"}
	sum := map[string]time.Duration{}
	gw := netip.MustParseAddr("10.1.1.1")
	for it := range b.N {
		nss := make([]ns.NetNS, n)
		for i := range nss {
			nss[i] = e.netns()
		}
		for i := range n {
			host := fmt.Sprintf("kb%d-%d", it, i)
			peer := host + "p"
			mark := time.Now()
			tick := func(step string) {
				now := time.Now()
				sum[step] += now.Sub(mark)
				mark = now
			}
			la := netlink.NewLinkAttrs()
			la.Name, la.MTU = host, vethMTU
			if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: peer}); err != nil {
				b.Fatal(err)
			}
			tick("create")
			pl, err := netlink.LinkByName(peer)
			if err != nil {
				b.Fatal(err)
			}
			if err := netlink.LinkSetNsFd(pl, int(nss[i].Fd())); err != nil {
				b.Fatal(err)
			}
			tick("move")
			err = nss[i].Do(func(ns.NetNS) error {
				l, err := netlink.LinkByName(peer)
				if err != nil {
					return err
				}
				if err := netlink.LinkSetName(l, "eth0"); err != nil {
					return err
				}
				tick("rename")
				if err := txChecksumOff("eth0"); err != nil {
					return err
				}
				tick("csumoff")
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			ip := netip.AddrFrom4([4]byte{10, 1, 1, byte(2 + i)})
			mark = time.Now()
			if err := configurePod(nss[i].Path(), podConfig{ifName: "eth0", ip: ip, gateway: gw, gwMAC: net.HardwareAddr{2, 0xfe, 0, 0, 0, 1}}); err != nil {
				b.Fatal(err)
			}
			tick("eth0")
			if err := deleteHostLink(host); err != nil {
				b.Fatal(err)
			}
			tick("delete")
			// The pair made with its pod end in the pod's netns at once,
			// named there (no move, no rename).
			la = netlink.NewLinkAttrs()
			la.Name, la.MTU = host, vethMTU
			mark = time.Now()
			if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: "eth1", PeerNamespace: netlink.NsFd(int(nss[i].Fd()))}); err != nil {
				b.Fatal(err)
			}
			tick("create-in-netns")
			if err := nss[i].Do(func(ns.NetNS) error { return txChecksumOff("eth1") }); err != nil {
				b.Fatal(err)
			}
			tick("csumoff-in-netns")
			if err := deleteHostLink(host); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, s := range steps {
		b.ReportMetric(ms(sum[s])/float64(b.N*n), s+"-ms")
	}
}

// BenchmarkKernelVethsAtOnce measures 100 pods' veth pairs made at once
// as ADD makes them (makeVeth: made in the pod's netns, the host end moved
// out, the checksum offload off), 16 at a time (DefaultKernelConcurrency),
// then their eth0 configured the same way: the wall time of each phase
// (ms), the kernel's floor for 100 concurrent ADDs.
//
//	go test -run '^$' -bench KernelVethsAtOnce -benchtime 3x ./plugins/pods/
func BenchmarkKernelVethsAtOnce(b *testing.B) {
	needRoot(b)
	const n = 100
	e := &env{t: b}
	var veths, eth0s, dels time.Duration
	gw := netip.MustParseAddr("10.1.1.1")
	for it := range b.N {
		nss := make([]ns.NetNS, n)
		for i := range nss {
			nss[i] = e.netns()
		}
		phase := func(f func(i int) error) time.Duration {
			slots := make(chan struct{}, DefaultKernelConcurrency)
			var wg sync.WaitGroup
			start := time.Now()
			for i := range n {
				wg.Go(func() {
					slots <- struct{}{}
					defer func() { <-slots }()
					if err := f(i); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			return time.Since(start)
		}
		host := func(i int) string { return fmt.Sprintf("kv%d-%d", it, i) }
		veths += phase(func(i int) error { _, err := makeVeth(nss[i].Path(), "eth0", host(i)); return err })
		eth0s += phase(func(i int) error {
			ip := netip.AddrFrom4([4]byte{10, 1, 1, byte(2 + i)})
			return configurePod(nss[i].Path(), podConfig{ifName: "eth0", ip: ip, gateway: gw, gwMAC: net.HardwareAddr{2, 0xfe, 0, 0, 0, 1}})
		})
		dels += phase(func(i int) error { return deleteHostLink(host(i)) })
	}
	b.ReportMetric(ms(veths)/float64(b.N), "veths100-ms")
	b.ReportMetric(ms(eth0s)/float64(b.N), "eth0s100-ms")
	b.ReportMetric(ms(dels)/float64(b.N), "dels100-ms")
	b.ReportMetric(float64(runtime.NumCPU()), "cpus")
}
