package vpp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/core"

	"contiv.dev/vpp/internal/vppcorpus"
)

// The lab: a real VPP 25.02 on veth pairs into network namespaces made by
// the test, programmed over govpp's socket client with the agent's own
// requests, every request and reply written as a corpus record, and real
// TCP/UDP traffic between the namespaces. It runs only when
// $CONTIV_VPP_LAB names a VPP build directory (bin/vpp and
// lib/x86_64-linux-gnu/vpp_plugins), as root; CI skips it. The records
// it wrote are replayed against the simulated VPP by
// sim.TestRecordsVerdicts.

// labEnv names the VPP build directory that turns the lab on.
const labEnv = "CONTIV_VPP_LAB"

// labDir holds the lab's sockets and files.
const labDir = "/tmp/hv"

// labNamespaces are the namespaces the lab makes: outside (a client on
// the uplink), a client pod, a backend pod, an IPv6 client pod.
var labNamespaces = []string{"hv-out", "hv-cl", "hv-be", "hv-c6"}

// labVeths: VPP end (root namespace) → namespace end, namespace, MACs and
// the namespace end's addresses and routes.
var labVeths = []struct {
	vpp, peer, ns, vppMAC, peerMAC string
	cmds                           []string
}{
	{"hvo0", "hvo1", "hv-out", "02:fe:0a:00:00:01", "02:fe:0b:00:00:01", []string{
		"addr add 192.168.16.2/24 dev hvo1",
		"-6 addr add fd00:16::2/64 dev hvo1 nodad",
		"neigh add 192.168.16.1 lladdr 02:fe:0a:00:00:01 dev hvo1",
		"-6 neigh add fd00:16::1 lladdr 02:fe:0a:00:00:01 dev hvo1",
		"route add 10.96.0.0/12 via 192.168.16.1",
		"route add 203.0.113.0/24 via 192.168.16.1",
		"route add 10.1.1.0/24 via 192.168.16.1",
		"-6 route add fd00:96::/108 via fd00:16::1",
		"-6 route add fd00:1::/32 via fd00:16::1",
	}},
	{"hvc0", "hvc1", "hv-cl", "02:fe:0a:00:00:02", "02:fe:0b:00:00:02", []string{
		"addr add 10.1.1.2/32 dev hvc1",
		"route add 10.1.1.1/32 dev hvc1",
		"neigh add 10.1.1.1 lladdr 02:fe:0a:00:00:02 dev hvc1",
		"route add default via 10.1.1.1 dev hvc1",
	}},
	{"hvb0", "hvb1", "hv-be", "02:fe:0a:00:00:03", "02:fe:0b:00:00:03", []string{
		"addr add 10.1.1.3/32 dev hvb1",
		"route add 10.1.1.1/32 dev hvb1",
		"neigh add 10.1.1.1 lladdr 02:fe:0a:00:00:03 dev hvb1",
		"route add default via 10.1.1.1 dev hvb1",
	}},
	{"hvd0", "hvd1", "hv-c6", "02:fe:0a:00:00:04", "02:fe:0b:00:00:04", []string{
		"-6 addr add fd00:1:2::2/64 dev hvd1 nodad",
		"-6 neigh add fd00:1:2::1 lladdr 02:fe:0a:00:00:04 dev hvd1",
		"-6 route add default via fd00:1:2::1 dev hvd1",
	}},
}

// labStartup is VPP's startup CLI: the agent's node layout (docs/vpp-node.md
// §2-§5) at lab scale. Indices: 0 local0, 1 host-hvo0 (uplink, VRF 0,
// 192.168.16.1/24, fd00:16::1/64), 2 loop0 (VRF 1, 10.1.1.1/32),
// 3 host-hvc0 (client pod 10.1.1.2), 4 host-hvb0 (backend pod 10.1.1.3),
// 5 host-hvd0 (IPv6 pod fd00:1:2::2, ip6 table 1).
const labStartup = `create host-interface name hvo0 hw-addr 02:fe:0a:00:00:01
set interface ip address host-hvo0 192.168.16.1/24
set interface ip address host-hvo0 fd00:16::1/64
set interface state host-hvo0 up
ip table add 1
ip6 table add 1
create loopback interface mac de:ad:00:00:00:00
set interface ip table loop0 1
set interface ip address loop0 10.1.1.1/32
set interface state loop0 up
create host-interface name hvc0 hw-addr 02:fe:0a:00:00:02
set interface ip table host-hvc0 1
set interface unnumbered host-hvc0 use loop0
set interface state host-hvc0 up
create host-interface name hvb0 hw-addr 02:fe:0a:00:00:03
set interface ip table host-hvb0 1
set interface unnumbered host-hvb0 use loop0
set interface state host-hvb0 up
create host-interface name hvd0 hw-addr 02:fe:0a:00:00:04
set interface ip6 table host-hvd0 1
set interface ip address host-hvd0 fd00:1:2::1/64
set interface state host-hvd0 up
set ip neighbor host-hvo0 192.168.16.2 02:fe:0b:00:00:01
set ip neighbor host-hvo0 fd00:16::2 02:fe:0b:00:00:01
set ip neighbor host-hvc0 10.1.1.2 02:fe:0b:00:00:02
set ip neighbor host-hvb0 10.1.1.3 02:fe:0b:00:00:03
set ip neighbor host-hvd0 fd00:1:2::2 02:fe:0b:00:00:04
ip route add 10.1.1.2/32 table 1 via 10.1.1.2 host-hvc0
ip route add 10.1.1.3/32 table 1 via 10.1.1.3 host-hvb0
ip route add 10.1.1.0/24 table 0 via ip4-lookup-in-table 1
ip route add 0.0.0.0/0 table 1 via ip4-lookup-in-table 0
ip route add fd00:1:2::/64 table 0 via ip6-lookup-in-table 1
ip route add ::/0 table 1 via ip6-lookup-in-table 0
`

// lab is one running lab: the namespaces, the VPP process, the recorder.
type lab struct {
	t     *testing.T
	build string
	vpp   *exec.Cmd
	done  chan error
	conn  *core.Connection
	rec   *recorder
	bg    []*exec.Cmd
}

// newLab skips unless $CONTIV_VPP_LAB is set; it makes the namespaces and
// starts VPP; Cleanup removes all of it.
func newLab(t *testing.T) *lab {
	build := os.Getenv(labEnv)
	if build == "" {
		t.Skipf("no real VPP: set %s to a VPP 25.02 build directory (as root)", labEnv)
	}
	l := &lab{t: t, build: build}
	t.Cleanup(l.teardown)
	l.teardown() // leftovers of an interrupted run
	if err := os.MkdirAll(labDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, ns := range labNamespaces {
		l.sh("ip", "netns", "add", ns)
		l.sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
	}
	for _, v := range labVeths {
		l.sh("ip", "link", "add", v.vpp, "type", "veth", "peer", "name", v.peer)
		l.sh("ip", "link", "set", v.peer, "netns", v.ns)
		l.sh("ip", "netns", "exec", v.ns, "ip", "link", "set", v.peer, "address", v.peerMAC)
		for _, c := range []string{v.vpp} {
			l.sh("ip", "link", "set", c, "up")
			l.sh("ethtool", "-K", c, "tx", "off", "rx", "off")
		}
		l.sh("ip", "netns", "exec", v.ns, "ip", "link", "set", v.peer, "up")
		l.sh("ip", "netns", "exec", v.ns, "ethtool", "-K", v.peer, "tx", "off", "rx", "off")
		for _, c := range v.cmds {
			l.sh(append([]string{"ip", "netns", "exec", v.ns, "ip"}, strings.Fields(c)...)...)
		}
	}
	// The backend pod serves HTTP on 8080 and echoes UDP on 5353.
	l.background("hv-be", "python3", "-m", "http.server", "--bind", "0.0.0.0", "8080")
	l.background("hv-be", "python3", "-c", udpEcho)
	l.startVPP()
	return l
}

const udpEcho = `import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 5353))
while True:
    d, a = s.recvfrom(2048)
    s.sendto(d, a)
`

func (l *lab) sh(args ...string) string {
	l.t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		l.t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (l *lab) background(ns string, args ...string) {
	c := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...)
	if err := c.Start(); err != nil {
		l.t.Fatal(err)
	}
	l.bg = append(l.bg, c)
}

// startVPP starts VPP with labStartup and connects when its interfaces
// are there.
func (l *lab) startVPP() {
	t := l.t
	startup := filepath.Join(labDir, "startup.cli")
	if err := os.WriteFile(startup, []byte(labStartup), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`unix { nodaemon cli-listen %[1]s/cli.sock exec %[2]s log %[1]s/vpp.log }
socksvr { socket-name %[1]s/api.sock }
statseg { socket-name %[1]s/stats.sock }
plugins { path %[3]s/lib/x86_64-linux-gnu/vpp_plugins
  plugin default { disable }
  plugin af_packet_plugin.so { enable }
  plugin nat_plugin.so { enable }
  plugin ping_plugin.so { enable }
  plugin cnat_plugin.so { enable }
}
`, labDir, startup, l.build)
	cf := filepath.Join(labDir, "vpp.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(labDir, "api.sock"))
	out, err := os.Create(filepath.Join(labDir, "vpp.out"))
	if err != nil {
		t.Fatal(err)
	}
	l.vpp = exec.Command(filepath.Join(l.build, "bin", "vpp"), "-c", cf)
	l.vpp.Stdout, l.vpp.Stderr = out, out
	if err := l.vpp.Start(); err != nil {
		t.Fatal(err)
	}
	l.done = make(chan error, 1)
	go func() { l.done <- l.vpp.Wait(); out.Close() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatal("VPP's API socket did not appear")
		}
		if _, err := os.Stat(filepath.Join(labDir, "api.sock")); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	l.conn, err = core.Connect(socketclient.NewVppClient(filepath.Join(labDir, "api.sock")))
	if err != nil {
		t.Fatal(err)
	}
	// The startup configuration's interfaces appear a few seconds later.
	for {
		if time.Now().After(deadline) {
			t.Fatal("VPP's startup interfaces did not appear")
		}
		out := l.cli("show interface")
		if strings.Contains(out, "host-hvd0") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second)
}

// cli runs a debug-CLI command (not recorded: context only).
func (l *lab) cli(cmd string) string {
	out, _ := exec.Command(filepath.Join(l.build, "bin", "vppctl"), "-s", filepath.Join(labDir, "cli.sock"), cmd).CombinedOutput()
	return string(out)
}

// stopVPP stops the VPP the lab started (by its PID) and waits for it.
func (l *lab) stopVPP() {
	if l.conn != nil {
		l.conn.Disconnect()
		l.conn = nil
	}
	if l.vpp == nil {
		return
	}
	if l.vpp.ProcessState == nil {
		_ = l.vpp.Process.Kill()
	}
	select {
	case <-l.done:
	case <-time.After(10 * time.Second):
	}
	l.vpp = nil
}

// crashed tells whether VPP has exited.
func (l *lab) crashed() bool {
	select {
	case err := <-l.done:
		l.done <- err
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

func (l *lab) teardown() {
	l.stopVPP()
	for _, c := range l.bg {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	l.bg = nil
	for _, v := range labVeths {
		_ = exec.Command("ip", "link", "del", v.vpp).Run()
	}
	for _, ns := range labNamespaces {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
	for _, f := range []string{"api.sock", "cli.sock", "stats.sock"} {
		_ = os.Remove(filepath.Join(labDir, f))
	}
}

// recorder writes corpus records (internal/vppcorpus's format) of the
// requests it sends.
type recorder struct {
	t        *testing.T
	l        *lab
	scenario string
	recs     []*vppcorpus.Record
}

func (l *lab) record(scenario string) *recorder {
	r := &recorder{t: l.t, l: l, scenario: scenario}
	l.rec = r
	return r
}

// call sends req (a dump is followed by control_ping) and records what
// came back; a VPP that died is recorded as the error.
func (r *recorder) call(note string, req api.Message) ([]api.Message, error) {
	r.t.Helper()
	rec := &vppcorpus.Record{Scenario: r.scenario, Step: len(r.recs) + 1, Note: note, Request: msgOf(req)}
	r.recs = append(r.recs, rec)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := r.send(ctx, req)
	for _, m := range got {
		rec.Replies = append(rec.Replies, *msgOf(m))
	}
	if err != nil {
		rec.Error = err.Error()
		return got, err
	}
	if rv := labRetval(got[len(got)-1]); rv != 0 {
		return got, api.RetvalToVPPApiError(rv)
	}
	return got, nil
}

// must is call that fails the test on an error.
func (r *recorder) must(note string, req api.Message) []api.Message {
	r.t.Helper()
	got, err := r.call(note, req)
	if err != nil {
		r.t.Fatalf("%s: %v", note, err)
	}
	return got
}

func (r *recorder) send(ctx context.Context, req api.Message) ([]api.Message, error) {
	s, err := r.l.conn.NewStream(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.Close() }()
	if err := s.SendMsg(req); err != nil {
		return nil, err
	}
	dump := strings.HasSuffix(req.GetMessageName(), "_dump")
	if dump {
		if err := s.SendMsg(&memclnt.ControlPing{}); err != nil {
			return nil, err
		}
	}
	var out []api.Message
	for {
		m, err := s.RecvMsg()
		if err != nil {
			return out, err
		}
		out = append(out, m)
		n := m.GetMessageName()
		if (dump && n == "control_ping_reply") || (!dump && strings.HasSuffix(n, "_reply")) {
			return out, nil
		}
	}
}

// note records an observation (traffic, the debug CLI's view).
func (r *recorder) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	r.t.Log(s)
	r.recs = append(r.recs, &vppcorpus.Record{Scenario: r.scenario, Step: len(r.recs) + 1, Note: s})
}

// write writes the records to dir/<scenario>.jsonl.
func (r *recorder) write(dir string) {
	var b strings.Builder
	for _, rec := range r.recs {
		j, err := json.Marshal(rec)
		if err != nil {
			r.t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, r.scenario+".jsonl"), []byte(b.String()), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func msgOf(m api.Message) *vppcorpus.Msg {
	j, _ := json.Marshal(m)
	return &vppcorpus.Msg{Name: m.GetMessageName(), CRC: m.GetCrcString(), Fields: j}
}

func labRetval(m api.Message) int32 {
	v := reflect.ValueOf(m).Elem().FieldByName("Retval")
	if !v.IsValid() {
		return 0
	}
	return int32(v.Int())
}

// probe is one traffic attempt's outcome.
type probe struct {
	Result string        // what the client saw
	Took   time.Duration // until it saw it
	ICMP   []string      // ICMP messages the client's namespace received (tcpdump -v)
}

func (p probe) String() string {
	s := fmt.Sprintf("%s in %d ms", p.Result, p.Took.Milliseconds())
	if len(p.ICMP) > 0 {
		s += "; ICMP received: " + strings.Join(p.ICMP, " | ")
	}
	return s
}

// tcp connects with curl from namespace ns to ip:port (3 s timeout).
func (l *lab) tcp(ns, ifName, host string, port int) probe {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return l.capture(ns, ifName, func() string {
		err := exec.Command("ip", "netns", "exec", ns, "curl", "-s", "-o", "/dev/null", "--max-time", "3",
			fmt.Sprintf("http://%s:%d/", host, port)).Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return "curl exit 0 (connected)"
		case errors.As(err, &ee):
			return fmt.Sprintf("curl exit %d", ee.ExitCode())
		}
		return err.Error()
	})
}

const udpClient = `import socket, sys
h, p = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET6 if ":" in h else socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.connect((h, p))
s.send(b"ping")
try:
    s.recv(100)
    print("reply")
except socket.timeout:
    print("timeout")
except OSError as e:
    print("error " + (e.strerror or str(e)))
`

// udp sends one datagram on a connected socket from ns and waits 3 s for
// a reply or an error.
func (l *lab) udp(ns, ifName, host string, port int) probe {
	return l.capture(ns, ifName, func() string {
		out, err := exec.Command("ip", "netns", "exec", ns, "python3", "-c", udpClient, host, fmt.Sprint(port)).CombinedOutput()
		if err != nil {
			return fmt.Sprintf("client failed: %v %s", err, out)
		}
		return "udp " + strings.TrimSpace(string(out))
	})
}

// capture runs f with tcpdump listening for ICMP in ns.
func (l *lab) capture(ns, ifName string, f func() string) probe {
	dump := exec.Command("ip", "netns", "exec", ns, "tcpdump", "-l", "-n", "-v", "-i", ifName, "icmp or icmp6")
	var out strings.Builder
	dump.Stdout = &out
	if err := dump.Start(); err != nil {
		l.t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	res := f()
	took := time.Since(start)
	time.Sleep(300 * time.Millisecond)
	_ = dump.Process.Signal(os.Interrupt)
	_ = dump.Wait()
	p := probe{Result: res, Took: took}
	var cur string
	for _, line := range strings.Split(out.String(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.Contains(line, " IP") && strings.Contains(line, "proto") || strings.Contains(line, "IP6 (") || strings.HasPrefix(line, "IP6 ") {
			if cur != "" {
				p.ICMP = append(p.ICMP, cur)
			}
			cur = line
			continue
		}
		cur += " " + line
	}
	if cur != "" {
		p.ICMP = append(p.ICMP, cur)
	}
	return p
}
