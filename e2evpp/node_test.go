package e2evpp

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The address plan is the agent's default one (deploy/examples/agent.yaml)
// for node IDs 1 and 2: node i has 192.168.16.i on its uplink, pods in
// 10.1.i.0/24 behind the pod gateway 10.1.i.1, the host interconnect
// 172.30.i.0/24 and the VXLAN BVI 192.168.30.i. The outside client is
// 192.168.16.100, the nodes' default gateway.
const (
	outsideIP  = "192.168.16.100"
	internetIP = "198.51.100.1" // on the outside namespace, beyond the node network
	fabricNS   = prefix + "-fab"
	outsideNS  = prefix + "-out"
	vxlanVNI   = 10
	podVRF     = 1
	podIfStart = 10 // pod k's VPP end is the veth "pod<k>"
)

// pod is a network namespace with one veth into its node's VPP.
type pod struct {
	node      *node
	namespace string // Kubernetes namespace
	name      string
	k         int // its index on the node: address 10.1.i.(k+1)
	netns     string
	ip        netip.Addr
	// cni: wired by the agent for contiv-cni (cni_test.go), not by the
	// startup configuration nor build.
	cni bool
}

// vppIf is VPP's name of the pod's interface.
func (p *pod) vppIf() string { return fmt.Sprintf("host-pod%d", p.k) }

// vppMAC is the MAC of VPP's end of the pod's veth.
func (p *pod) vppMAC() string { return fmt.Sprintf("02:fe:%02x:01:00:%02x", p.node.id, p.k) }

// mac is the MAC of the pod's own end of its veth (eth0).
func (p *pod) mac() string { return fmt.Sprintf("02:fe:%02x:02:00:%02x", p.node.id, p.k) }

// node is one Kubernetes node: a namespace with a VPP and its agent.
type node struct {
	s     *suite
	id    int
	name  string
	netns string
	dir   string // sockets, configs and logs of its VPP and agent
	pods  []*pod
	sock  string // another node's VPP API socket, for an agent that must not own it

	vpp     *exec.Cmd
	vppDone chan error
	agent   *agentProc
}

func (n *node) ip() string        { return fmt.Sprintf("192.168.16.%d", n.id) }
func (n *node) uplinkMAC() string { return fmt.Sprintf("02:fe:%02x:00:00:01", n.id) }
func (n *node) hostMAC() string   { return fmt.Sprintf("02:fe:%02x:00:00:02", n.id) }
func (n *node) bviMAC() string    { return fmt.Sprintf("02:fe:%02x:00:00:03", n.id) }
func (n *node) podSubnet() string { return fmt.Sprintf("10.1.%d.0/24", n.id) }
func (n *node) apiSocket() string {
	if n.sock != "" {
		return n.sock
	}
	return filepath.Join(n.dir, "api.sock")
}
func (n *node) cliSocket() string    { return filepath.Join(n.dir, "cli.sock") }
func (n *node) vxlanIP(i int) string { return fmt.Sprintf("192.168.30.%d", i) }

// addPod declares a pod on the node; its namespace and veth are made by
// build, its VPP interface by the startup configuration.
func (n *node) addPod(namespace, name string) *pod {
	k := len(n.pods) + 1
	p := &pod{node: n, namespace: namespace, name: name, k: k,
		netns: fmt.Sprintf("%s-n%dp%d", prefix, n.id, k),
		ip:    netip.MustParseAddr(fmt.Sprintf("10.1.%d.%d", n.id, k+1+n.s.podIPBase))}
	n.pods = append(n.pods, p)
	return p
}

// staticPods are the pods the startup configuration wires (not the
// contiv-cni ones).
func (n *node) staticPods() []*pod {
	var out []*pod
	for _, p := range n.pods {
		if !p.cni {
			out = append(out, p)
		}
	}
	return out
}

// build makes the node's namespaces and links: the uplink into the
// fabric's bridge, the host interconnect, the pods.
func (n *node) build(t *testing.T) {
	addNetns(t, n.netns)
	veth(t, n.netns, "eth1", fabricNS, fmt.Sprintf("up%d", n.id))
	ipIn(t, fabricNS, "link", "set", fmt.Sprintf("up%d", n.id), "master", "br0")
	// The host interconnect: VPP's end host-vpp1, the node's Linux end vpp1-host.
	veth(t, n.netns, "vpp1", n.netns, "vpp1-host")
	ipIn(t, n.netns, "addr", "add", fmt.Sprintf("172.30.%d.2/24", n.id), "dev", "vpp1-host")
	// The host's traffic leaves through VPP, as on a node whose NIC VPP
	// owns: health checks reach the agent from the NAT loopback (nat44's
	// twice-NAT) or the client (cnat), and the reply must go back to VPP.
	ipIn(t, n.netns, "route", "add", "default", "via", fmt.Sprintf("172.30.%d.1", n.id))
	for _, p := range n.staticPods() {
		addNetns(t, p.netns)
		veth(t, n.netns, fmt.Sprintf("pod%d", p.k), p.netns, "eth0")
		gw := fmt.Sprintf("10.1.%d.1", n.id)
		ipIn(t, p.netns, "link", "set", "eth0", "address", p.mac())
		ipIn(t, p.netns, "addr", "add", p.ip.String()+"/32", "dev", "eth0")
		ipIn(t, p.netns, "route", "add", gw, "dev", "eth0")
		ipIn(t, p.netns, "neigh", "add", gw, "lladdr", p.vppMAC(), "dev", "eth0")
		ipIn(t, p.netns, "route", "add", "default", "via", gw, "dev", "eth0")
	}
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// startupCLI is what VPP executes at start: the node's interfaces, VRFs,
// routes and tunnels (docs/vpp-node.md), at the suite's scale. Pod
// interfaces carry the agent's tag format "<namespace>/<pod>", as the CNI
// gives them.
func (n *node) startupCLI() string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f+"\n", a...) }
	w("ip table add %d", podVRF)
	w("create host-interface name eth1 hw-addr %s", n.uplinkMAC())
	w("set interface state host-eth1 up")
	w("set interface ip address host-eth1 %s/24", n.ip())
	w("ip route add 0.0.0.0/0 via %s host-eth1", outsideIP)
	w("create host-interface name vpp1 hw-addr %s", n.hostMAC())
	w("set interface state host-vpp1 up")
	w("set interface ip address host-vpp1 172.30.%d.1/24", n.id)
	// The VXLAN BVI and one tunnel per other node.
	// Each node's BVI needs a MAC of its own: VPP gives loopback instance N
	// the MAC de:ad:00:00:00:0N on every node, and a BVI learning its own
	// MAC from the tunnel drops the frame (l2-learn), so the overlay carries
	// nothing.
	w("create loopback interface mac %s instance 1", n.bviMAC())
	w("set interface state loop1 up")
	w("set interface ip table loop1 %d", podVRF)
	w("set interface ip address loop1 %s/24", n.vxlanIP(n.id))
	w("create bridge-domain 1 learn 1 forward 1 uu-flood 1 flood 1 arp-term 0")
	w("set interface l2 bridge loop1 1 bvi")
	tunnel := 0
	for _, o := range n.s.nodes {
		if o == n {
			continue
		}
		w("create vxlan tunnel src %s dst %s vni %d", n.ip(), o.ip(), vxlanVNI)
		w("set interface state vxlan_tunnel%d up", tunnel)
		w("set interface l2 bridge vxlan_tunnel%d 1 1", tunnel)
		w("ip route add %s table %d via %s loop1", o.podSubnet(), podVRF, n.vxlanIP(o.id))
		if n.s.renderer == "cnat" {
			// cnat (VPP 26.06; docs/vpp-node.md section 8): the other node's
			// pods from the main VRF straight over the uplink, not through
			// the tunnel: 26.06 re-applies a flow's output rewrite (the
			// source NAT of external traffic to a remote backend) to the
			// VXLAN packet on the uplink, so only a flow's first packet would
			// cross. Its reply comes back on the uplink, the table its
			// return session is in. And the other node's addresses static
			// neighbours: a translated flow's first packet waiting for ARP
			// never gets its return session on 26.06.
			w("ip route add %s via %s host-eth1", o.podSubnet(), o.ip())
			w("set ip neighbor host-eth1 %s %s static", o.ip(), o.uplinkMAC())
			w("set ip neighbor loop1 %s %s static", o.vxlanIP(o.id), o.bviMAC())
		}
		tunnel++
	}
	// The pod gateway: a loopback in the pod VRF every pod interface borrows
	// its address from. A node declared without static pods has none: its
	// agent's pod manager makes its own for the pods contiv-cni asks for.
	if len(n.staticPods()) > 0 {
		w("create loopback interface mac 02:fe:%02x:00:00:04 instance 0", n.id)
		w("set interface ip table loop0 %d", podVRF)
		w("set interface ip address loop0 10.1.%d.1/32", n.id)
		w("set interface state loop0 up")
	}
	for _, p := range n.staticPods() {
		w("create host-interface name pod%d hw-addr %s", p.k, p.vppMAC())
		w("set interface ip table %s %d", p.vppIf(), podVRF)
		w("set interface unnumbered %s use loop0", p.vppIf())
		w("set interface state %s up", p.vppIf())
		w("set interface tag %s %s/%s", p.vppIf(), p.namespace, p.name)
		w("ip route add %s/32 table %d via %s %s", p.ip, podVRF, p.ip, p.vppIf())
		// The pod a static neighbour, as contiv-cni makes it. Without it
		// VPP drops the packet that starts ARP (ip4-arp): under NAT44-ED the
		// first SYNs to a backend, then their SYN-ACKs to the client, each
		// waited for a 1 s retransmit, so a connection's first wave timed
		// out at 2 s (4 of ~1350 requests in endpoints-1000, measured on
		// 25.02); VPP 26.06's cnat never reverse-translates a flow whose
		// first packet waited for ARP (docs/vpp-node.md section 8).
		w("set ip neighbor %s %s %s static", p.vppIf(), p.ip, p.mac())
	}
	// Every pod subnet, remote ones too, from the main VRF through the pod
	// VRF: cnat resolves a translation's backends in table 0, so a NodePort
	// or external IP reached on the uplink goes to a remote backend only
	// through this route (measured: without it, the default route).
	w("ip route add 10.1.0.0/16 via ip4-lookup-in-table %d", podVRF)
	w("ip route add 0.0.0.0/0 table %d via ip4-lookup-in-table 0", podVRF)
	if n.s.startupEdit != nil {
		return n.s.startupEdit(n, b.String())
	}
	return b.String()
}

// startupConf is VPP's startup configuration: no daemon, sockets of the
// node's own, only the plugins the agent needs, the suite's main heap
// (heap_test.go), and VPP's own main loop: with every interface in
// interrupt mode (af_packet's default) it sleeps in epoll when idle and
// wakes at once for an API request. `poll-sleep-usec 100`, used before,
// slept 100 µs every turn of the loop, and VPP reads 4 KiB of its API
// socket a turn: W(10000)'s first programming took 2-3 times as long, and
// an idle VPP spent 11 % of a CPU instead of 3 % (docs/real-vpp.md).
func (n *node) startupConf() string {
	return fmt.Sprintf(`unix {
  nodaemon
  cli-listen %[1]s/cli.sock
  startup-config %[1]s/node.cli
  log %[1]s/vpp.log
}
%[4]ssocksvr { socket-name %[1]s/api.sock }
statseg { socket-name %[1]s/stats.sock }
api-segment { prefix %[3]s }
plugins {
  path %[2]s/lib/x86_64-linux-gnu/vpp_plugins
  plugin default { disable }
  plugin af_packet_plugin.so { enable }
  plugin nat_plugin.so { enable }
  plugin cnat_plugin.so { enable }
  plugin acl_plugin.so { enable }
  plugin vxlan_plugin.so { enable }
  plugin ping_plugin.so { enable }
}
`, n.dir, n.s.build, n.netns, env.heap)
}

// startVPP starts the node's VPP in its namespace and waits until its
// startup configuration has run (the last static pod's interface, or
// loop1, is there).
func (n *node) startVPP(t *testing.T) {
	t.Helper()
	for name, text := range map[string]string{"node.cli": n.startupCLI(), "vpp.conf": n.startupConf()} {
		if err := os.WriteFile(filepath.Join(n.dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Remove(n.apiSocket())
	_ = os.Remove(n.cliSocket())
	log, err := os.OpenFile(n.s.artifact(n.name+"-vpp.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	n.vpp = exec.Command("ip", "netns", "exec", n.netns, filepath.Join(n.s.build, "bin", "vpp"), "-c", filepath.Join(n.dir, "vpp.conf"))
	n.vpp.Stdout, n.vpp.Stderr = log, log
	if err := n.vpp.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	n.vppDone = done
	go func(c *exec.Cmd) { done <- c.Wait(); log.Close() }(n.vpp)
	last := "loop1"
	if st := n.staticPods(); len(st) > 0 {
		last = st[len(st)-1].vppIf()
	}
	waitFor(t, 60*time.Second, func() (bool, string) {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("%s: VPP exited at start: %v (log: %s)", n.name, err, n.s.artifact(n.name+"-vpp.out"))
		default:
		}
		out := n.cli("show interface")
		return strings.Contains(out, last) && strings.Contains(n.cli("show ip fib table 0 0.0.0.0/0"), outsideIP), n.name + ": VPP's startup configuration has not run: " + out
	})
	if env.version == "unknown" {
		// "vpp v25.02-release built by ..."
		if f := strings.Fields(n.cli("show version")); len(f) > 1 {
			env.version = strings.TrimPrefix(f[1], "v")
		}
	}
}

// stopVPP stops the node's VPP and waits for it.
func (n *node) stopVPP(t *testing.T) {
	t.Helper()
	if n.vpp == nil {
		return
	}
	_ = n.vpp.Process.Signal(os.Interrupt)
	select {
	case <-n.vppDone:
	case <-time.After(10 * time.Second):
		_ = n.vpp.Process.Kill()
		<-n.vppDone
	}
	// ip netns exec forwards no signal: stop the VPP it started by its socket's owner.
	killByCmdline(filepath.Join(n.dir, "vpp.conf"))
	n.vpp = nil
}

// cli runs a debug-CLI command on the node's VPP (context only: what the
// suite asserts comes from the wire or the agent).
func (n *node) cli(cmd string) string {
	out, _ := exec.Command(filepath.Join(n.s.build, "bin", "vppctl"), "-s", n.cliSocket(), cmd).CombinedOutput()
	return string(out)
}

// killByCmdline kills every process whose command line holds s (the VPP a
// killed `ip netns exec` left running).
func killByCmdline(s string) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), s) {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err == nil && pid != os.Getpid() {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	}
	time.Sleep(200 * time.Millisecond)
}
