package contivconf

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzParse feeds file bytes to Parse and, when Parse accepts them, to
// Resolve. A refused file gets ErrInvalid errors each naming a field (or
// the document); an accepted configuration survives being written back as
// YAML and parsed again, and Resolve agrees with Parse followed by Validate.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"agent.yaml", "agent-nodes.yaml"} {
		if b, err := os.ReadFile(filepath.Join("..", "deploy", "examples", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("nodeName: node-1\nipam:\n  podSubnetCIDR: 10.1.0.0/16\n  podSubnetNodePrefixLength: 24\n"))
	f.Add([]byte("nat44:\n  podInterfaceTag: \"{{namespace}}/{{pod}}\"\n  timeouts: {udp: 5m, tcpEstablished: 2h}\n"))
	f.Add([]byte("nodeConfig:\n- nodeName: n1\n  mainInterface: {name: eth0, ipCIDR: 192.168.16.1/24}\n  gateway: 192.168.16.254\n"))
	f.Add([]byte("vpp: {simulate: auto}\nlog: {level: debug, format: json}\n"))
	f.Add([]byte("nodeNme: a\n---\nx: 1\n"))
	f.Add([]byte("ipam: {podSubnetCIDR: 10.1.0.0/33}\n"))
	f.Add([]byte(""))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			checkErrs(t, "Parse", err)
			return // Resolve reads the file with Parse
		}
		roundTrip(t, c)
		path := filepath.Join(dir, "agent.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		hostname := func() (string, error) { return "fuzz-node", nil }
		rc, rerr := Resolve(Sources{File: path, Hostname: hostname})
		if rerr != nil {
			checkErrs(t, "Resolve", rerr)
		}
		if c.NodeName == "" {
			c.NodeName = "fuzz-node"
		}
		verr := c.Validate()
		if verr != nil {
			checkErrs(t, "Validate", verr)
		}
		switch {
		case (verr == nil) != (rerr == nil):
			t.Fatalf("Validate says %v, Resolve says %v", verr, rerr)
		case rerr == nil && !reflect.DeepEqual(c, rc):
			t.Fatalf("Resolve gives\n%+v\nParse gives\n%+v", rc, c)
		}
	})
}

// checkErrs asserts that err is about the configuration's content and that
// every problem it joins names its field.
func checkErrs(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("%s: error %q does not match ErrInvalid", what, err)
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var fe *FieldError
		if errors.As(e, &fe) {
			if fe.Path == "" || fe.Msg == "" {
				t.Fatalf("%s: problem without a field or a message: %#v", what, fe)
			}
			continue
		}
		if strings.TrimSpace(e.Error()) == "" {
			t.Fatalf("%s: empty error", what)
		}
	}
}

// roundTrip writes c as YAML and parses it again: the result must be c.
func roundTrip(t *testing.T, c Config) {
	t.Helper()
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatalf("accepted configuration does not marshal: %v", err)
	}
	c2, err := Parse(out)
	if err != nil {
		t.Fatalf("own output refused: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(c, c2) {
		t.Fatalf("round trip changed the configuration:\n%+v\n%+v\nvia\n%s", c, c2, out)
	}
}
