package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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

// variant is one deployable tree: the base or an overlay.
type variant struct {
	dir string
	// dev variants may use Services and cluster DNS (their cluster has its
	// own) and the simulated VPP.
	dev bool
	// transport is the node-to-node transport the agents must get.
	transport contivconf.Transport
	// etcd says whether the variant runs the in-cluster etcd.
	etcd bool
}

var variants = []variant{
	{dir: "base", transport: contivconf.TransportVXLAN, etcd: true},
	{dir: "overlays/vxlan", transport: contivconf.TransportVXLAN, etcd: true},
	{dir: "overlays/nooverlay", transport: contivconf.TransportNoOverlay, etcd: true},
	{dir: "overlays/external-etcd", transport: contivconf.TransportVXLAN},
	{dir: "overlays/dev-kind", dev: true, transport: contivconf.TransportVXLAN, etcd: true},
}

// manifests are the decoded objects of one variant.
type manifests struct {
	objs       []runtime.Object
	configMaps map[string]*corev1.ConfigMap
	agent      *appsv1.DaemonSet
	ksr        *appsv1.Deployment
	etcd       *appsv1.StatefulSet
	services   []*corev1.Service
}

func index(t *testing.T, objs []runtime.Object) *manifests {
	t.Helper()
	m := &manifests{objs: objs, configMaps: map[string]*corev1.ConfigMap{}}
	for _, obj := range objs {
		switch o := obj.(type) {
		case *appsv1.DaemonSet:
			if m.agent != nil {
				t.Fatalf("two DaemonSets: %s and %s", m.agent.Name, o.Name)
			}
			m.agent = o
		case *appsv1.Deployment:
			if m.ksr != nil {
				t.Fatalf("two Deployments: %s and %s", m.ksr.Name, o.Name)
			}
			m.ksr = o
		case *appsv1.StatefulSet:
			m.etcd = o
		case *corev1.ConfigMap:
			m.configMaps[o.Name] = o
		case *corev1.Service:
			m.services = append(m.services, o)
		}
	}
	if m.agent == nil || m.ksr == nil {
		t.Fatalf("missing workload: agent=%v ksr=%v", m.agent != nil, m.ksr != nil)
	}
	return m
}

// podSpecs are the pod templates of the variant's workloads, by kind/name.
func (m *manifests) podSpecs() map[string]*corev1.PodSpec {
	out := map[string]*corev1.PodSpec{
		"DaemonSet/" + m.agent.Name: &m.agent.Spec.Template.Spec,
		"Deployment/" + m.ksr.Name:  &m.ksr.Spec.Template.Spec,
	}
	if m.etcd != nil {
		out["StatefulSet/"+m.etcd.Name] = &m.etcd.Spec.Template.Spec
	}
	return out
}

// decodeStream strictly decodes every document of a YAML stream.
func decodeStream(t *testing.T, name string, data []byte) []runtime.Object {
	t.Helper()
	strict := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []runtime.Object
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", name, i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := strict.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: document %d: %v", name, i, err)
		}
		objs = append(objs, obj)
	}
	return objs
}

// kustomization is the part of kustomization.yaml the tests read.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
	Patches    []struct {
		Path string `json:"path"`
	} `json:"patches"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(raw, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	return k
}

// render builds a variant with kubectl's kustomize when kubectl is
// installed; without it only the base is read, file by file.
func render(t *testing.T, v variant) *manifests {
	t.Helper()
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		out, err := exec.Command(kubectl, "kustomize", v.dir).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("kubectl kustomize %s: %v\n%s", v.dir, err, ee.Stderr)
			}
			t.Fatalf("kubectl kustomize %s: %v", v.dir, err)
		}
		return index(t, decodeStream(t, v.dir, out))
	}
	if v.dir != "base" {
		t.Skipf("kubectl not installed: cannot build %s", v.dir)
	}
	k := readKustomization(t, v.dir)
	var objs []runtime.Object
	for _, res := range k.Resources {
		data, err := os.ReadFile(filepath.Join(v.dir, res))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, decodeStream(t, res, data)...)
	}
	return index(t, objs)
}

// Values the downward API gives in the tests.
var fieldValues = map[string]string{
	"spec.nodeName":      "master-1",
	"status.hostIP":      "192.168.16.11",
	"status.podIP":       "192.168.16.11",
	"metadata.name":      "pod-0",
	"metadata.namespace": "contiv-system",
}

// varRef is a $(VAR) reference, expanded by the kubelet in env values,
// command and args.
var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func expand(s string, env map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		if v, ok := env[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref // the kubelet leaves unknown references as they are
	})
}

// resolved is a container as the kubelet starts it: its environment and its
// command line with references expanded.
type resolved struct {
	env  map[string]string
	args []string // command then args
}

// resolve expands a container's environment (values, downward API,
// ConfigMap keys of the same variant) and command line as the kubelet does.
func (m *manifests) resolve(t *testing.T, c corev1.Container) resolved {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expand(e.Value, env)
		case e.ValueFrom.FieldRef != nil:
			v, ok := fieldValues[e.ValueFrom.FieldRef.FieldPath]
			if !ok {
				t.Fatalf("container %s: env %s: field %s unknown to the test", c.Name, e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			env[e.Name] = v
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm := m.configMaps[ref.Name]
			if cm == nil {
				t.Fatalf("container %s: env %s: no ConfigMap %s in the manifests", c.Name, e.Name, ref.Name)
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				t.Fatalf("container %s: env %s: ConfigMap %s has no key %s", c.Name, e.Name, ref.Name, ref.Key)
			}
			env[e.Name] = v
		default:
			t.Fatalf("container %s: env %s: a source the test does not resolve", c.Name, e.Name)
		}
	}
	r := resolved{env: env}
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		if x := expand(a, env); varRef.MatchString(x) {
			t.Errorf("container %s: %q refers to an undefined variable", c.Name, a)
		} else {
			r.args = append(r.args, x)
		}
	}
	return r
}

// flagValue is the value of --name=value (or -name=value) in args.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		a = strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// agentConfig is the configuration an agent container runs with: the
// mounted file, then its environment, then its flags, as contiv-agent
// resolves them.
func (m *manifests) agentConfig(t *testing.T) contivconf.Config {
	t.Helper()
	spec := m.agent.Spec.Template.Spec
	c := spec.Containers[0]
	r := m.resolve(t, c)
	fs := flag.NewFlagSet("contiv-agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", "", "")
	contivconf.RegisterFlags(fs)
	if err := fs.Parse(r.args); err != nil {
		t.Fatalf("agent args %q: %v", r.args, err)
	}
	file := ""
	if *configPath != "" {
		file = m.mountedFile(t, spec, c, *configPath)
	}
	cfg, err := contivconf.Resolve(contivconf.Sources{
		File:  file,
		Env:   func(k string) (string, bool) { v, ok := r.env[k]; return v, ok },
		Flags: fs,
	})
	if err != nil {
		t.Fatalf("agent configuration: %v", err)
	}
	return cfg
}

// mountedFile writes the ConfigMap key that container c sees at path into
// a temporary file and returns that file's path.
func (m *manifests) mountedFile(t *testing.T, spec corev1.PodSpec, c corev1.Container, path string) string {
	t.Helper()
	v, rel := mountedVolume(spec, c, path, func(v corev1.Volume) bool { return v.ConfigMap != nil })
	if v == nil {
		t.Fatalf("%s is not in a ConfigMap mounted into %s", path, c.Name)
	}
	cm := m.configMaps[v.ConfigMap.Name]
	if cm == nil {
		t.Fatalf("volume %s: no ConfigMap %s", v.Name, v.ConfigMap.Name)
	}
	data, ok := cm.Data[rel]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %s (mounted at %s)", cm.Name, rel, path)
	}
	f := filepath.Join(t.TempDir(), rel)
	if err := os.WriteFile(f, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// mountedVolume is the volume of spec, of the kind want accepts, that
// container c mounts where path is, and path relative to the mount; nil
// when there is none.
func mountedVolume(spec corev1.PodSpec, c corev1.Container, path string, want func(corev1.Volume) bool) (*corev1.Volume, string) {
	for _, vm := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(path, strings.TrimSuffix(vm.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for i, v := range spec.Volumes {
			if v.Name == vm.Name && want(v) {
				return &spec.Volumes[i], rel
			}
		}
	}
	return nil, ""
}

func splitList(s string) []string {
	var out []string
	for e := range strings.SplitSeq(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
