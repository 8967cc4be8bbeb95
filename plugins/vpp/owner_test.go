package vpp

import (
	"strings"
	"testing"
)

func TestOwnerTag(t *testing.T) {
	tag := OwnerTag("e75700c5e2c7c3ee", "node-1")
	if tag != "contiv@e75700c5e2c7c3ee/node-1" {
		t.Errorf("OwnerTag = %q", tag)
	}
	if o, ok := OwnerOf(tag); !ok || o != "e75700c5e2c7c3ee/node-1" {
		t.Errorf("OwnerOf(%q) = %q, %v", tag, o, ok)
	}
	for _, notOwner := range []string{"", "default/web", "contiv@"} {
		if o, ok := OwnerOf(notOwner); ok {
			t.Errorf("OwnerOf(%q) = %q, true: no owner marker", notOwner, o)
		}
	}
	// Long node names fit VPP's 63 bytes and stay distinct.
	long := strings.Repeat("n", 60)
	a, b := OwnerTag("c", long+"a"), OwnerTag("c", long+"b")
	if len(a) > maxTag || len(b) > maxTag || a == b || !strings.HasPrefix(a, "contiv@c/nnn") {
		t.Errorf("long names: %q (%d bytes), %q", a, len(a), b)
	}
}
