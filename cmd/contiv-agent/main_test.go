package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRefusesMalformedConfig(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		file string
		args []string
		want string
	}{
		"unknown field": {file: "ipam:\n  podSubnetCIRD: 10.1.0.0/16\n", want: "ipam.podSubnetCIRD: unknown field"},
		"bad value":     {file: "nat44:\n  serviceLocalEndpointWeight: 0\n", want: "nat44.serviceLocalEndpointWeight"},
		"bad flag":      {args: []string{"--vpp-simulate=sometimes"}, want: "sometimes"},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"--node-name=node-1"}, c.args...)
			if c.file != "" {
				path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
				if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--config", path)
			}
			var stderr bytes.Buffer
			if code := run(args, &stderr); code != 2 {
				t.Errorf("exit code %d, want 2; stderr: %s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), c.want) {
				t.Errorf("stderr %q does not name %q", stderr.String(), c.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"-h"}, &stderr); code != 0 {
		t.Errorf("-h exit code %d", code)
	}
	for _, flag := range []string{"-config", "-load", "-node-name", "-etcd-endpoints", "-vpp-socket"} {
		if !strings.Contains(stderr.String(), flag) {
			t.Errorf("usage lacks %s", flag)
		}
	}
}
