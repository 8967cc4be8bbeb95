package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// help is what a program's -h says: its flags and the environment
// variables its flags name.
type help struct {
	flags map[string]bool
	env   map[string]bool
}

var (
	helpFlag = regexp.MustCompile(`(?m)^\s+-([a-z0-9][a-z0-9-]*)`)
	helpEnv  = regexp.MustCompile(`env (CONTIV_[A-Z0-9_]+)`)
)

// buildHelp builds ./cmd/prog into a temporary directory and runs it with
// -h.
func buildHelp(t *testing.T, prog string) help {
	t.Helper()
	bin := filepath.Join(t.TempDir(), prog)
	build := exec.Command("go", "build", "-o", bin, "./cmd/"+prog)
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/%s: %v\n%s", prog, err, out)
	}
	out, err := exec.Command(bin, "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("%s -h: %v\n%s", prog, err, out)
	}
	h := help{flags: map[string]bool{}, env: map[string]bool{}}
	for _, m := range helpFlag.FindAllStringSubmatch(string(out), -1) {
		h.flags[m[1]] = true
	}
	for _, m := range helpEnv.FindAllStringSubmatch(string(out), -1) {
		h.env[m[1]] = true
	}
	if len(h.flags) == 0 {
		t.Fatalf("%s -h lists no flag:\n%s", prog, out)
	}
	return h
}

// entrypoint is the ENTRYPOINT of deploy/docker/prog.Dockerfile.
func entrypoint(t *testing.T, prog string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("docker", prog+".Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ENTRYPOINT \["([^"]+)"\]`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s.Dockerfile: no exec-form ENTRYPOINT", prog)
	}
	if !strings.Contains(string(b), "-o /out/"+prog+" ./cmd/"+prog) || !strings.Contains(string(b), "/out/"+prog+" "+string(m[1])) {
		t.Errorf("%s.Dockerfile: the ENTRYPOINT %s is not the binary built from ./cmd/%s", prog, m[1], prog)
	}
	return string(m[1])
}

// The programs' images start the program the manifests mean, and every flag
// the manifests pass (and every CONTIV_ variable they set) is one the built
// program accepts.
func TestManifestFlagsExistInPrograms(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the programs")
	}
	programs := map[string]help{
		"contiv-agent": buildHelp(t, "contiv-agent"),
		"contiv-ksr":   buildHelp(t, "contiv-ksr"),
	}
	for _, v := range variants {
		t.Run(v.dir, func(t *testing.T) {
			m := render(t, v)
			for name, spec := range m.podSpecs() {
				for _, c := range spec.Containers {
					prog := programOf(c.Image)
					h, ours := programs[prog]
					if !ours {
						continue // etcd: not this project's program
					}
					if len(c.Command) > 0 && c.Command[0] != entrypoint(t, prog) {
						t.Errorf("%s: command %q replaces the image's entrypoint %s", name, c.Command, entrypoint(t, prog))
					}
					for _, a := range c.Args {
						if !strings.HasPrefix(a, "-") {
							t.Errorf("%s: argument %q is not a flag", name, a)
							continue
						}
						flag, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
						if !h.flags[flag] {
							t.Errorf("%s: %s has no flag --%s", name, prog, flag)
						}
					}
					for _, e := range c.Env {
						if strings.HasPrefix(e.Name, "CONTIV_") && e.Name != "CONTIV_CONFIG" && e.Name != "CONTIV_ETCD_PASSWORD" && !h.env[e.Name] {
							t.Errorf("%s: %s reads no variable %s", name, prog, e.Name)
						}
					}
				}
			}
		})
	}
}

// programOf maps an image (contiv/contiv-agent:tag, contiv-agent) to the
// program it runs.
func programOf(image string) string {
	name := image[strings.LastIndex(image, "/")+1:]
	name, _, _ = strings.Cut(name, ":")
	return name
}
