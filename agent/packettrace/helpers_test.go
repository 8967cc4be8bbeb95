package packettrace_test

import (
	"context"
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
	objs, err := kubestate.LoadYAMLFile("../../deploy/examples/cluster.yaml")
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
