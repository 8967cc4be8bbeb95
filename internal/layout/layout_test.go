package layout

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "contiv.dev/vpp/"

// layers maps a package path (relative to the module) to its layer; the
// longest matching prefix decides.
var layers = map[string]int{
	"internal": 1,
	// The benchmark's workload W(N) builds kubestate models: a library
	// beside kubestate, kept under internal/ because only tests and the
	// benchmark use it.
	"internal/workload": 2,
	"contivconf":        2,
	"kubestate":         2,
	"addrplan":          2,
	"noderegistry":      2,
	"servicerenderer":   2,
	"plugins":           3,
	"agent":             4,
	"cmd":               5,
	"bench":             5,
	// The benchmark's own levels: the core every figure shares, the
	// families of figures (none imports another: familyOf), the table of
	// figures (harness) and its command.
	"bench/core":    5,
	"bench/figures": 6,
	"bench/harness": 7,
	"bench/cmd":     8,
	"chaos":         5,
	"deploy":        5,
	"e2evpp":        5,
}

// testImportsUp are the tests allowed to import from a layer above their
// package's, each with its reason: the package whose tests import ("pkg")
// and the package imported ("pkg -> dep"). Every other test import flows
// downward like the code's.
var testImportsUp = map[string]string{
	"internal/etcdproxy -> kubestate":          proxyClients,
	"internal/etcdproxy -> noderegistry":       proxyClients,
	"internal/etcdproxy -> plugins/controller": proxyClients,
	"internal/etcdproxy -> plugins/ksr":        proxyClients,
	"servicerenderer/nat44 -> plugins/vpp":     rendererIntoSim,
	"servicerenderer/nat44 -> plugins/vpp/sim": rendererIntoSim,
}

// The reasons of testImportsUp.
const (
	proxyClients = "the proxy is there for the project's own etcd clients: its tests run the " +
		"controller's watch, NodeSync and the reflector's fenced writes through it"
	rendererIntoSim = "the renderer's integration tests apply its operations through the VPP " +
		"client to the simulated VPP (the stateful fake) and check VPP's state, not the operations"
)

// familyOf is the benchmark's family of figures pkg belongs to
// (bench/figures/<family>), or "".
func familyOf(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, "bench/figures/")
	if !ok {
		return ""
	}
	family, _, _ := strings.Cut(rest, "/")
	return family
}

// crossFamily tells whether pkg imports dep from another family of the
// benchmark's figures: what two families share belongs in bench/core.
func crossFamily(pkg, dep string) bool {
	f := familyOf(pkg)
	return f != "" && familyOf(dep) != "" && familyOf(dep) != f
}

func layerOf(pkg string) (int, bool) {
	best, layer := -1, 0
	for prefix, l := range layers {
		if (pkg == prefix || strings.HasPrefix(pkg, prefix+"/")) && len(prefix) > best {
			best, layer = len(prefix), l
		}
	}
	return layer, best >= 0
}

// goImport is one import of the project by one Go file.
type goImport struct {
	file string // relative to the module root
	pkg  string // the importing file's directory
	dep  string // the imported package, relative to the module
	test bool   // the file is a _test.go file
}

// projectImports reads every Go file of the module (not the nested e2e
// module, not testdata) and returns its imports of the project; files in
// no layer are reported through t.
func projectImports(t *testing.T) []goImport {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	var out []goImport
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "e2e" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		if _, ok := layerOf(pkg); !ok {
			t.Errorf("%s: package %s is in no layer (add it to layers and to docs/architecture.md)", rel, pkg)
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module) {
				out = append(out, goImport{file: rel, pkg: pkg, dep: strings.TrimPrefix(p, module), test: strings.HasSuffix(path, "_test.go")})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportsFlowDownward checks each import of the project by a non-test
// file against the layers.
func TestImportsFlowDownward(t *testing.T) {
	checked := 0
	for _, imp := range projectImports(t) {
		if imp.test {
			continue
		}
		checked++
		from, _ := layerOf(imp.pkg)
		to, ok := layerOf(imp.dep)
		switch {
		case !ok:
			t.Errorf("%s imports %s, which is in no layer", imp.file, imp.dep)
		case to > from:
			t.Errorf("%s (layer %d) imports %s (layer %d): imports flow downward only", imp.file, from, imp.dep, to)
		case imp.pkg == "plugins/vpp/sim" && to != 1:
			t.Errorf("%s imports %s: the simulated VPP models VPP, not the agent", imp.file, imp.dep)
		case crossFamily(imp.pkg, imp.dep):
			t.Errorf("%s imports %s: a family of figures imports no other (what they share goes to bench/core)", imp.file, imp.dep)
		}
	}
	if checked < 100 {
		t.Errorf("only %d imports of the project checked: is the walk reading the module?", checked)
	}
}

// TestTestImportsFlowDownward checks each import of the project by a test
// file against the layers: a package's tests may not import from a layer
// above it unless testImportsUp names the pair with its reason.
func TestTestImportsFlowDownward(t *testing.T) {
	checked := 0
	used := map[string]bool{}
	for _, imp := range projectImports(t) {
		if !imp.test {
			continue
		}
		checked++
		from, _ := layerOf(imp.pkg)
		to, ok := layerOf(imp.dep)
		pair := imp.pkg + " -> " + imp.dep
		switch {
		case !ok:
			t.Errorf("%s imports %s, which is in no layer", imp.file, imp.dep)
		case crossFamily(imp.pkg, imp.dep):
			t.Errorf("%s imports %s: a family of figures, and its tests, import no other", imp.file, imp.dep)
		case to <= from:
		case testImportsUp[pair] != "":
			used[pair] = true
		default:
			t.Errorf("%s (layer %d) imports %s (layer %d): a test imports from its layer or below (or add %q to testImportsUp with the reason)", imp.file, from, imp.dep, to, pair)
		}
	}
	for pair := range testImportsUp {
		if !used[pair] {
			t.Errorf("testImportsUp allows %s, which no test imports any more: remove it", pair)
		}
	}
	if checked < 100 {
		t.Errorf("only %d imports of the project by tests checked: is the walk reading the module?", checked)
	}
}

// TestLayerOfTakesTheLongestPrefix guards the lookup the rule rests on.
func TestLayerOfTakesTheLongestPrefix(t *testing.T) {
	for pkg, want := range map[string]int{"internal/backoff": 1, "internal/workload": 2, "servicerenderer/nat44": 2, "plugins/vpp/sim": 3, "agent/offline": 4, "cmd/contivctl": 5,
		"bench/core": 5, "bench/figures/live": 6, "bench/harness": 7, "bench/cmd/contiv-bench": 8} {
		if got, ok := layerOf(pkg); !ok || got != want {
			t.Errorf("layerOf(%s) = %d, %v; want %d", pkg, got, ok, want)
		}
	}
	if _, ok := layerOf("agentx"); ok {
		t.Error("agentx matched the agent prefix")
	}
	for _, c := range []struct {
		pkg, dep string
		cross    bool
	}{
		{"bench/figures/live", "bench/figures/startup", true},
		{"bench/figures/live/x", "bench/figures/live", false},
		{"bench/figures/live", "bench/core", false},
		{"bench/harness", "bench/figures/live", false},
	} {
		if got := crossFamily(c.pkg, c.dep); got != c.cross {
			t.Errorf("crossFamily(%s, %s) = %v", c.pkg, c.dep, got)
		}
	}
}
