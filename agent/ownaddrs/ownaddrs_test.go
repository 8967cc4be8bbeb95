package ownaddrs

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"contiv.dev/vpp/internal/retryloop"
	"contiv.dev/vpp/plugins/nodesync"
)

// publisher keeps what it was asked to publish.
type publisher struct{ got []netip.Prefix }

func (p *publisher) PublishVppIPs(_ context.Context, ips []netip.Prefix) error {
	p.got = ips
	return nil
}

// TestTrackerMissing: a published address is missing until an apply
// succeeded of a read of this node's record that held it; an apply of an
// older read does not count.
func TestTrackerMissing(t *testing.T) {
	var o Tracker
	if m := o.Missing(); len(m) != 0 {
		t.Fatalf("nothing published: missing %v", m)
	}
	vppIP := netip.MustParsePrefix("192.168.16.1/24")
	inner := &publisher{}
	if err := (PublishTap{Inner: inner, Addrs: &o}).PublishVppIPs(context.Background(), []netip.Prefix{vppIP}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(inner.got, []netip.Prefix{vppIP}) {
		t.Errorf("the tap passed on %v", inner.got)
	}
	before := o.SeenNow() // an apply starts before the record came back
	o.Saw([]netip.Addr{vppIP.Addr()})
	o.AppliedNow(before)
	if m := o.Missing(); !slices.Equal(m, []netip.Prefix{vppIP}) {
		t.Errorf("applied an older read: missing %v, want %v", m, vppIP)
	}
	o.AppliedNow(o.SeenNow())
	if m := o.Missing(); len(m) != 0 {
		t.Errorf("applied: missing %v", m)
	}
}

// TestReason names the addresses and, while the record's write is
// pending, why it failed.
func TestReason(t *testing.T) {
	if r := Reason(nil, nodesync.WriteStatus{Pending: true, Status: retryloop.Status{LastError: "etcd down"}}); r != "" {
		t.Errorf("nothing missing: %q", r)
	}
	missing := []netip.Prefix{netip.MustParsePrefix("192.168.16.1/24"), netip.MustParsePrefix("fd00::1/64")}
	r := Reason(missing, nodesync.WriteStatus{})
	if !strings.Contains(r, "(192.168.16.1/24, fd00::1/64)") || strings.Contains(r, "failed") {
		t.Errorf("missing, record written: %q", r)
	}
	r = Reason(missing, nodesync.WriteStatus{Pending: true, Status: retryloop.Status{LastError: "etcd down"}})
	if !strings.HasSuffix(r, "; writing the record failed: etcd down") {
		t.Errorf("missing, write failing: %q", r)
	}
}
