package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"contiv.dev/vpp/contivconf"
)

// kustomization is the part of kustomization.yaml the test checks.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// decodeAll strictly decodes every document of a manifest file.
func decodeAll(t *testing.T, path string) []runtime.Object {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	strict := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []runtime.Object
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", path, i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := strict.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: document %d: %v", path, i, err)
		}
		objs = append(objs, obj)
	}
	return objs
}

func TestBaseManifestsDecodeStrictly(t *testing.T) {
	raw, err := os.ReadFile("base/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(raw, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, err := filepath.Glob("base/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" && !slices.Contains(k.Resources, filepath.Base(f)) {
			t.Errorf("%s is not listed in kustomization.yaml", f)
		}
	}
	kinds := map[string]int{}
	var agent *appsv1.DaemonSet
	var ksr *appsv1.Deployment
	var etcd *appsv1.StatefulSet
	var cm *corev1.ConfigMap
	for _, res := range k.Resources {
		for _, obj := range decodeAll(t, filepath.Join("base", res)) {
			kinds[obj.GetObjectKind().GroupVersionKind().Kind]++
			switch o := obj.(type) {
			case *appsv1.DaemonSet:
				agent = o
			case *appsv1.Deployment:
				ksr = o
			case *appsv1.StatefulSet:
				etcd = o
			case *corev1.ConfigMap:
				cm = o
			}
		}
	}
	for _, want := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "StatefulSet", "Deployment", "DaemonSet", "Service"} {
		if kinds[want] == 0 {
			t.Errorf("no %s in the base", want)
		}
	}
	if agent == nil || ksr == nil || etcd == nil || cm == nil {
		t.Fatalf("missing workload: agent=%v ksr=%v etcd=%v configmap=%v", agent != nil, ksr != nil, etcd != nil, cm != nil)
	}
	spec := agent.Spec.Template.Spec
	if !spec.HostNetwork {
		t.Error("agent DaemonSet must use the host network")
	}
	c := spec.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("agent needs a /readyz readiness probe")
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Error("agent needs a /healthz liveness probe")
	}
	mounted := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounted[m.Name] = m.MountPath
	}
	if mounted["vpp-api"] != "/run/vpp" {
		t.Errorf("agent must mount /run/vpp, mounts: %v", mounted)
	}
	if got := *ksr.Spec.Replicas; got != 2 {
		t.Errorf("reflector replicas = %d, want 2", got)
	}
	if got := *etcd.Spec.Replicas; got != 3 {
		t.Errorf("etcd members = %d, want 3", got)
	}
	agentCfg, ok := cm.Data["agent.yaml"]
	if !ok {
		t.Fatal("ConfigMap has no agent.yaml")
	}
	cfg, err := contivconf.Parse([]byte(agentCfg))
	if err != nil {
		t.Fatalf("ConfigMap agent.yaml: %v", err)
	}
	cfg.NodeName = "node-1" // set from spec.nodeName at run time
	if err := cfg.Validate(); err != nil {
		t.Fatalf("ConfigMap agent.yaml: %v", err)
	}
}

func TestDockerfilesBuildEveryProgram(t *testing.T) {
	for _, p := range []string{"contiv-agent", "contiv-ksr", "contivctl"} {
		b, err := os.ReadFile(filepath.Join("docker", p+".Dockerfile"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("./cmd/"+p)) {
			t.Errorf("%s.Dockerfile does not build ./cmd/%s", p, p)
		}
		if _, err := os.Stat(filepath.Join("..", "cmd", p)); err != nil {
			t.Errorf("cmd/%s: %v", p, err)
		}
	}
}
