package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// kubeVersion is the Kubernetes release the control plane is built from;
// module ./kube pins it (its go.mod is generated from that release's own).
const kubeVersion = "v1.37.2"

// kubeLDFlags stamp the version the binaries report (a plain go build
// reports v0.0.0-master).
const kubeLDFlags = "-X k8s.io/component-base/version.gitVersion=" + kubeVersion +
	" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" +
	" -X k8s.io/component-base/version.gitTreeState=clean"

// binCache is where the built programs are kept between runs: by
// Kubernetes version, Go version and the hash of ./kube/go.sum and the
// link flags, under
// $XDG_CACHE_HOME (or ~/.cache), so that a warm run builds nothing.
func binCache(t testing.TB) string {
	t.Helper()
	sum, err := os.ReadFile(filepath.Join("kube", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(append(sum, kubeLDFlags...))
	base, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("no cache directory: %v", err)
	}
	return filepath.Join(base, "contiv-e2e", fmt.Sprintf("kubernetes-%s-%s-%s", kubeVersion, runtime.Version(), hex.EncodeToString(h[:6])))
}

var buildMu sync.Mutex

// kubeBinary returns the path of the Kubernetes program cmd
// (k8s.io/kubernetes/cmd/<cmd>), building it into the cache first when it
// is not there.
func kubeBinary(t testing.TB, cmd string) string {
	t.Helper()
	return cachedBuild(t, binCache(t), "kube", "k8s.io/kubernetes/cmd/"+cmd, cmd, "-trimpath", "-ldflags", kubeLDFlags)
}

// contivBinary builds the contiv program cmd (contiv.dev/vpp/cmd/<cmd>) from
// this checkout into dir (a fresh build every run: it is the code under test).
// It is built with the flags of go vet and go build (no -trimpath), so that
// its dependencies come from the build cache where make lint compiled them:
// in a cold CI run, -trimpath made them a compile of their own (8m51s).
func contivBinary(t testing.TB, dir, cmd string) string {
	t.Helper()
	return cachedBuild(t, dir, ".", "contiv.dev/vpp/cmd/"+cmd, cmd)
}

// cachedBuild builds pkg of the module in moduleDir into dir/name with the
// go build flags given unless it is there, logging how long the build took.
func cachedBuild(t testing.TB, dir, moduleDir, pkg, name string, flags ...string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	out := filepath.Join(dir, name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := out + ".tmp"
	args := append(append([]string{"build", "-o", tmp}, flags...), pkg)
	c := exec.Command("go", args...)
	c.Dir = moduleDir
	var stderr bytes.Buffer
	c.Stderr = &stderr
	start := time.Now()
	if err := c.Run(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, stderr.Bytes())
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s in %v", pkg, time.Since(start).Round(time.Second))
	return out
}
