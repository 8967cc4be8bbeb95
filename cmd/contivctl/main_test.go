package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const clusterYAML = "../../deploy/examples/cluster.yaml"

// contivctl runs the CLI in-process and returns its exit status and output.
func contivctl(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, streams{in: strings.NewReader(stdin), out: &out, err: &errb})
	return code, out.String(), errb.String()
}

func listAll(t *testing.T, cli *clientv3.Client) *kubestate.Listing {
	t.Helper()
	l, err := kubestate.ListAll(context.Background(), cli)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Bad) != 0 {
		t.Fatalf("undecodable values: %v", l.Bad)
	}
	return l
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadExampleCluster(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()

	code, out, errs := contivctl(t, "", "load", "-f", clusterYAML, "--etcd", srv.Endpoint())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"loaded 49 objects", "pod   19", "service   12", "endpointslice   12"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	objs, err := kubestate.LoadYAMLFile(clusterYAML)
	if err != nil {
		t.Fatal(err)
	}
	want := map[kubestate.Key]kubestate.Object{}
	for _, o := range objs {
		want[o.Key()] = o
	}
	l := listAll(t, cli)
	if !reflect.DeepEqual(l.Objects, want) {
		t.Errorf("etcd holds %d objects, the file %d, or they differ", len(l.Objects), len(want))
	}
	// Agents take it as a complete output, in their layout.
	markers, err := cli.Txn(context.Background()).Then(clientv3.OpGet(kubestate.LayoutKey), clientv3.OpGet(kubestate.SyncedKey)).Commit()
	if err != nil {
		t.Fatal(err)
	}
	var vals [2][]byte
	for i, r := range markers.Responses {
		if kvs := r.GetResponseRange().Kvs; len(kvs) > 0 {
			vals[i] = kvs[0].Value
		}
	}
	if _, err := kubestate.Completeness(vals[0], vals[1]); err != nil {
		t.Errorf("after load: %v", err)
	}

	// Loading again writes nothing.
	code, out, errs = contivctl(t, "", "load", "-f", clusterYAML, "--etcd", srv.Endpoint(), "--prune")
	if code != 0 {
		t.Fatalf("second load: exit %d: %s", code, errs)
	}
	if l2 := listAll(t, cli); l2.Revision != l.Revision {
		t.Errorf("unchanged load wrote: revision %d -> %d\n%s", l.Revision, l2.Revision, out)
	}
}

func TestLoadPrune(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	ctx := context.Background()
	w := kubestate.NewWriter(cli, nil)
	stale := &kubestate.Service{Namespace: "default", Name: "stale"}
	node := &kubestate.Node{Name: "node-9"}
	for _, o := range []kubestate.Object{stale, node} {
		if err := w.Put(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	file := writeFile(t, `
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  clusterIP: 10.96.0.9
  ports:
  - port: 80
`)
	web := kubestate.Key{Resource: kubestate.ResService, Namespace: "default", Name: "web"}

	if code, _, errs := contivctl(t, "", "load", "-f", file, "--etcd", srv.Endpoint()); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	l := listAll(t, cli)
	if l.Objects[stale.Key()] == nil || l.Objects[node.Key()] == nil || l.Objects[web] == nil {
		t.Errorf("without --prune: %v", l.Objects)
	}

	code, out, errs := contivctl(t, "", "load", "-f", file, "--etcd", srv.Endpoint(), "--prune")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	l = listAll(t, cli)
	if l.Objects[stale.Key()] != nil {
		t.Errorf("--prune kept %s", stale.Key())
	}
	if l.Objects[node.Key()] == nil || l.Objects[web] == nil {
		t.Errorf("--prune deleted what it should keep: %v", l.Objects)
	}
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "service 0 1 1") {
		t.Errorf("output:\n%s", out)
	}
}

func TestLoadStdin(t *testing.T) {
	srv := etcdtest.Start(t)
	code, _, errs := contivctl(t, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n", "load", "-f", "-", "-etcd", srv.Endpoint())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	l := listAll(t, srv.Client())
	if l.Objects[kubestate.Key{Resource: kubestate.ResNamespace, Name: "shop"}] == nil {
		t.Errorf("stored %v", l.Objects)
	}
}

func TestLoadBadFileWritesNothing(t *testing.T) {
	srv := etcdtest.Start(t)
	file := writeFile(t, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n")
	code, _, errs := contivctl(t, "", "load", "-f", file, "--etcd", srv.Endpoint())
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(errs, "yaml document 2 (Deployment web)") {
		t.Errorf("stderr does not name the document: %s", errs)
	}
	if l := listAll(t, srv.Client()); len(l.Objects) != 0 {
		t.Errorf("a bad file wrote %v", l.Objects)
	}
}

func TestLoadEtcdDown(t *testing.T) {
	srv := etcdtest.Start(t)
	ep := srv.Endpoint()
	srv.Stop()
	code, _, errs := contivctl(t, "", "load", "-f", clusterYAML, "--etcd", ep, "--dial-timeout", "200ms")
	if code != 1 || !strings.Contains(errs, "not answering") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		code    int
		wantOut string
		wantErr string
	}{
		{"no command", nil, 2, "", "Commands:\n  services"},
		{"help", []string{"help"}, 0, "Commands:\n  services", ""},
		{"unknown command", []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"load help", []string{"load", "-h"}, 0, "", "Usage: contivctl load -f FILE.yaml"},
		{"load without file", []string{"load"}, 2, "", "-f FILE is required"},
		{"load with an unknown flag", []string{"load", "--nope"}, 2, "", "flag provided but not defined: -nope"},
		{"load with an argument", []string{"load", "-f", "x.yaml", "extra"}, 2, "", `unexpected argument "extra"`},
		{"load of a missing file", []string{"load", "-f", "/nonexistent.yaml"}, 1, "", "/nonexistent.yaml"},
		{"load without endpoints", []string{"load", "-f", clusterYAML, "--etcd", " , "}, 2, "", "--etcd names no endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := contivctl(t, "", tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, errs)
			}
			if !strings.Contains(out, tt.wantOut) || !strings.Contains(errs, tt.wantErr) {
				t.Errorf("stdout %q, stderr %q; want %q and %q", out, errs, tt.wantOut, tt.wantErr)
			}
		})
	}
}
