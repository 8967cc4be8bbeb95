package contivconf

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readers says, for every option of the configuration file, where the code
// reads it: a file of the module (from its root) and a regular expression
// that must match there. An option nothing reads is a promise the program
// does not keep: TestEveryOptionIsRead fails for it, and for an option
// missing from this table.
var readers = map[string]struct{ file, re string }{
	"nodeName":                           {"agent/agent.go", `cfg\.NodeName`},
	"clusterName":                        {"agent/owner.go", `cfg\.ClusterName`},
	"renderer":                           {"agent/renderers.go", `cfg\.Renderer`},
	"log.level":                          {"contivconf/config.go", `l\.Level`},
	"log.format":                         {"contivconf/config.go", `l\.Format == LogFormatJSON`},
	"controller.minBatchInterval":        {"agent/agent.go", `Controller\.MinBatchInterval`},
	"controller.healingBackoff.initial":  {"agent/agent.go", `HealingBackoff\.Initial`},
	"controller.healingBackoff.max":      {"agent/agent.go", `HealingBackoff\.Max`},
	"controller.resyncInterval":          {"agent/agent.go", `Controller\.ResyncInterval`},
	"controller.startupTimeout":          {"agent/agent.go", `Controller\.StartupTimeout`},
	"controller.batchHold":               {"agent/agent.go", `Controller\.BatchHold`},
	"controller.historyCheck":            {"agent/agent.go", `Controller\.HistoryCheck`},
	"controller.startupHeapMiB":          {"agent/agent.go", `Controller\.StartupHeapMiB`},
	"etcd.endpoints":                     {"agent/agent.go", `c\.Endpoints`},
	"etcd.embedded.enabled":              {"contivconf/config.go", `e\.Embedded\.Enabled`},
	"etcd.embedded.dataDir":              {"agent/agent.go", `Embedded\.DataDir`},
	"etcd.embedded.clientURL":            {"agent/agent.go", `Embedded\.ClientURL`},
	"etcd.dialTimeout":                   {"agent/agent.go", `c\.DialTimeout`},
	"etcd.requestTimeout":                {"agent/agent.go", `Etcd\.RequestTimeout`},
	"etcd.tls.caFile":                    {"agent/agent.go", `TLS\.CAFile`},
	"etcd.tls.certFile":                  {"agent/agent.go", `TLS\.CertFile`},
	"etcd.tls.keyFile":                   {"agent/agent.go", `TLS\.KeyFile`},
	"etcd.username":                      {"agent/agent.go", `c\.Username`},
	"etcd.password":                      {"agent/agent.go", `c\.Password`},
	"vpp.socket":                         {"agent/vppwire.go", `VPP\.Socket`},
	"vpp.connectTimeout":                 {"agent/vppwire.go", `VPP\.ConnectTimeout`},
	"vpp.reconnectBackoff.initial":       {"agent/vppwire.go", `ReconnectBackoff\.Initial`},
	"vpp.reconnectBackoff.max":           {"agent/vppwire.go", `ReconnectBackoff\.Max`},
	"vpp.simulate":                       {"cmd/contiv-agent/main.go", `cfg\.VPP\.Simulated\(`},
	"vpp.pendingInterfaceGrace":          {"agent/agent.go", `VPP\.PendingInterfaceGrace`},
	"vpp.holdMappings":                   {"agent/nodepipeline/node.go", `VPP\.HoldMappings`},
	"vpp.takeOver":                       {"agent/owner.go", `VPP\.TakeOver`},
	"vpp.allowUnsupported":               {"agent/vppwire.go", `VPP\.AllowUnsupported`},
	"cni.enabled":                        {"agent/pods.go", `c\.Enabled`},
	"cni.socket":                         {"agent/pods.go", `CNI\.Socket`},
	"cni.stateDir":                       {"agent/pods.go", `c\.StateDir`},
	"cni.podInterface":                   {"agent/pods.go", `c\.PodInterface`},
	"cni.deadline":                       {"agent/pods.go", `CNI\.Deadline`},
	"http.address":                       {"agent/agent.go", `HTTP\.Address`},
	"http.proxyHealthAddress":            {"agent/agent.go", `HTTP\.ProxyHealthAddress`},
	"http.serviceHealthAddress":          {"agent/agent.go", `HTTP\.ServiceHealthAddress`},
	"nat44.sessionLimit":                 {"agent/nodepipeline/node.go", `NAT44\.SessionLimit`},
	"nat44.timeouts.udp":                 {"agent/nodepipeline/node.go", `t\.UDP`},
	"nat44.timeouts.tcpEstablished":      {"agent/nodepipeline/node.go", `t\.TCPEstablished`},
	"nat44.timeouts.tcpTransitory":       {"agent/nodepipeline/node.go", `t\.TCPTransitory`},
	"nat44.timeouts.icmp":                {"agent/nodepipeline/node.go", `t\.ICMP`},
	"nat44.serviceLocalEndpointWeight":   {"agent/nodepipeline/node.go", `NAT44\.ServiceLocalEndpointWeight`},
	"nat44.natExternalTraffic":           {"contivconf/config.go", `c\.NAT44\.NATExternalTraffic`},
	"nat44.externalIPTenantVRF":          {"agent/nodepipeline/node.go", `NAT44\.ExternalIPTenantVRF`},
	"nat44.podInterfaceTag":              {"agent/agent.go", `NAT44\.PodInterfaceTag`},
	"routing.mainVRFID":                  {"agent/nodepipeline/node.go", `Routing\.MainVRFID`},
	"routing.podVRFID":                   {"agent/agent.go", `Routing\.PodVRFID`},
	"routing.nodeToNodeTransport":        {"agent/nodepipeline/node.go", `Routing\.NodeToNodeTransport`},
	"routing.hostInterconnectInterface":  {"contivconf/config.go", `c\.Routing\.HostInterconnectInterface`},
	"routing.vxlanBVIInterface":          {"contivconf/config.go", `c\.Routing\.VXLANBVIInterface`},
	"ipam.podSubnetCIDR":                 {"agent/nodepipeline/node.go", `c\.PodSubnetCIDR`},
	"ipam.podSubnetNodePrefixLength":     {"agent/nodepipeline/node.go", `c\.PodSubnetNodePrefixLength`},
	"ipam.vppHostSubnetCIDR":             {"agent/nodepipeline/node.go", `c\.VPPHostSubnetCIDR`},
	"ipam.vppHostSubnetNodePrefixLength": {"agent/nodepipeline/node.go", `c\.VPPHostSubnetNodePrefixLength`},
	"ipam.nodeInterconnectCIDR":          {"agent/nodepipeline/node.go", `c\.NodeInterconnectCIDR`},
	"ipam.vxlanCIDR":                     {"agent/nodepipeline/node.go", `c\.VXLANCIDR`},
	"ipam.serviceCIDR":                   {"agent/nodepipeline/node.go", `c\.ServiceCIDR`},
	"ipam.defaultGateway":                {"contivconf/config.go", `c\.IPAM\.DefaultGateway`},
	"ipam.podSubnetCIDRv6":               {"agent/nodepipeline/node.go", `IPAM\.PodSubnetCIDRv6`},
	"ipam.serviceCIDRv6":                 {"agent/nodepipeline/node.go", `IPAM\.ServiceCIDRv6`},
	"nodeSync.stateFile":                 {"agent/agent.go", `NodeSync\.StateFile`},
	"nodeSync.claimTimeout":              {"agent/agent.go", `NodeSync\.ClaimTimeout`},
	"nodeConfig":                         {"contivconf/config.go", `c\.NodeConfig`},
}

// leafPaths lists the file paths of t's options; a slice of structs
// (nodeConfig) counts as one option, checked by the code that merges it.
func leafPaths(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		if f.Type.Kind() == reflect.Struct && !isLeaf(f.Type) {
			out = append(out, leafPaths(f.Type, path)...)
			continue
		}
		out = append(out, path)
	}
	return out
}

func TestEveryOptionIsRead(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	paths := leafPaths(reflect.TypeFor[Config](), "")
	for _, p := range paths {
		r, ok := readers[p]
		if !ok {
			t.Errorf("option %s: not in the readers table (say where the code reads it)", p)
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, r.file))
		if err != nil {
			t.Errorf("option %s: %v", p, err)
			continue
		}
		if !regexp.MustCompile(r.re).Match(src) {
			t.Errorf("option %s: %s does not read it (no match for %q)", p, r.file, r.re)
		}
	}
	for p := range readers {
		if !slices.Contains(paths, p) {
			t.Errorf("readers table names %s, which is no option", p)
		}
	}
}
