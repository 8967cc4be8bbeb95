package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"contiv.dev/vpp/contivconf"
)

// Every file of a kustomization directory is used, and every variant
// builds and decodes strictly into the Kubernetes API types.
func TestVariantsDecodeStrictly(t *testing.T) {
	for _, v := range variants {
		t.Run(v.dir, func(t *testing.T) {
			k := readKustomization(t, v.dir)
			used := map[string]bool{"kustomization.yaml": true}
			for _, r := range k.Resources {
				used[r] = true
			}
			for _, p := range k.Patches {
				used[p.Path] = true
			}
			files, err := filepath.Glob(filepath.Join(v.dir, "*.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				if !used[filepath.Base(f)] {
					t.Errorf("%s is not listed in kustomization.yaml", f)
				}
			}
			m := render(t, v)
			kinds := map[string]int{}
			for _, o := range m.objs {
				kinds[o.GetObjectKind().GroupVersionKind().Kind]++
			}
			for _, want := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Deployment", "DaemonSet"} {
				if kinds[want] == 0 {
					t.Errorf("no %s", want)
				}
			}
			if (m.etcd != nil) != v.etcd {
				t.Errorf("in-cluster etcd present: %v, want %v", m.etcd != nil, v.etcd)
			}
		})
	}
}

// The agents run a real VPP unless the variant is a development one, with
// the variant's transport, and talk to a shared etcd (never an embedded
// one); the reflector writes into the same etcd.
func TestAgentConfiguration(t *testing.T) {
	for _, v := range variants {
		t.Run(v.dir, func(t *testing.T) {
			m := render(t, v)
			cfg := m.agentConfig(t)
			want := contivconf.SimulateNever
			if v.dev {
				want = contivconf.SimulateAlways
			}
			if cfg.VPP.Simulate != want {
				t.Errorf("vpp.simulate = %s, want %s", cfg.VPP.Simulate, want)
			}
			if cfg.Routing.NodeToNodeTransport != v.transport {
				t.Errorf("routing.nodeToNodeTransport = %s, want %s", cfg.Routing.NodeToNodeTransport, v.transport)
			}
			if cfg.Etcd.UseEmbedded() {
				t.Fatal("the agent would run an embedded etcd of its own: etcd.endpoints is empty")
			}
			ksr := m.resolve(t, m.ksr.Spec.Template.Spec.Containers[0])
			eps, ok := flagValue(ksr.args, "etcd-endpoints")
			if !ok {
				t.Fatal("contiv-ksr has no --etcd-endpoints")
			}
			if got := splitList(eps); !slices.Equal(got, cfg.Etcd.Endpoints) {
				t.Errorf("contiv-ksr writes to etcd %v, the agents read %v", got, cfg.Etcd.Endpoints)
			}
			mounts := map[string]string{}
			for _, vm := range m.agent.Spec.Template.Spec.Containers[0].VolumeMounts {
				mounts[vm.MountPath] = vm.Name
			}
			if mounts[filepath.Dir(cfg.VPP.Socket)] == "" {
				t.Errorf("VPP's socket %s is not on a mounted directory (mounts %v)", cfg.VPP.Socket, mounts)
			}
			if mounts[filepath.Dir(cfg.NodeSync.StateFile)] == "" {
				t.Errorf("the node-ID state file %s is not on a mounted directory (mounts %v)", cfg.NodeSync.StateFile, mounts)
			}
			for _, f := range []string{cfg.Etcd.TLS.CAFile, cfg.Etcd.TLS.CertFile, cfg.Etcd.TLS.KeyFile} {
				if f != "" && !strings.HasPrefix(f, "/etc/contiv/etcd-tls/") {
					t.Errorf("etcd TLS file %s is not in the mounted Secret", f)
				}
			}
		})
	}
}

// The reflector runs two replicas; the in-cluster etcd as many members as
// its initial cluster names.
func TestReplicas(t *testing.T) {
	m := render(t, variants[0])
	if got := *m.ksr.Spec.Replicas; got != 2 {
		t.Errorf("reflector replicas = %d, want 2", got)
	}
	if got := *m.etcd.Spec.Replicas; got != 3 {
		t.Errorf("etcd members = %d, want 3", got)
	}
}

func TestDockerfilesBuildEveryProgram(t *testing.T) {
	for _, p := range []string{"contiv-agent", "contiv-ksr", "contivctl"} {
		b, err := os.ReadFile(filepath.Join("docker", p+".Dockerfile"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "./cmd/"+p) {
			t.Errorf("%s.Dockerfile does not build ./cmd/%s", p, p)
		}
		if _, err := os.Stat(filepath.Join("..", "cmd", p)); err != nil {
			t.Errorf("cmd/%s: %v", p, err)
		}
	}
}
