// Command images builds the programs' container images without a
// container daemon (make images): each program is built as a static
// binary (CGO off, -trimpath, no VCS stamp, no build ID) and put on a scratch-like base
// by internal/ociimage, written as an OCI archive <out>/<program>.tar. All
// timestamps are SOURCE_DATE_EPOCH's (default: the last commit's time),
// so the same sources and toolchain give the same digests; <out>/images.json
// lists each image's reference and digest.
//
// Load one with e.g. `podman load -i .images/contiv-agent.tar`,
// `skopeo copy oci-archive:.images/contiv-agent.tar docker://REGISTRY/...`
// or `kind load image-archive .images/contiv-agent.tar`.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"contiv.dev/vpp/internal/ociimage"
)

// program is one image: the program under cmd/, its image name (as the
// kustomize base names it) and its user.
type program struct {
	name, image, user, description string
}

// programs are the images built. The agent runs as root: it opens VPP's
// API socket, writes its node-ID file on the host and creates pod
// interfaces; the reflector and the CLI need no privilege.
var programs = []program{
	{"contiv-agent", "contiv/contiv-agent", ociimage.RootUser, "contiv-vpp node agent: programs VPP for pods and services"},
	{"contiv-ksr", "contiv/contiv-ksr", ociimage.NonrootUser, "contiv-vpp reflector: Kubernetes API state into etcd"},
	{"contivctl", "contiv/contivctl", ociimage.NonrootUser, "contiv-vpp operator CLI"},
	// The DaemonSet's init container runs "contiv-cni install": it writes
	// into the host's CNI directories.
	{"contiv-cni", "contiv/contiv-cni", ociimage.RootUser, "contiv-vpp CNI plugin and its installer"},
}

// built is one line of images.json.
type built struct {
	Program string `json:"program"`
	Ref     string `json:"ref"`
	Digest  string `json:"digest"`
	User    string `json:"user"`
	Archive string `json:"archive"`
}

func main() {
	out := flag.String("out", ".images", "output directory")
	tag := flag.String("tag", "latest", "image tag")
	epoch := flag.String("epoch", os.Getenv("SOURCE_DATE_EPOCH"), "timestamp of every file and config, unix seconds (default: the last commit's)")
	arch := flag.String("arch", runtime.GOARCH, "GOARCH of the images")
	flag.Parse()
	if err := run(*out, *tag, *epoch, *arch); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(out, tag, epoch, arch string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	revision := gitOutput(root, "rev-parse", "HEAD")
	if epoch == "" {
		epoch = gitOutput(root, "log", "-1", "--format=%ct")
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("SOURCE_DATE_EPOCH %q: not unix seconds", epoch)
	}
	created := time.Unix(secs, 0).UTC()
	if err := os.MkdirAll(filepath.Join(out, "bin"), 0o755); err != nil {
		return err
	}
	var list []built
	for _, p := range programs {
		bin, err := filepath.Abs(filepath.Join(out, "bin", p.name))
		if err != nil {
			return err
		}
		build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", bin, "./cmd/"+p.name)
		build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/%s: %w", p.name, err)
		}
		b, err := buildImage(p, bin, tag, revision, created, arch, out)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		fmt.Printf("%-14s %-32s %s\n", p.name, b.Ref, b.Digest)
		list = append(list, b)
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "images.json"), append(data, '\n'), 0o644)
}

// spec is the image of program p from its binary.
func spec(p program, bin, tag, revision string, created time.Time, arch string) ociimage.Spec {
	return ociimage.Spec{
		Binary: bin, Path: "/usr/local/bin/" + p.name, User: p.user, Created: created, Arch: arch,
		Labels: map[string]string{
			"org.opencontainers.image.title":       p.name,
			"org.opencontainers.image.description": p.description,
			"org.opencontainers.image.version":     tag,
			"org.opencontainers.image.revision":    revision,
			"org.opencontainers.image.created":     created.Format(time.RFC3339),
		},
	}
}

// buildImage writes p's image archive into out.
func buildImage(p program, bin, tag, revision string, created time.Time, arch, out string) (built, error) {
	s := spec(p, bin, tag, revision, created, arch)
	img, err := ociimage.Build(s)
	if err != nil {
		return built{}, err
	}
	ref := p.image + ":" + tag
	path := filepath.Join(out, p.name+".tar")
	f, err := os.Create(path)
	if err != nil {
		return built{}, err
	}
	err = ociimage.WriteArchive(f, img, ref, created)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return built{}, err
	}
	d, err := img.Digest()
	return built{Program: p.name, Ref: ref, Digest: d.String(), User: p.user, Archive: p.name + ".tar"}, err
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the module")
	}
	return filepath.Dir(mod), nil
}

// gitOutput is git's answer in dir, "unknown" without git.
func gitOutput(dir string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
