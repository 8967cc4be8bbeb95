package e2evpp

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestHarness checks the suite's own tools without VPP: two namespaces on
// a veth pair, servers and clients opened inside them, a flow that is cut
// when its server's namespace loses the link, and the verdicts a client
// tells apart. It runs in make test (as root).
func TestHarness(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	for _, tool := range []string{"ip", "ethtool"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (apt-get install iproute2 ethtool; .ci/run installs them)", tool)
		}
	}
	a, b := prefix+"-ha", prefix+"-hb"
	for _, ns := range []string{a, b} {
		_ = runQuiet("ip", "netns", "del", ns)
		addNetns(t, ns)
		t.Cleanup(func() { _ = runQuiet("ip", "netns", "del", ns) })
	}
	veth(t, a, "eth0", b, "eth0")
	ipIn(t, a, "addr", "add", "192.0.2.1/24", "dev", "eth0")
	ipIn(t, b, "addr", "add", "192.0.2.2/24", "dev", "eth0")
	serveIn(t, b, "srv", 8080)

	for _, proto := range []string{"tcp", "udp"} {
		got, err := request(a, proto, "192.0.2.2:8080", 2*time.Second)
		if err != nil || got.backend != "srv" || got.source != "192.0.2.1" {
			t.Errorf("%s request: %+v %v, want srv seeing 192.0.2.1", proto, got, err)
		}
	}
	if v, _ := refusal(a, "tcp", "192.0.2.2:9"); v != "refused" {
		t.Errorf("a closed TCP port: %s, want refused", v)
	}
	// An address nobody answers (no neighbour): the request times out.
	ipIn(t, a, "neigh", "add", "192.0.2.9", "lladdr", "02:00:00:00:00:09", "dev", "eth0")
	if v, _ := refusal(a, "tcp", "192.0.2.9:80"); v != "timeout" {
		t.Errorf("an address that never answers: %s, want timeout", v)
	}

	fs := openFlows(t, a, "tcp", "192.0.2.2:8080", 2)
	us := openFlows(t, a, "udp", "192.0.2.2:8080", 2)
	time.Sleep(300 * time.Millisecond)
	if n, _ := cuts(append(fs, us...)); n != 0 {
		t.Fatalf("%d flows cut on a quiet link", n)
	}
	ipIn(t, b, "link", "set", "eth0", "down")
	time.Sleep(2500 * time.Millisecond)
	if n, _ := cuts(append(fs, us...)); n != 4 {
		t.Errorf("%d of 4 flows counted cut after the link went down", n)
	}
}
