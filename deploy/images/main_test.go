package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"contiv.dev/vpp/internal/ociimage"
)

// The kustomize base names the images built here: each image it renames
// is one of the programs', under the program's name.
func TestKustomizeBaseNamesTheImages(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "base", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Images []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
		} `json:"images"`
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	byName := map[string]program{}
	for _, p := range programs {
		byName[p.name] = p
		if _, err := os.Stat(filepath.Join("..", "..", "cmd", p.name)); err != nil {
			t.Errorf("program %s: %v", p.name, err)
		}
	}
	named := map[string]bool{}
	for _, img := range k.Images {
		p, ok := byName[img.Name]
		if !ok {
			t.Errorf("base renames image %s, which make images does not build", img.Name)
			continue
		}
		if img.NewName != p.image || img.NewTag == "" {
			t.Errorf("base names %s %s:%s; make images builds %s", img.Name, img.NewName, img.NewTag, p.image)
		}
		named[img.Name] = true
	}
	for _, deployed := range []string{"contiv-agent", "contiv-ksr", "contiv-cni"} {
		if !named[deployed] {
			t.Errorf("base does not name the %s image", deployed)
		}
	}
}

// TestBuiltImages opens each image make images built (CONTIV_IMAGES: its
// output directory; skipped without it): its name and digest are the
// ones listed, its entrypoint is the program, static, and runs -h, its
// user and labels are the program's, and building it again from the same
// binary gives the same digest.
func TestBuiltImages(t *testing.T) {
	dir := os.Getenv("CONTIV_IMAGES")
	if dir == "" {
		t.Skip("CONTIV_IMAGES not set: run make images")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "images.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list []built
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != len(programs) {
		t.Fatalf("%d images listed, want %d", len(list), len(programs))
	}
	for i, p := range programs {
		b := list[i]
		t.Run(p.name, func(t *testing.T) {
			info, err := ociimage.Inspect(filepath.Join(dir, b.Archive), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			tag := strings.TrimPrefix(b.Ref, p.image+":")
			if b.Program != p.name || info.Ref != b.Ref || tag == b.Ref || info.Digest.String() != b.Digest {
				t.Errorf("listed %+v; archive holds %s %s", b, info.Ref, info.Digest)
			}
			c := info.Config.Config
			if len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/usr/local/bin/"+p.name {
				t.Errorf("entrypoint %q", c.Entrypoint)
			}
			if c.User != p.user {
				t.Errorf("user %q, want %q", c.User, p.user)
			}
			labels := c.Labels
			if labels["org.opencontainers.image.title"] != p.name || labels["org.opencontainers.image.version"] != tag ||
				labels["org.opencontainers.image.revision"] == "" || labels["org.opencontainers.image.description"] != p.description {
				t.Errorf("labels %v", labels)
			}
			if !info.Static {
				t.Error("entrypoint is not statically linked: it cannot run on the scratch base")
			}
			out, err := exec.Command(info.Entrypoint, "-h").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "-") {
				t.Errorf("%s -h: %v\n%s", p.name, err, out)
			}
			created, err := time.Parse(time.RFC3339, labels["org.opencontainers.image.created"])
			if err != nil || !info.Config.Created.Time.Equal(created) {
				t.Fatalf("created label %q, config %s", labels["org.opencontainers.image.created"], info.Config.Created)
			}
			img, err := ociimage.Build(spec(p, info.Entrypoint, tag, labels["org.opencontainers.image.revision"], created, info.Config.Architecture))
			if err != nil {
				t.Fatal(err)
			}
			if d, err := img.Digest(); err != nil || d != info.Digest {
				t.Errorf("rebuilt from the same binary: %s, archive %s", d, info.Digest)
			}
		})
	}
}
