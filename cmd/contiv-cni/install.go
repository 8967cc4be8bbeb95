package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"contiv.dev/vpp/plugins/pods/cniapi"
)

// ConfName is the conflist the installer writes: "10-" sorts it before
// most other networks, as the runtime takes the first conflist it finds.
const ConfName = "10-contiv-vpp.conflist"

// install is `contiv-cni install`: the DaemonSet's init container copies
// the plugin (this very binary) into the host's CNI bin directory and
// writes the conflist into its conf directory, each atomically (a
// temporary file renamed), so that a runtime never runs half a binary nor
// reads half a conflist.
func install(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	fs.SetOutput(out)
	binDir := fs.String("bin-dir", "/host/opt/cni/bin", "the host's CNI bin directory (mounted)")
	confDir := fs.String("conf-dir", "/host/etc/cni/net.d", "the host's CNI conf directory (mounted)")
	socket := fs.String("socket", cniapi.DefaultSocket, "the agent's socket, as the plugin on the host reaches it")
	timeout := fs.String("timeout", "25s", "bound on one call of the plugin to the agent")
	if err := fs.Parse(args); err != nil {
		return err
	}
	conf := map[string]any{
		"cniVersion": "1.1.0",
		"name":       "contiv-vpp",
		"plugins":    []any{map[string]any{"type": "contiv-cni", "socket": *socket, "timeout": *timeout}},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	if _, cerr := parseConf(mustPlugin(conf)); cerr != nil {
		return fmt.Errorf("install: %s", cerr.Msg)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("install: this binary: %w", err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		return fmt.Errorf("install: this binary: %w", err)
	}
	if err := writeAtomic(filepath.Join(*binDir, "contiv-cni"), bin, 0o755); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(*confDir, ConfName), append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(out, "installed %s and %s (socket %s)\n", filepath.Join(*binDir, "contiv-cni"), filepath.Join(*confDir, ConfName), *socket)
	return nil
}

// mustPlugin is the conflist's plugin configuration as the runtime hands
// it to the plugin (with the list's name and version).
func mustPlugin(conf map[string]any) []byte {
	p := map[string]any{"cniVersion": conf["cniVersion"], "name": conf["name"]}
	for k, v := range conf["plugins"].([]any)[0].(map[string]any) {
		p[k] = v
	}
	b, _ := json.Marshal(p)
	return b
}

func writeAtomic(path string, b []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	tmp := path + ".contiv-tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return errors.Join(fmt.Errorf("install: %w", err), os.Remove(tmp))
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(fmt.Errorf("install: %w", err), os.Remove(tmp))
	}
	return nil
}
