package ociimage

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// buildHello builds testdata/hello statically, as the programs are built.
func buildHello(t *testing.T, dynamic bool) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hello")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", bin, "./testdata/hello")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if dynamic {
		cmd = exec.Command("go", "build", "-ldflags=-linkmode=external", "-o", bin, "./testdata/hello")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		if dynamic {
			t.Skipf("no dynamic build here: %v\n%s", err, out)
		}
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func spec(bin string) Spec {
	return Spec{
		Binary: bin, Path: "/usr/local/bin/hello", Args: []string{"--greet", "image"}, User: NonrootUser,
		Labels:  map[string]string{"org.opencontainers.image.title": "hello", "org.opencontainers.image.version": "test"},
		Created: time.Unix(1764000000, 0), Arch: runtime.GOARCH,
	}
}

func archive(t *testing.T, s Spec, ref string) []byte {
	t.Helper()
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteArchive(&buf, img, ref, s.Created); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestImage: an image built from a static binary opens as an OCI layout
// with its name, entrypoint, arguments, user, labels, platform and
// timestamps, holds the base's files with their owners, and its
// entrypoint runs -h; the same inputs give the same bytes.
func TestImage(t *testing.T) {
	s := spec(buildHello(t, false))
	b := archive(t, s, "example/hello:test")
	if again := archive(t, s, "example/hello:test"); !bytes.Equal(b, again) {
		t.Fatal("two builds of the same inputs differ")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "hello.tar")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := Inspect(path, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := info.Config
	if info.Ref != "example/hello:test" || c.OS != "linux" || c.Architecture != runtime.GOARCH || !c.Created.Time.Equal(s.Created) {
		t.Errorf("image %s: os %s arch %s created %s", info.Ref, c.OS, c.Architecture, c.Created)
	}
	if got := c.Config.Entrypoint; len(got) != 1 || got[0] != "/usr/local/bin/hello" || strings.Join(c.Config.Cmd, " ") != "--greet image" {
		t.Errorf("entrypoint %q cmd %q", got, c.Config.Cmd)
	}
	if c.Config.User != NonrootUser || c.Config.Labels["org.opencontainers.image.title"] != "hello" {
		t.Errorf("user %q labels %v", c.Config.User, c.Config.Labels)
	}
	for _, h := range c.History {
		if !h.Created.Time.Equal(s.Created) {
			t.Errorf("history %q created %s", h.CreatedBy, h.Created)
		}
	}
	for name, want := range map[string]string{
		"etc/passwd": "644 0:0", "tmp": "1777 0:0", "home/nonroot": "700 65532:65532", "usr/local/bin/hello": "755 0:0",
	} {
		if got := info.Files[name]; got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if !info.Static {
		t.Error("entrypoint not static")
	}
	out, err := exec.Command(info.Entrypoint, "-h").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-greet") {
		t.Errorf("%s -h: %v\n%s", info.Entrypoint, err, out)
	}
	out, err = exec.Command(info.Entrypoint, c.Config.Cmd...).CombinedOutput()
	if err != nil || string(out) != "hello, image\n" {
		t.Errorf("entrypoint with the image's arguments: %v %q", err, out)
	}

	// Another timestamp or name is another archive; another user another image.
	s2 := s
	s2.Created = s.Created.Add(time.Second)
	if bytes.Equal(b, archive(t, s2, "example/hello:test")) {
		t.Error("the timestamp changes nothing")
	}
	s3 := s
	s3.User = RootUser
	img1, _ := Build(s)
	img3, _ := Build(s3)
	d1, _ := img1.Digest()
	d3, _ := img3.Digest()
	if d1 == d3 {
		t.Error("the user changes nothing")
	}
}

func TestBadSpecs(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(bin, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]Spec{
		"relative path": {Binary: bin, Path: "usr/bin/x", User: RootUser},
		"unknown user":  {Binary: bin, Path: "/x", User: "1000"},
	} {
		if _, err := Build(s); !errors.Is(err, errBadSpec) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Build(Spec{Binary: filepath.Join(t.TempDir(), "none"), Path: "/x", User: RootUser}); err == nil || !strings.Contains(err.Error(), "image binary") {
		t.Errorf("missing binary: %v", err)
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"contiv/contiv-agent:1":  "docker.io/contiv/contiv-agent:1",
		"busybox:1":              "docker.io/library/busybox:1",
		"localhost/a:1":          "localhost/a:1",
		"reg.example:5000/a/b:1": "reg.example:5000/a/b:1",
	} {
		if got := normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestInspectTellsDynamicBinaries: a dynamically linked entrypoint,
// which a scratch base cannot run, is told apart.
func TestInspectTellsDynamicBinaries(t *testing.T) {
	s := spec(buildHello(t, true))
	path := filepath.Join(t.TempDir(), "hello.tar")
	if err := os.WriteFile(path, archive(t, s, "example/hello:dyn"), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := Inspect(path, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if info.Static {
		t.Error("dynamically linked entrypoint taken for static")
	}
}
