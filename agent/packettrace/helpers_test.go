package packettrace_test

import (
	"context"
	"os"
	"testing"

	"go.uber.org/goleak"

	"contiv.dev/vpp/agent/offline"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/kubestate"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// exampleObjects are the example cluster's objects.
func exampleObjects(t testing.TB) []kubestate.Object {
	t.Helper()
	f, err := os.Open("../../deploy/examples/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	objs, err := kubestate.LoadYAML(f)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func renderConfig(node string) contivconf.Config {
	cfg := contivconf.Defaults()
	cfg.NodeName = node
	return cfg
}

func mustRender(t testing.TB, p offline.Params) *offline.Rendered {
	t.Helper()
	r, err := offline.Render(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
