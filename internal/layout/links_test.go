package layout

import (
	"os/exec"
	"strings"
	"testing"
)

// unlinked says, for each program, the packages it must not link, and
// why: an import path, or a prefix of import paths when it ends in "/".
var unlinked = map[string]map[string]string{
	"cmd/contivctl": {
		module + "agent":                  "contivctl reads the agent's views through agent/restapi",
		module + "internal/etcd/embedded": "contivctl only talks to etcd",
		"go.etcd.io/etcd/server/":         "contivctl only talks to etcd",
	},
	"cmd/contiv-ksr": {
		module + "agent":                  "the reflector is not the agent",
		module + "internal/etcd/embedded": "the reflector only talks to etcd",
		"go.etcd.io/etcd/server/":         "the reflector only talks to etcd",
	},
}

// TestProgramsLinkOnlyWhatTheyUse lists each program's dependencies (go
// list -deps) and checks that none is a package it must not link: a
// client of etcd links etcd's client, not its server, and a client of the
// agent its REST types, not the agent.
func TestProgramsLinkOnlyWhatTheyUse(t *testing.T) {
	if testing.Short() {
		t.Skip("lists every program's dependencies")
	}
	for prog, banned := range unlinked {
		cmd := exec.Command("go", "list", "-deps", "./"+prog)
		cmd.Dir = "../.."
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps ./%s: %v\n%s", prog, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 50 {
			t.Fatalf("go list -deps ./%s listed %d packages: is it run from the module?", prog, len(deps))
		}
		for path, why := range banned {
			var linked []string
			for _, dep := range deps {
				if dep == path || strings.HasSuffix(path, "/") && strings.HasPrefix(dep, path) {
					linked = append(linked, dep)
				}
			}
			if len(linked) > 0 {
				t.Errorf("%s links %s (%d packages: %s): %s", prog, path, len(linked), linked[0], why)
			}
		}
	}
}
