package offlinetest

import (
	"path/filepath"
	"runtime"
	"testing"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/kubestate"
)

// ExampleObjects are the example cluster's objects.
func ExampleObjects(t testing.TB) []kubestate.Object {
	t.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("offlinetest: cannot locate the example cluster")
	}
	objs, err := kubestate.LoadYAMLFile(filepath.Join(filepath.Dir(here), "..", "..", "..", "deploy", "examples", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// Config is node's configuration: the defaults.
func Config(node string) contivconf.Config {
	cfg := contivconf.Defaults()
	cfg.NodeName = node
	return cfg
}
