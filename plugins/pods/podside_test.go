package pods

import (
	"context"
	"strings"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/safchain/ethtool"
)

// txChecksums are the transmit checksum offloads link name has on (in the
// calling thread's netns).
func txChecksums(t *testing.T, name string) []string {
	t.Helper()
	e, err := ethtool.NewEthtool()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	fs, err := e.Features(name)
	if err != nil {
		t.Fatalf("features of %s: %v", name, err)
	}
	var on []string
	for f, v := range fs {
		if v && strings.HasPrefix(f, "tx-checksum-") {
			on = append(on, f)
		}
	}
	return on
}

// A pod's veth (af_packet) must hand VPP complete checksums: VPP's
// af_packet input does not complete a partial one, and the pod at the other
// end drops the packet (the real-VPP suite's TestRealVPPCNI: no TCP between
// two pods of a node while the offload was on).
func TestAFPacketVethHasNoTransmitChecksumOffload(t *testing.T) {
	e := newEnv(t, 24)
	n := e.netns()
	req := e.request("web", n)
	if _, err := e.m.Add(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	err := n.Do(func(ns.NetNS) error {
		if on := txChecksums(t, req.IfName); len(on) > 0 {
			t.Errorf("the pod's %s offloads transmit checksums: %v", req.IfName, on)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
