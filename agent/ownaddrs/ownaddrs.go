package ownaddrs

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"contiv.dev/vpp/plugins/ipam"
	"contiv.dev/vpp/plugins/nodesync"
)

// Tracker follows this node's VPP addresses from IPAM's publish, through
// NodeSync's record in etcd and back through the watch to the service
// processor, to the apply that programs their NodePorts. On a node's first
// start the record comes back a moment after the first full sync: until
// the addresses are applied, readiness says so. The zero Tracker is ready
// for use.
type Tracker struct {
	mu sync.Mutex
	// published is what IPAM last published (nil: nothing yet); seen what
	// the service processor last read of this node's record; applied what
	// it had read when an apply last succeeded.
	published     []netip.Prefix
	seen, applied []netip.Addr
}

// Publish records the addresses IPAM publishes.
func (o *Tracker) Publish(ips []netip.Prefix) {
	o.mu.Lock()
	o.published = slices.Clone(ips)
	o.mu.Unlock()
}

// Saw records the addresses the service processor read.
func (o *Tracker) Saw(ips []netip.Addr) {
	o.mu.Lock()
	o.seen = slices.Clone(ips)
	o.mu.Unlock()
}

// SeenNow is what the processor read last, taken before an apply.
func (o *Tracker) SeenNow() []netip.Addr {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen
}

// AppliedNow records that an apply of what the processor had read as ips
// succeeded.
func (o *Tracker) AppliedNow(ips []netip.Addr) {
	o.mu.Lock()
	o.applied = ips
	o.mu.Unlock()
}

// Missing lists the published addresses that no successful apply has seen
// in this node's record yet.
func (o *Tracker) Missing() []netip.Prefix {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []netip.Prefix
	for _, p := range o.published {
		if !slices.Contains(o.applied, p.Addr()) {
			out = append(out, p)
		}
	}
	return out
}

// Reason is the readiness reason for addresses not applied yet;
// w says why the record may not have come back (etcd not answering).
func Reason(missing []netip.Prefix, w nodesync.WriteStatus) string {
	if len(missing) == 0 {
		return ""
	}
	s := make([]string, len(missing))
	for i, p := range missing {
		s[i] = p.String()
	}
	why := "waiting for this node's VPP addresses (" + strings.Join(s, ", ") + ") to come back from etcd in its NodeSync record: their NodePorts are not programmed yet"
	if w.Pending && w.LastError != "" {
		why += "; writing the record failed: " + w.LastError
	}
	return why
}

// PublishTap passes IPAM's publish on to Inner (NodeSync) and records it
// in Addrs.
type PublishTap struct {
	Inner ipam.VppIPPublisher
	Addrs *Tracker
}

// PublishVppIPs implements ipam.VppIPPublisher.
func (t PublishTap) PublishVppIPs(ctx context.Context, ips []netip.Prefix) error {
	t.Addrs.Publish(ips)
	return t.Inner.PublishVppIPs(ctx, ips)
}
