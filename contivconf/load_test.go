package contivconf

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// wantErrs asserts that err matches ErrInvalid and that its text holds
// every one of wants.
func wantErrs(t *testing.T, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", wants)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("error %q does not match ErrInvalid", err)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\n does not contain %q", err, w)
		}
	}
}

func TestParseUnknownField(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"top level", "nodeNme: a", []string{"nodeNme: unknown field (did you mean nodeName?)"}},
		{"nested typo", "ipam:\n  podSubnetCIRD: 10.1.0.0/16", []string{"ipam.podSubnetCIRD: unknown field (did you mean ipam.podSubnetCIDR?)"}},
		{"wrong case", "vpp:\n  Socket: /x", []string{"vpp.Socket: unknown field (did you mean vpp.socket?)"}},
		{"wrong section", "ipam:\n  mainVRFID: 3", []string{"ipam.mainVRFID: unknown field (mainVRFID is a field of routing)"}},
		{"no suggestion", "colour: blue", []string{"colour: unknown field"}},
		// Found by FuzzParse: the error of an empty key named no field.
		{"empty key", "'': 1", []string{`"": unknown field`}},
		{"nested empty key", "ipam:\n  ! : x", []string{`ipam."": unknown field`}},
		{"in a list element", "nodeConfig:\n- nodeName: a\n  mainInterface:\n    nam: eth0", []string{"nodeConfig[0].mainInterface.nam: unknown field (did you mean nodeConfig[0].mainInterface.name?)"}},
		{"deep", "nat44:\n  timeouts:\n    tcp: 5m", []string{"nat44.timeouts.tcp: unknown field"}},
		{"all of them", "a: 1\nlog:\n  b: 2\n  c: 3", []string{"a: unknown field", "log.b: unknown field", "log.c: unknown field"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			wantErrs(t, err, tt.want...)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("no FieldError in %v", err)
			}
		})
	}
}

func TestParseWrongType(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"string for int", "ipam:\n  podSubnetNodePrefixLength: wide", `ipam.podSubnetNodePrefixLength: invalid value "wide": want an integer from`},
		{"uint overflow", "routing:\n  podVRFID: 5000000000", `routing.podVRFID: invalid value 5000000000: want an integer from 0 to 4294967295`},
		{"negative uint", "nat44:\n  sessionLimit: -1", `nat44.sessionLimit: invalid value -1: want an integer from 0 to 4294967295`},
		{"weight over a byte", "nat44:\n  serviceLocalEndpointWeight: 300", `nat44.serviceLocalEndpointWeight: invalid value 300: want an integer from 1 to 255 (the weight of a backend on this node; a remote one weighs 1)`},
		{"fraction for int", "ipam:\n  podSubnetNodePrefixLength: 24.5", `ipam.podSubnetNodePrefixLength: invalid value 24.5: want an integer`},
		{"number for string", "nodeName: 42", `nodeName: invalid value 42: want a string (quote it)`},
		{"string for bool", "nat44:\n  natExternalTraffic: maybe", `nat44.natExternalTraffic: invalid value "maybe": want true or false`},
		{"bad prefix", "ipam:\n  podSubnetCIDR: 10.1.0.0/33", `ipam.podSubnetCIDR: invalid value "10.1.0.0/33": want a CIDR prefix like 10.1.0.0/16: prefix length out of range`},
		{"address for prefix", "ipam:\n  serviceCIDR: 10.96.0.1", `ipam.serviceCIDR: invalid value "10.96.0.1": want a CIDR prefix`},
		{"number for prefix", "ipam:\n  vxlanCIDR: 7", `ipam.vxlanCIDR: invalid value 7: want a CIDR prefix`},
		{"bad address", "ipam:\n  defaultGateway: 10.0.0.256", `ipam.defaultGateway: invalid value "10.0.0.256": want an IP address`},
		{"bad duration", "controller:\n  resyncInterval: 10 minutes", `controller.resyncInterval: invalid value "10 minutes": want a duration like`},
		{"bare number duration", "controller:\n  resyncInterval: 600", `controller.resyncInterval: invalid value 600: a bare number has no unit: write it like "600s"`},
		{"bool duration", "etcd:\n  dialTimeout: true", `etcd.dialTimeout: invalid value true: want a duration`},
		{"scalar for list", "etcd:\n  endpoints: http://a:2379", `etcd.endpoints: invalid value "http://a:2379": want a list`},
		{"scalar for section", "ipam: 10.1.0.0/16", `ipam: invalid value "10.1.0.0/16": want a mapping of podSubnetCIDR,`},
		{"list for section", "log: [info]", `log: invalid value ["info"]: want a mapping`},
		{"bad list element", "etcd:\n  endpoints: [a:1, 2]", `etcd.endpoints[1]: invalid value 2: want a string`},
		{"override element", "nodeConfig:\n- nodeName: a\n  mainInterface:\n    ipCIDR: 1.2.3.4/40", `nodeConfig[0].mainInterface.ipCIDR: invalid value "1.2.3.4/40"`},
		{"bad IPv6 prefix", "nodeConfig:\n- nodeName: a\n  mainInterface:\n    ipv6CIDR: 2001:db8::1/129", `nodeConfig[0].mainInterface.ipv6CIDR: invalid value "2001:db8::1/129"`},
		{"pointer bool", "nodeConfig:\n- nodeName: a\n  natExternalTraffic: 1", `nodeConfig[0].natExternalTraffic: invalid value 1: want true or false`},
		{"long bad value", "nodeName: [" + strings.Repeat("1,", 60) + "1]", `nodeName: invalid value [1,1,1,`},
		{"top level list", "- a\n- b", `(top level): invalid value ["a","b"]: want a mapping`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			wantErrs(t, err, tt.want)
		})
	}
}

func TestParseLongValue(t *testing.T) {
	long := "/" + strings.Repeat("a", 300)
	c, err := Parse([]byte("etcd:\n  tls:\n    caFile: " + long))
	if err != nil || c.Etcd.TLS.CAFile != long {
		t.Errorf("Parse = %q, %v; want the long path", c.Etcd.TLS.CAFile, err)
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	_, err := Parse([]byte("nodeNam: x\nvpp:\n  connectTimeout: soon\nipam:\n  serviceCIDR: nope\n  podSubnetNodePrefixLength: x\n"))
	wantErrs(t, err, "nodeNam: unknown field", "vpp.connectTimeout", "ipam.serviceCIDR", "ipam.podSubnetNodePrefixLength")
	if n := len(strings.Split(err.Error(), "\n")); n != 4 {
		t.Errorf("got %d lines, want 4:\n%v", n, err)
	}
}

func TestParseSyntax(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"bad indentation", "log:\n  level: info\n format: json", "did not find expected key"},
		{"duplicate key", "log:\n  level: info\n  level: debug", `"level" already set`},
		{"tab", "log:\n\tlevel: info", "line 2"},
		{"two documents", "---\nlog:\n  level: info\n---\nnodeName: a\n", "(document): line 4 starts a second YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			wantErrs(t, err, tt.want)
		})
	}
}

func TestParseKeepsDefaults(t *testing.T) {
	for _, doc := range []string{"", "# nothing\n", "---\n# only a start\n", "--- {}\n", "log:\n", "log: null\n", "etcd:\n  endpoints: []\nnodeConfig: []\n", "{}"} {
		c, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("Parse(%q): %v", doc, err)
		}
		if !reflect.DeepEqual(c, Defaults()) {
			t.Errorf("Parse(%q) = %+v, want the defaults", doc, c)
		}
	}
}

func TestParseSetsOnlyWhatIsWritten(t *testing.T) {
	c, err := Parse([]byte(`
nodeName: node-7
controller:
  healingBackoff:
    max: 30s
  minBatchInterval: 0
etcd:
  endpoints: [10.0.0.1:2379, "https://10.0.0.2:2379"]
ipam:
  podSubnetCIDR: 10.128.0.0/14
  defaultGateway: 192.168.16.1
nodeConfig:
- nodeName: node-7
  natExternalTraffic: false
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.NodeName = "node-7"
	want.Controller.HealingBackoff.Max = Duration(30 * time.Second)
	want.Etcd.Endpoints = []string{"10.0.0.1:2379", "https://10.0.0.2:2379"}
	want.IPAM.PodSubnetCIDR = netip.MustParsePrefix("10.128.0.0/14")
	want.IPAM.DefaultGateway = netip.MustParseAddr("192.168.16.1")
	no := false
	want.NodeConfig = []NodeOverride{{NodeName: "node-7", NATExternalTraffic: &no}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	t.Run("missing file", func(t *testing.T) {
		_, err := Load(filepath.Join(dir, "absent.yaml"))
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("got %v, want not-exist", err)
		}
		if errors.Is(err, ErrInvalid) {
			t.Errorf("a missing file is not invalid content: %v", err)
		}
	})
	t.Run("error names the file", func(t *testing.T) {
		p := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(p, []byte("vpp:\n  sockt: /x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		wantErrs(t, err, p, "vpp.sockt: unknown field")
	})
	t.Run("oversized", func(t *testing.T) {
		p := filepath.Join(dir, "big.yaml")
		big := "# " + strings.Repeat("x", MaxFileSize) + "\n"
		if err := os.WriteFile(p, []byte(big), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		wantErrs(t, err, "larger than")
	})
	t.Run("good", func(t *testing.T) {
		p := filepath.Join(dir, "good.yaml")
		if err := os.WriteFile(p, []byte("nodeName: n1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(p)
		if err != nil || c.NodeName != "n1" {
			t.Errorf("Load = %q, %v; want n1", c.NodeName, err)
		}
	})
}

func TestDurationJSON(t *testing.T) {
	d := Duration(90 * time.Minute)
	b, err := d.MarshalJSON()
	if err != nil || string(b) != `"1h30m0s"` {
		t.Fatalf("MarshalJSON = %s, %v", b, err)
	}
	var back Duration
	if err := back.UnmarshalJSON(b); err != nil || back != d {
		t.Errorf("round trip = %v, %v; want %v", back, err, d)
	}
	if err := back.UnmarshalJSON([]byte("0")); err != nil || back != 0 {
		t.Errorf("0 = %v, %v; want 0", back, err)
	}
	if back.Std() != 0 {
		t.Errorf("Std = %v", back.Std())
	}
}
