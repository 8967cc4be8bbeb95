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
	"internal":        1,
	"contivconf":      2,
	"kubestate":       2,
	"addrplan":        2,
	"noderegistry":    2,
	"servicerenderer": 2,
	"plugins":         3,
	"agent":           4,
	"cmd":             5,
	"bench":           5,
	"chaos":           5,
	"deploy":          5,
	"e2evpp":          5,
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

// TestImportsFlowDownward reads every non-test Go file of the module (not
// the nested e2e module) and checks each import of the project against
// the layers.
func TestImportsFlowDownward(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	checked := 0
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
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		from, ok := layerOf(pkg)
		if !ok {
			t.Errorf("%s: package %s is in no layer (add it to layers and to docs/architecture.md)", rel, pkg)
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			dep := strings.TrimPrefix(p, module)
			checked++
			to, ok := layerOf(dep)
			switch {
			case !ok:
				t.Errorf("%s imports %s, which is in no layer", rel, dep)
			case to > from:
				t.Errorf("%s (layer %d) imports %s (layer %d): imports flow downward only", rel, from, dep, to)
			case pkg == "plugins/vpp/sim" && to != 1:
				t.Errorf("%s imports %s: the simulated VPP models VPP, not the agent", rel, dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Errorf("only %d imports of the project checked: is the walk reading the module?", checked)
	}
}

// TestLayerOfTakesTheLongestPrefix guards the lookup the rule rests on.
func TestLayerOfTakesTheLongestPrefix(t *testing.T) {
	for pkg, want := range map[string]int{"internal/backoff": 1, "servicerenderer/nat44": 2, "plugins/vpp/sim": 3, "agent/offline": 4, "cmd/contivctl": 5} {
		if got, ok := layerOf(pkg); !ok || got != want {
			t.Errorf("layerOf(%s) = %d, %v; want %d", pkg, got, ok, want)
		}
	}
	if _, ok := layerOf("agentx"); ok {
		t.Error("agentx matched the agent prefix")
	}
}
