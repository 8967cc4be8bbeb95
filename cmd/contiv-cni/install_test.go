package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/libcni"
)

// TestInstallWritesThePluginAndAConflistLibcniReads runs the built binary's
// installer as the DaemonSet's init container does.
func TestInstallWritesThePluginAndAConflistLibcniReads(t *testing.T) {
	host := t.TempDir()
	bin, conf := filepath.Join(host, "opt/cni/bin"), filepath.Join(host, "etc/cni/net.d")
	out, err := exec.Command(filepath.Join(binDir, "contiv-cni"), "install", "-bin-dir", bin, "-conf-dir", conf, "-socket", "/run/contiv/cni.sock").CombinedOutput()
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	want, _ := os.ReadFile(filepath.Join(binDir, "contiv-cni"))
	got, err := os.ReadFile(filepath.Join(bin, "contiv-cni"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("installed binary differs from the plugin (%v)", err)
	}
	if st, _ := os.Stat(filepath.Join(bin, "contiv-cni")); st.Mode().Perm()&0o111 == 0 {
		t.Error("installed binary is not executable")
	}
	list, err := libcni.ConfListFromFile(filepath.Join(conf, ConfName))
	if err != nil {
		t.Fatal(err)
	}
	if list.Name != "contiv-vpp" || list.CNIVersion != "1.1.0" || len(list.Plugins) != 1 || list.Plugins[0].Network.Type != "contiv-cni" {
		t.Fatalf("conflist %s", list.Bytes)
	}
	// The runtime hands the plugin its configuration with the list's name.
	var pc map[string]any
	if err := json.Unmarshal(list.Plugins[0].Bytes, &pc); err != nil {
		t.Fatal(err)
	}
	pc["name"], pc["cniVersion"] = list.Name, list.CNIVersion
	b, _ := json.Marshal(pc)
	c, cerr := parseConf(b)
	if cerr != nil || c.Socket != "/run/contiv/cni.sock" {
		t.Errorf("plugin configuration %s: %v", list.Plugins[0].Bytes, cerr)
	}
	// A bad flag value is refused before anything is written.
	bad := filepath.Join(host, "bad")
	if out, err := exec.Command(filepath.Join(binDir, "contiv-cni"), "install", "-conf-dir", bad, "-bin-dir", bad, "-socket", "relative.sock").CombinedOutput(); err == nil || !bytes.Contains(out, []byte("socket")) {
		t.Errorf("install with a relative socket: %v %s; want an error naming socket", err, out)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("a refused install wrote something")
	}
}
