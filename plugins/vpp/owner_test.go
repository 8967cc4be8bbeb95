package vpp

import (
	"strings"
	"testing"
)

func TestOwnerTag(t *testing.T) {
	tag := OwnerTag("prod-eu", "node-1")
	if tag != "contiv:prod-eu/node-1" {
		t.Errorf("OwnerTag = %q", tag)
	}
	if o, ok := OwnerOf(tag); !ok || o != "prod-eu/node-1" {
		t.Errorf("OwnerOf(%q) = %q, %v", tag, o, ok)
	}
	for _, notOwner := range []string{"", "default/web", "contiv@", "contiv:"} {
		if o, ok := OwnerOf(notOwner); ok {
			t.Errorf("OwnerOf(%q) = %q, true: no owner marker", notOwner, o)
		}
	}
	// Long node names fit VPP's 63 bytes and stay distinct.
	long := strings.Repeat("n", 60)
	a, b := OwnerTag("c", long+"a"), OwnerTag("c", long+"b")
	if len(a) > maxTag || len(b) > maxTag || a == b || !strings.HasPrefix(a, "contiv:c/nnn") {
		t.Errorf("long names: %q (%d bytes), %q", a, len(a), b)
	}
}

// TestLegacyOwnerTag: the marks of agents before clusterName ("contiv@" +
// etcd cluster ID + "/" + node) name their owner, and are known as the
// given node's whatever the etcd cluster ID, long names too.
func TestLegacyOwnerTag(t *testing.T) {
	legacy := "contiv@e75700c5e2c7c3ee/node-1"
	if o, ok := OwnerOf(legacy); !ok || o != "e75700c5e2c7c3ee/node-1" {
		t.Errorf("OwnerOf(%q) = %q, %v", legacy, o, ok)
	}
	long := strings.Repeat("n", 60)
	// The legacy shortening, written out: what an old agent of node long
	// wrote with etcd cluster ID 1f.
	whole := "contiv@1f/" + long
	longLegacy := fitTag(whole)
	if len(longLegacy) != maxTag || !strings.HasPrefix(whole, strings.Split(longLegacy, "~")[0]) {
		t.Fatalf("legacy long mark %q", longLegacy)
	}
	for _, c := range []struct {
		tag, node string
		want      bool
	}{
		{legacy, "node-1", true},
		{"contiv@0123/node-1", "node-1", true},
		{legacy, "node-2", false},
		{legacy, "node", false},
		{"contiv@e75700c5e2c7c3ee/node-1x", "node-1", false},
		{OwnerTag("kubernetes", "node-1"), "node-1", false},
		{"", "node-1", false},
		{"contiv@node-1", "node-1", false},
		{longLegacy, long, true},
		{longLegacy, long + "x", false},
	} {
		if got := IsLegacyOwnerTag(c.tag, c.node); got != c.want {
			t.Errorf("IsLegacyOwnerTag(%q, %q) = %v, want %v", c.tag, c.node, got, c.want)
		}
	}
}
