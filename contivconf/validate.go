package contivconf

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// maxSocketPath is the longest path a Unix socket address holds (Linux
// sun_path is 108 bytes with the terminating NUL).
const maxSocketPath = 107

// invalidVRF is VPP's "no VRF" (~0).
const invalidVRF = math.MaxUint32

// Validate checks the whole configuration and reports every problem at
// once (errors.Join of *FieldError, each matching ErrInvalid), each naming
// the field's path and its bad value. It does no I/O: files and the VPP
// socket are checked when they are used.
func (c Config) Validate() error {
	var p problems
	if c.NodeName != "" {
		checkNodeName(&p, "nodeName", c.NodeName)
	}
	checkClusterName(&p, "clusterName", c.ClusterName)
	c.Log.validate(&p)
	c.Controller.validate(&p)
	c.Etcd.validate(&p)
	c.VPP.validate(&p)
	checkHostPort(&p, "http.address", c.HTTP.Address)
	if a := c.HTTP.ProxyHealthAddress; a != "off" {
		checkHostPort(&p, "http.proxyHealthAddress", a)
	}
	if a := c.HTTP.ServiceHealthAddress; a.IsValid() && !a.Is4() {
		p.add("http.serviceHealthAddress", a, "must be IPv4 (VPP's NAT44 brings the checks to it)")
	}
	switch c.Renderer {
	case RendererNAT44, RendererCNAT:
	default:
		p.add("renderer", c.Renderer, "want nat44 or cnat")
	}
	c.NAT44.validate(&p)
	c.Routing.validate(&p)
	if v := c.NAT44.ExternalIPTenantVRF; v == invalidVRF || v == c.Routing.MainVRFID || v == c.Routing.PodVRFID {
		p.add("nat44.externalIPTenantVRF", v, "must be a VRF used for nothing else (not ~0, routing.mainVRFID or routing.podVRFID)")
	}
	c.IPAM.validate(&p)
	c.NodeSync.validate(&p)
	c.CNI.validate(&p)
	seen := map[string]int{}
	for i, o := range c.NodeConfig {
		path := fmt.Sprintf("nodeConfig[%d]", i)
		o.validate(&p, path)
		if o.NodeName == "" {
			continue
		}
		if j, dup := seen[o.NodeName]; dup {
			p.add(path+".nodeName", o.NodeName, "duplicate of nodeConfig[%d]", j)
			continue
		}
		seen[o.NodeName] = i
	}
	return p.err()
}

func (l LogConfig) validate(p *problems) {
	switch l.Level {
	case LogLevelDebug, LogLevelInfo, LogLevelWarn, LogLevelError:
	default:
		p.add("log.level", l.Level, "want debug, info, warn or error")
	}
	switch l.Format {
	case LogFormatText, LogFormatJSON:
	default:
		p.add("log.format", l.Format, "want text or json")
	}
}

func (c ControllerConfig) validate(p *problems) {
	nonNegative(p, "controller.minBatchInterval", c.MinBatchInterval)
	c.HealingBackoff.validate(p, "controller.healingBackoff")
	if c.ResyncInterval < 0 {
		p.add("controller.resyncInterval", c.ResyncInterval, "must not be negative (0 disables the periodic resync)")
	}
	positive(p, "controller.startupTimeout", c.StartupTimeout)
	nonNegative(p, "controller.batchHold", c.BatchHold)
	nonNegative(p, "controller.historyCheck", c.HistoryCheck)
	if c.StartupHeapMiB < 0 {
		p.add("controller.startupHeapMiB", c.StartupHeapMiB, "must not be negative (0 turns it off)")
	}
}

func (b Backoff) validate(p *problems, path string) {
	positive(p, path+".initial", b.Initial)
	if b.Initial > 0 && b.Max < b.Initial {
		p.add(path+".max", b.Max, "must be at least %s.initial (%s)", path, b.Initial)
	}
}

func (e EtcdConfig) validate(p *problems) {
	seen := map[string]int{}
	for i, ep := range e.Endpoints {
		path := fmt.Sprintf("etcd.endpoints[%d]", i)
		if j, dup := seen[ep]; dup {
			p.add(path, ep, "duplicate of etcd.endpoints[%d]", j)
			continue
		}
		seen[ep] = i
		checkEndpoint(p, path, ep)
	}
	switch {
	case len(e.Endpoints) == 0 && !e.Embedded.Enabled:
		p.add("etcd.endpoints", nil, "required: the etcd cluster every agent shares (or set etcd.embedded.enabled for a development etcd inside this agent)")
	case len(e.Endpoints) > 0 && e.Embedded.Enabled:
		p.add("etcd.embedded.enabled", true, "set together with etcd.endpoints: choose one")
	}
	if e.Embedded.DataDir == "" {
		p.add("etcd.embedded.dataDir", nil, "required")
	}
	if u := e.Embedded.ClientURL; u != "" {
		checkEmbeddedURL(p, "etcd.embedded.clientURL", u)
	}
	positive(p, "etcd.dialTimeout", e.DialTimeout)
	positive(p, "etcd.requestTimeout", e.RequestTimeout)
	t := e.TLS
	if t.CertFile != "" && t.KeyFile == "" {
		p.add("etcd.tls.keyFile", nil, "required with etcd.tls.certFile (%q)", t.CertFile)
	}
	if t.KeyFile != "" && t.CertFile == "" {
		p.add("etcd.tls.certFile", nil, "required with etcd.tls.keyFile (%q)", t.KeyFile)
	}
	if t.Enabled() && e.UseEmbedded() {
		p.add("etcd.tls", nil, "set, but the embedded etcd (etcd.embedded.enabled) serves plain HTTP")
	}
	if e.Password != "" && e.Username == "" {
		p.add("etcd.username", nil, "required with etcd.password")
	}
}

// checkEndpoint accepts "scheme://host:port" (http, https, unix, unixs)
// and "host:port".
func checkEndpoint(p *problems, path, ep string) {
	if !strings.Contains(ep, "://") {
		if err := hostPort(ep, false); err != nil {
			p.add(path, ep, "want http://host:port, https://host:port or host:port: %v", err)
		}
		return
	}
	u, err := url.Parse(ep)
	if err != nil {
		p.add(path, ep, "not a URL: %v", unwrapURL(err))
		return
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			p.add(path, ep, "no host")
		} else if err := hostPort(u.Host, true); err != nil {
			p.add(path, ep, "%v", err)
		}
		if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.User != nil {
			p.add(path, ep, "want only scheme, host and port")
		}
	case "unix", "unixs":
		if u.Host == "" && u.Path == "" {
			p.add(path, ep, "no socket path")
		}
	default:
		p.add(path, ep, "unknown scheme %q: want http, https, unix or unixs", u.Scheme)
	}
}

// checkEmbeddedURL accepts "http://IP:port".
func checkEmbeddedURL(p *problems, path, s string) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		p.add(path, s, "not a URL: %v", unwrapURL(err))
	case u.Scheme != "http":
		p.add(path, s, "want http://IP:port (the embedded etcd serves plain HTTP)")
	case u.Path != "" && u.Path != "/" || u.User != nil || u.RawQuery != "":
		p.add(path, s, "want only http://IP:port")
	default:
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil {
			p.add(path, s, "want http://IP:port: %v", unwrapAddr(err))
			return
		}
		if _, err := netip.ParseAddr(host); err != nil {
			p.add(path, s, "host %q is not an IP address", host)
		}
		if err := checkPort(port, false); err != nil {
			p.add(path, s, "%v", err)
		}
	}
}

func (v VPPConfig) validate(p *problems) {
	switch {
	case v.Socket == "":
		p.add("vpp.socket", nil, "required")
	case !strings.HasPrefix(v.Socket, "/"):
		p.add("vpp.socket", v.Socket, "want an absolute path")
	case strings.HasSuffix(v.Socket, "/"):
		p.add("vpp.socket", v.Socket, "is a directory, want the socket's path")
	case len(v.Socket) > maxSocketPath:
		p.add("vpp.socket", v.Socket, "longer than %d bytes, the limit of a Unix socket path", maxSocketPath)
	case strings.ContainsRune(v.Socket, 0):
		p.add("vpp.socket", v.Socket, "contains a NUL byte")
	}
	positive(p, "vpp.connectTimeout", v.ConnectTimeout)
	nonNegative(p, "vpp.pendingInterfaceGrace", v.PendingInterfaceGrace)
	nonNegative(p, "vpp.holdMappings", v.HoldMappings)
	v.ReconnectBackoff.validate(p, "vpp.reconnectBackoff")
	switch v.Simulate {
	case SimulateAuto, SimulateAlways, SimulateNever:
	default:
		p.add("vpp.simulate", string(v.Simulate), "want auto, always or never")
	}
}

// checkHostPort accepts "host:port" and ":port" (port 0 picks a free one).
func checkHostPort(p *problems, path, s string) {
	if s == "" {
		p.add(path, nil, `required, e.g. ":9999"`)
		return
	}
	if err := hostPort(s, true); err != nil {
		p.add(path, s, `want host:port or :port: %v`, err)
	}
}

// hostPort checks "host:port"; the host may be empty when emptyHost.
func hostPort(s string, emptyHost bool) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return unwrapAddr(err)
	}
	if host == "" && !emptyHost {
		return fmt.Errorf("no host")
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("bad host %q", host)
	}
	return checkPort(port, !emptyHost)
}

// checkPort checks a port number; 0 only when !nonZero.
func checkPort(port string, nonZero bool) error {
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	if n == 0 && nonZero {
		return fmt.Errorf("port 0")
	}
	return nil
}

func (n NAT44Config) validate(p *problems) {
	if n.SessionLimit == 0 {
		p.add("nat44.sessionLimit", n.SessionLimit, "must be at least 1")
	}
	natTimeout(p, "nat44.timeouts.udp", n.Timeouts.UDP)
	natTimeout(p, "nat44.timeouts.tcpEstablished", n.Timeouts.TCPEstablished)
	natTimeout(p, "nat44.timeouts.tcpTransitory", n.Timeouts.TCPTransitory)
	natTimeout(p, "nat44.timeouts.icmp", n.Timeouts.ICMP)
	if n.ServiceLocalEndpointWeight == 0 {
		p.add("nat44.serviceLocalEndpointWeight", n.ServiceLocalEndpointWeight,
			"must be from 1 to 255: the probability of a backend on this node relative to a remote one (1); a weight of 0 would never pick a local backend")
	}
	if err := checkTagFormat(n.PodInterfaceTag); err != nil {
		p.add("nat44.podInterfaceTag", n.PodInterfaceTag, "%v", err)
	}
}

// natTimeout: VPP takes whole seconds in a u32.
func natTimeout(p *problems, path string, d Duration) {
	switch {
	case d <= 0:
		p.add(path, d, "must be positive")
	case d.Std()%time.Second != 0:
		p.add(path, d, "must be whole seconds")
	case d.Std()/time.Second > math.MaxUint32:
		p.add(path, d, "too long for VPP (at most %d seconds)", uint32(math.MaxUint32))
	}
}

// checkTagFormat requires exactly one {{namespace}} and one {{pod}}, no
// other placeholder, and between the two a character that no Kubernetes
// name holds, so that different pods never get the same tag. It takes
// printable UTF-8 only (a tag is text; the placeholders are found below with
// control characters standing in for them).
func checkTagFormat(f string) error {
	if f == "" {
		return fmt.Errorf("required, e.g. %q", TagNamespace+"/"+TagPod)
	}
	if !utf8.ValidString(f) {
		return fmt.Errorf("not valid UTF-8")
	}
	if i := strings.IndexFunc(f, func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 {
		return fmt.Errorf("unprintable character %q at byte %d", []rune(f[i:])[0], i)
	}
	rest := strings.NewReplacer(TagNamespace, "\x00", TagPod, "\x01").Replace(f)
	if i := strings.Index(rest, "{{"); i >= 0 {
		end := strings.Index(rest[i:], "}}")
		if end < 0 {
			return fmt.Errorf("unclosed {{")
		}
		return fmt.Errorf("unknown placeholder %s: want %s and %s", rest[i:i+end+2], TagNamespace, TagPod)
	}
	ns, pod := strings.Count(rest, "\x00"), strings.Count(rest, "\x01")
	if ns != 1 || pod != 1 {
		return fmt.Errorf("want %s and %s once each (found %d and %d)", TagNamespace, TagPod, ns, pod)
	}
	i, j := strings.IndexByte(rest, 0), strings.IndexByte(rest, 1)
	between := rest[min(i, j)+1 : max(i, j)]
	if !strings.ContainsFunc(between, func(r rune) bool { return !isNameRune(r) }) {
		return fmt.Errorf("between %s and %s put a character that Kubernetes names never hold, such as '/', or tags of different pods can collide", TagNamespace, TagPod)
	}
	return nil
}

// isNameRune reports whether r may appear in a Kubernetes object name.
func isNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.'
}

func (r RoutingConfig) validate(p *problems) {
	if r.MainVRFID == invalidVRF {
		p.add("routing.mainVRFID", r.MainVRFID, "is VPP's \"no VRF\"")
	}
	if r.PodVRFID == invalidVRF {
		p.add("routing.podVRFID", r.PodVRFID, "is VPP's \"no VRF\"")
	}
	if r.PodVRFID == r.MainVRFID {
		p.add("routing.podVRFID", r.PodVRFID, "must differ from routing.mainVRFID")
	}
	switch r.NodeToNodeTransport {
	case TransportVXLAN, TransportNoOverlay:
	default:
		p.add("routing.nodeToNodeTransport", string(r.NodeToNodeTransport), "want vxlan or nooverlay")
	}
	if r.HostInterconnectInterface == "" {
		p.add("routing.hostInterconnectInterface", nil, "required (the VPP name of the tap to the host, e.g. tap0)")
	}
	if r.VXLANBVIInterface == "" && r.NodeToNodeTransport == TransportVXLAN {
		p.add("routing.vxlanBVIInterface", nil, "required with the vxlan transport (the VPP name of the overlay's BVI, e.g. loop1)")
	}
	if r.HostInterconnectInterface != "" && r.HostInterconnectInterface == r.VXLANBVIInterface {
		p.add("routing.vxlanBVIInterface", r.VXLANBVIInterface, "is also routing.hostInterconnectInterface")
	}
}

func (c IPAMConfig) validate(p *problems) {
	type rng struct {
		path string
		pfx  netip.Prefix
	}
	ranges := []rng{
		{"ipam.podSubnetCIDR", c.PodSubnetCIDR},
		{"ipam.vppHostSubnetCIDR", c.VPPHostSubnetCIDR},
		{"ipam.nodeInterconnectCIDR", c.NodeInterconnectCIDR},
		{"ipam.vxlanCIDR", c.VXLANCIDR},
		{"ipam.serviceCIDR", c.ServiceCIDR},
	}
	var good []rng
	for _, r := range ranges {
		if checkRange(p, r.path, r.pfx) {
			good = append(good, r)
		}
	}
	for i, a := range good {
		for _, b := range good[:i] {
			if a.pfx.Overlaps(b.pfx) {
				p.add(a.path, a.pfx, "overlaps %s (%s)", b.path, b.pfx)
			}
		}
	}
	nodePrefix(p, "ipam.podSubnetNodePrefixLength", c.PodSubnetNodePrefixLength, "ipam.podSubnetCIDR", c.PodSubnetCIDR, 29)
	nodePrefix(p, "ipam.vppHostSubnetNodePrefixLength", c.VPPHostSubnetNodePrefixLength, "ipam.vppHostSubnetCIDR", c.VPPHostSubnetCIDR, 30)
	if c.DefaultGateway.IsValid() {
		checkUnicast(p, "ipam.defaultGateway", c.DefaultGateway)
	}
	pod6 := c.PodSubnetCIDRv6.IsValid() && checkRange6(p, "ipam.podSubnetCIDRv6", c.PodSubnetCIDRv6)
	svc6 := c.ServiceCIDRv6.IsValid() && checkRange6(p, "ipam.serviceCIDRv6", c.ServiceCIDRv6)
	if pod6 && svc6 && c.ServiceCIDRv6.Overlaps(c.PodSubnetCIDRv6) {
		p.add("ipam.serviceCIDRv6", c.ServiceCIDRv6, "overlaps ipam.podSubnetCIDRv6 (%s)", c.PodSubnetCIDRv6)
	}
}

// checkRange6 requires a global or unique-local IPv6 prefix without host
// bits.
func checkRange6(p *problems, path string, pfx netip.Prefix) bool {
	a := pfx.Addr()
	switch {
	case !a.Is6() || a.Is4In6():
		p.add(path, pfx, "must be IPv6, e.g. fd00:10:1::/56")
	case pfx.Masked() != pfx:
		p.add(path, pfx, "has host bits set (did you mean %s?)", pfx.Masked())
	case pfx.Bits() < 8, a.IsMulticast(), a.IsLinkLocalUnicast(), a.IsLoopback(), a.IsUnspecified():
		p.add(path, pfx, "not a unicast range (want a global or unique-local prefix)")
	default:
		return true
	}
	return false
}

// checkRange requires an IPv4 prefix without host bits.
func checkRange(p *problems, path string, pfx netip.Prefix) bool {
	switch {
	case !pfx.IsValid():
		p.add(path, nil, "required, e.g. 10.1.0.0/16")
	case !pfx.Addr().Is4():
		p.add(path, pfx, "must be IPv4 (services are rendered by NAT44)")
	case pfx.Masked() != pfx:
		p.add(path, pfx, "has host bits set (did you mean %s?)", pfx.Masked())
	default:
		return true
	}
	return false
}

// nodePrefix checks a per-node prefix length against its range.
func nodePrefix(p *problems, path string, n int, rangePath string, rng netip.Prefix, longest int) {
	switch {
	case n > longest:
		p.add(path, n, "at most %d, or a node's subnet is too small", longest)
	case rng.IsValid() && n <= rng.Bits():
		p.add(path, n, "must be longer than %s's /%d", rangePath, rng.Bits())
	case n < 1:
		p.add(path, n, "must be from 1 to %d", longest)
	}
}

// checkUnicast requires a usable IPv4 unicast address.
func checkUnicast(p *problems, path string, a netip.Addr) {
	switch {
	case !a.Is4():
		p.add(path, a, "must be IPv4")
	case a.IsUnspecified(), a.IsMulticast(), a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		p.add(path, a, "not a unicast address")
	}
}

func (n NodeSyncConfig) validate(p *problems) {
	if n.StateFile == "" {
		p.add("nodeSync.stateFile", nil, "required")
	} else if strings.HasSuffix(n.StateFile, "/") {
		p.add("nodeSync.stateFile", n.StateFile, "is a directory, want a file path")
	}
	positive(p, "nodeSync.claimTimeout", n.ClaimTimeout)
}

func (o NodeOverride) validate(p *problems, path string) {
	if o.NodeName == "" {
		p.add(path+".nodeName", nil, "required")
	} else {
		checkNodeName(p, path+".nodeName", o.NodeName)
	}
	names := map[string]string{}
	if o.MainInterface != nil {
		o.MainInterface.validate(p, path+".mainInterface", names)
		if o.MainInterface.UseDHCP && o.Gateway.IsValid() {
			p.add(path+".gateway", o.Gateway, "must be empty when mainInterface.useDHCP is true (DHCP supplies it)")
		}
	}
	for i, ifc := range o.OtherInterfaces {
		ifc.validate(p, fmt.Sprintf("%s.otherInterfaces[%d]", path, i), names)
	}
	if o.Gateway.IsValid() {
		checkUnicast(p, path+".gateway", o.Gateway)
		if o.MainInterface != nil && o.MainInterface.IPCIDR.Addr() == o.Gateway {
			p.add(path+".gateway", o.Gateway, "is mainInterface's own address")
		}
	}
}

// validate checks one interface; names maps the interface names seen on
// the node to their paths.
func (i InterfaceConfig) validate(p *problems, path string, names map[string]string) {
	if i.Name == "" {
		p.add(path+".name", nil, "required")
	} else if prev, dup := names[i.Name]; dup {
		p.add(path+".name", i.Name, "duplicate of %s.name", prev)
	} else {
		names[i.Name] = path
	}
	if i.IPv6CIDR.IsValid() {
		checkInterface6(p, path+".ipv6CIDR", i.IPv6CIDR)
	}
	if !i.IPCIDR.IsValid() {
		return
	}
	a := i.IPCIDR.Addr()
	switch {
	case i.UseDHCP:
		p.add(path+".ipCIDR", i.IPCIDR, "must be empty when useDHCP is true")
	case !a.Is4():
		p.add(path+".ipCIDR", i.IPCIDR, "must be IPv4")
	case i.IPCIDR.Bits() < 31 && a == i.IPCIDR.Masked().Addr():
		p.add(path+".ipCIDR", i.IPCIDR, "is the subnet's network address, want a host address such as %s", i.IPCIDR.Masked().Addr().Next())
	case i.IPCIDR.Bits() < 31 && a == lastAddr(i.IPCIDR):
		p.add(path+".ipCIDR", i.IPCIDR, "is the subnet's broadcast address")
	case a.IsUnspecified(), a.IsMulticast():
		p.add(path+".ipCIDR", i.IPCIDR, "not a unicast address")
	}
}

// checkInterface6 requires an interface's IPv6 host address: global or
// unique-local unicast, not a subnet's Subnet-Router anycast address.
func checkInterface6(p *problems, path string, pfx netip.Prefix) {
	a := pfx.Addr()
	switch {
	case !a.Is6() || a.Is4In6():
		p.add(path, pfx, "must be IPv6, e.g. 2001:db8:16::1/64")
	case a.IsUnspecified(), a.IsLoopback(), a.IsMulticast():
		p.add(path, pfx, "not a unicast address")
	case a.IsLinkLocalUnicast():
		p.add(path, pfx, "is link-local, want a global or unique-local address")
	case pfx.Bits() < 127 && a == pfx.Masked().Addr():
		p.add(path, pfx, "is the subnet's Subnet-Router anycast address, want a host address such as %s", a.Next())
	}
}

// lastAddr returns the last address of IPv4 prefix p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v |= uint32(math.MaxUint32) >> p.Bits()
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// checkNodeName requires a Kubernetes node name (an RFC 1123 DNS
// subdomain).
// maxClusterName bounds clusterName: with "contiv:" and "/" it leaves VPP's
// 63-byte tag 23 bytes of the node name before the mark is shortened.
const maxClusterName = 32

// checkClusterName checks a cluster name: 1 to 32 lowercase letters,
// digits, '-' and '.', starting and ending with a letter or digit.
func checkClusterName(p *problems, path, s string) {
	const want = "want 1 to %d lowercase letters, digits, '-' and '.', starting and ending with a letter or digit (it names this cluster in the owner mark on VPP)"
	ok := s != "" && len(s) <= maxClusterName
	for i, r := range s {
		alnum := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		if !alnum && (r != '-' && r != '.' || i == 0 || i == len(s)-1) {
			ok = false
		}
	}
	if !ok {
		p.add(path, s, want, maxClusterName)
	}
}

func checkNodeName(p *problems, path, s string) {
	if msg := dnsSubdomain(s); msg != "" {
		p.add(path, s, "not a Kubernetes node name: %s", msg)
	}
}

// dnsSubdomain says what keeps s from being an RFC 1123 subdomain; "" if
// nothing does.
func dnsSubdomain(s string) string {
	if len(s) > 253 {
		return "longer than 253 characters"
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" {
			return "empty label"
		}
		if len(label) > 63 {
			return "a label is longer than 63 characters"
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return "only lowercase letters, digits, '-' and '.' are allowed"
			}
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return "must start and end with a letter or digit"
		}
	}
	return ""
}

func positive(p *problems, path string, d Duration) {
	if d <= 0 {
		p.add(path, d, "must be positive")
	}
}

func nonNegative(p *problems, path string, d Duration) {
	if d < 0 {
		p.add(path, d, "must not be negative")
	}
}

// unwrapURL keeps the reason of a *url.Error.
func unwrapURL(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// unwrapAddr keeps the reason of a *net.AddrError.
func unwrapAddr(err error) error {
	if ae, ok := err.(*net.AddrError); ok {
		return fmt.Errorf("%s", ae.Err)
	}
	return err
}
