package e2evpp

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// prefix starts the name of every namespace and link the suite makes, so
// that a run's leftovers are found and removed by name.
const prefix = "cve"

// run runs a command and fails the test with its output when it fails.
func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// ipIn runs `ip` inside namespace ns ("" for the root namespace).
func ipIn(t testing.TB, ns string, args ...string) string {
	t.Helper()
	if ns == "" {
		return run(t, "ip", args...)
	}
	return run(t, "ip", append([]string{"-n", ns}, args...)...)
}

// execIn runs a command inside namespace ns.
func execIn(t testing.TB, ns string, args ...string) string {
	t.Helper()
	return run(t, "ip", append([]string{"netns", "exec", ns}, args...)...)
}

// addNetns makes a namespace with its loopback up.
func addNetns(t testing.TB, ns string) {
	t.Helper()
	run(t, "ip", "netns", "add", ns)
	ipIn(t, ns, "link", "set", "lo", "up")
}

// removeLeftovers stops the VPPs and agents of an earlier run that did
// not end cleanly (their files are under the suite's directory, so no
// other VPP is touched) and deletes its namespaces (their veths go with
// them).
func removeLeftovers() {
	killByCmdline(runDir() + "/")
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], prefix+"-") {
			_ = exec.Command("ip", "netns", "del", f[0]).Run()
		}
	}
}

// veth makes a veth pair, end a in namespace nsA and end b in nsB, both up,
// with checksum offload off (VPP's af_packet does not complete a partial
// checksum).
func veth(t testing.TB, nsA, a, nsB, b string) {
	t.Helper()
	tmpA, tmpB := prefix+"tmpa", prefix+"tmpb"
	ipIn(t, "", "link", "add", tmpA, "type", "veth", "peer", "name", tmpB)
	ipIn(t, "", "link", "set", tmpA, "netns", nsA, "name", a)
	ipIn(t, "", "link", "set", tmpB, "netns", nsB, "name", b)
	for _, e := range []struct{ ns, dev string }{{nsA, a}, {nsB, b}} {
		ipIn(t, e.ns, "link", "set", e.dev, "up")
		execIn(t, e.ns, "ethtool", "-K", e.dev, "tx", "off", "rx", "off")
	}
}

// inNetns runs fn on an OS thread that has entered namespace ns. Sockets
// fn opens belong to ns for their life, wherever they are used from later.
// The thread is never reused: its goroutine exits while locked to it.
func inNetns(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // not unlocked: the thread ends with the goroutine
		f, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("entering namespace %s: %w", ns, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// runQuiet runs a command, ignoring its output.
func runQuiet(name string, args ...string) error { return exec.Command(name, args...).Run() }
