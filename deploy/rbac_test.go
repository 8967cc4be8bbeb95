package deploy

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/noderegistry"
	"contiv.dev/vpp/plugins/ksr"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// access is one API request kind: verb on group/resource, cluster-wide or
// in the reflector's namespace.
type access struct {
	namespaced bool
	group      string
	resource   string
	verb       string
}

func (a access) String() string {
	scope := "cluster"
	if a.namespaced {
		scope = "namespace"
	}
	return scope + " " + a.verb + " " + a.group + "/" + a.resource
}

// reflectorAccess runs a real reflector (leader election on, releasing
// deleted nodes' NodeSync records as contiv-ksr does) against a fake API and
// a real etcd until it leads and is in sync, and returns every kind of API
// request it made, and its HTTP handler while it ran. etcd holds the record
// of a node the API does not have, so the sweep checks it in the API and
// releases it.
func reflectorAccess(t *testing.T, probe func(h http.Handler)) []access {
	t.Helper()
	e := etcdtest.Start(t)
	cli := e.Client()
	kube := fake.NewClientset()
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	_, err := noderegistry.Claim(cctx, noderegistry.Params{Client: cli, Name: "node-gone"})
	ccancel()
	if err != nil {
		t.Fatal(err)
	}
	r, err := ksr.New(ksr.Params{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Kube:   kube,
		Etcd:   cli,
		Nodes: ksr.NodeReleaserFunc(func(ctx context.Context, etcd ksr.Etcd, name string) error {
			return noderegistry.Release(ctx, etcd, name, 0)
		}),
		Identity: "ksr-0",
		Election: &ksr.Election{
			Namespace: "contiv-system", Name: ksr.DefaultLeaseName,
			LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond,
		},
		EtcdTimeout:   5 * time.Second,
		ProbeInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	// A leader renews its Lease: wait for one renewal too, so that every
	// kind of request a leader makes has been made.
	renewed := func() bool {
		return slices.ContainsFunc(kube.Actions(), func(a k8stesting.Action) bool {
			return a.GetVerb() == "update" && a.GetResource().Resource == "leases"
		})
	}
	deadline := time.Now().Add(30 * time.Second) // bounds a hung test only
	for s := r.Status(); !s.Leader || !s.Synced || !renewed(); s = r.Status() {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("reflector never led in sync: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	probe(r.HTTP("", nil).Handler())
	cancel()
	<-done
	seen := map[access]bool{}
	for _, a := range kube.Actions() {
		gvr := a.GetResource()
		seen[access{namespaced: a.GetNamespace() != "", group: gvr.Group, resource: gvr.Resource, verb: a.GetVerb()}] = true
	}
	return sortedAccess(seen)
}

func sortedAccess(m map[access]bool) []access {
	var out []access
	for a := range m {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// granted expands RBAC rules into accesses.
func granted(rules []rbacv1.PolicyRule, namespaced bool) map[access]bool {
	out := map[access]bool{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out[access{namespaced: namespaced, group: g, resource: res, verb: v}] = true
				}
			}
		}
	}
	return out
}

// The reflector's RBAC grants exactly what the reflector does — the lists
// and watches of its informers, the get of a Node before a release, its
// Lease calls — derived by running it,
// not by reading its code. Its probes hit endpoints its server has, on the
// port it listens on.
func TestReflectorRBACAndProbes(t *testing.T) {
	m := render(t, variants[0])
	c := m.ksr.Spec.Template.Spec.Containers[0]
	probes := map[string]int{} // path → port
	for _, p := range slices.DeleteFunc(slicesOf(c.LivenessProbe, c.ReadinessProbe, c.StartupProbe), isNilProbe) {
		if p.HTTPGet == nil {
			t.Fatal("contiv-ksr probe is not an HTTP GET")
		}
		probes[p.HTTPGet.Path] = p.HTTPGet.Port.IntValue()
	}
	if len(probes) < 2 {
		t.Errorf("contiv-ksr probes %v: want liveness and readiness", probes)
	}
	did := reflectorAccess(t, func(h http.Handler) {
		for path := range probes {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
			if w.Code != http.StatusOK {
				t.Errorf("contiv-ksr %s answers %d for a leader in sync", path, w.Code)
			}
		}
	})
	addr, _ := flagValue(m.resolve(t, c).args, "http-addr")
	_, port, _ := strings.Cut(addr, ":")
	for path, p := range probes {
		if strconv.Itoa(p) != port {
			t.Errorf("contiv-ksr probe %s on port %d, the reflector listens on %s", path, p, addr)
		}
	}

	want := map[access]bool{}
	var clusterRules, nsRules []rbacv1.PolicyRule
	for _, o := range m.objs {
		switch r := o.(type) {
		case *rbacv1.ClusterRoleBinding:
			if bindsKSR(r.Subjects) {
				clusterRules = append(clusterRules, roleRules(t, m, "ClusterRole", r.RoleRef.Name)...)
			}
		case *rbacv1.RoleBinding:
			if bindsKSR(r.Subjects) {
				nsRules = append(nsRules, roleRules(t, m, r.RoleRef.Kind, r.RoleRef.Name)...)
			}
		}
	}
	for a := range granted(clusterRules, false) {
		want[a] = true
	}
	for a := range granted(nsRules, true) {
		want[a] = true
	}
	got := map[access]bool{}
	for _, a := range did {
		got[a] = true
		if !want[a] && !(a.namespaced && want[access{group: a.group, resource: a.resource, verb: a.verb}]) {
			t.Errorf("the reflector needs %s; RBAC does not grant it", a)
		}
	}
	for _, a := range sortedAccess(want) {
		if !got[a] {
			t.Errorf("RBAC grants %s; the reflector never does it", a)
		}
	}
}

func slicesOf[T any](xs ...T) []T { return xs }

func isNilProbe[T comparable](p T) bool { var zero T; return p == zero }

func bindsKSR(subjects []rbacv1.Subject) bool {
	return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
		return s.Kind == "ServiceAccount" && s.Name == "contiv-ksr"
	})
}

func roleRules(t *testing.T, m *manifests, kind, name string) []rbacv1.PolicyRule {
	t.Helper()
	for _, o := range m.objs {
		switch r := o.(type) {
		case *rbacv1.ClusterRole:
			if kind == "ClusterRole" && r.Name == name {
				return r.Rules
			}
		case *rbacv1.Role:
			if kind == "Role" && r.Name == name {
				return r.Rules
			}
		}
	}
	t.Fatalf("no %s %s", kind, name)
	return nil
}
