package contivconf

import (
	"bytes"
	"log/slog"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestForNode(t *testing.T) {
	pfx, addr := netip.MustParsePrefix, netip.MustParseAddr
	no := false
	c := Defaults()
	c.IPAM.DefaultGateway = addr("192.168.16.100")
	c.NodeConfig = []NodeOverride{
		{
			NodeName:        "static",
			MainInterface:   &InterfaceConfig{Name: "GigabitEthernet0/8/0", IPCIDR: pfx("192.168.16.1/24"), IPv6CIDR: pfx("2001:db8:16::1/64")},
			OtherInterfaces: []InterfaceConfig{{Name: "GigabitEthernet0/9/0", UseDHCP: true}},
			Gateway:         addr("192.168.16.254"),
		},
		{NodeName: "dhcp", MainInterface: &InterfaceConfig{Name: "eth0", UseDHCP: true}, NATExternalTraffic: &no},
		{NodeName: "nat-only", NATExternalTraffic: &no, HostInterconnectInterface: "tap3", VXLANBVIInterface: "bvi2"},
	}
	tests := []struct {
		node string
		want NodeConfig
	}{
		{"other", NodeConfig{NodeName: "other", Gateway: addr("192.168.16.100"), NATExternalTraffic: true,
			HostInterconnectInterface: "tap0", VXLANBVIInterface: "loop1"}},
		{"static", NodeConfig{
			NodeName:           "static",
			MainInterface:      InterfaceConfig{Name: "GigabitEthernet0/8/0", IPCIDR: pfx("192.168.16.1/24"), IPv6CIDR: pfx("2001:db8:16::1/64")},
			OtherInterfaces:    []InterfaceConfig{{Name: "GigabitEthernet0/9/0", UseDHCP: true}},
			Gateway:            addr("192.168.16.254"),
			NATExternalTraffic: true,

			HostInterconnectInterface: "tap0", VXLANBVIInterface: "loop1",
		}},
		{"dhcp", NodeConfig{NodeName: "dhcp", MainInterface: InterfaceConfig{Name: "eth0", UseDHCP: true},
			HostInterconnectInterface: "tap0", VXLANBVIInterface: "loop1"}},
		{"nat-only", NodeConfig{NodeName: "nat-only", Gateway: addr("192.168.16.100"),
			HostInterconnectInterface: "tap3", VXLANBVIInterface: "bvi2"}},
	}
	for _, tt := range tests {
		t.Run(tt.node, func(t *testing.T) {
			if got := c.ForNode(tt.node); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ForNode(%q)\n got  %+v\n want %+v", tt.node, got, tt.want)
			}
		})
	}
	t.Run("shares no memory", func(t *testing.T) {
		n := c.ForNode("static")
		n.OtherInterfaces[0].Name = "changed"
		n.MainInterface.Name = "changed"
		if c.NodeConfig[0].OtherInterfaces[0].Name != "GigabitEthernet0/9/0" || c.NodeConfig[0].MainInterface.Name != "GigabitEthernet0/8/0" {
			t.Error("changing ForNode's result changed the config")
		}
	})
}

func TestInterfaceTag(t *testing.T) {
	n := Defaults().NAT44
	if got := n.InterfaceTag("default", "web-0"); got != "default/web-0" {
		t.Errorf("default format: %q", got)
	}
	n.PodInterfaceTag = "pod:{{pod}}@{{namespace}}"
	if got := n.InterfaceTag("kube-system", "dns"); got != "pod:dns@kube-system" {
		t.Errorf("custom format: %q", got)
	}
}

func TestSimulated(t *testing.T) {
	tests := []struct {
		mode    SimulateMode
		present bool
		want    bool
	}{
		{SimulateAuto, false, true},
		{SimulateAuto, true, false},
		{SimulateAlways, true, true},
		{SimulateNever, false, false},
	}
	for _, tt := range tests {
		if got := (VPPConfig{Simulate: tt.mode}).Simulated(tt.present); got != tt.want {
			t.Errorf("%s with socket present=%v: %v, want %v", tt.mode, tt.present, got, tt.want)
		}
	}
}

func TestLogHandler(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(LogConfig{Level: LogLevelWarn, Format: LogFormatJSON}.NewHandler(&buf))
	l.Info("hidden")
	l.Warn("shown", "k", "v")
	if out := buf.String(); strings.Contains(out, "hidden") || !strings.Contains(out, `"msg":"shown"`) {
		t.Errorf("JSON at warn: %q", out)
	}
	buf.Reset()
	l = slog.New(LogConfig{Level: LogLevelDebug, Format: LogFormatText}.NewHandler(&buf))
	l.Debug("detail")
	if out := buf.String(); !strings.Contains(out, "msg=detail") {
		t.Errorf("text at debug: %q", out)
	}
	for lvl, want := range map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError} {
		if got := (LogConfig{Level: lvl}).SlogLevel(); got != want {
			t.Errorf("SlogLevel(%s) = %v", lvl, got)
		}
	}
}

func TestRedacted(t *testing.T) {
	c := Defaults()
	c.Etcd.Username, c.Etcd.Password = "u", "secret"
	c.Etcd.Endpoints = []string{"a:1"}
	r := c.Redacted()
	if r.Etcd.Password == "secret" || r.Etcd.Username != "u" {
		t.Errorf("Redacted etcd = %+v", r.Etcd)
	}
	if c.Etcd.Password != "secret" {
		t.Error("Redacted changed the original")
	}
	r.Etcd.Endpoints[0] = "b:1"
	if c.Etcd.Endpoints[0] != "a:1" {
		t.Error("Redacted shares endpoints with the original")
	}
	if d := Defaults().Redacted(); !reflect.DeepEqual(d, Defaults()) {
		t.Error("Redacted changed a config without a password")
	}
}
