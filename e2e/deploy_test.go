package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// deployVariants are the trees of ../deploy: the base and every overlay.
func deployVariants(t testing.TB) []string {
	t.Helper()
	out := []string{"../deploy/base"}
	entries, err := os.ReadDir("../deploy/overlays")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, "../deploy/overlays/"+e.Name())
		}
	}
	return out
}

// kustomize builds the variant in dir into its objects.
func kustomize(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range m.Resources() {
		obj, err := r.Map()
		if err != nil {
			t.Fatalf("kustomize %s: %v", dir, err)
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
	return out
}

// applyDeploy server-side applies every variant of deploy/ to the API
// server, which validates their schema and RBAC. The base is applied for
// real (it creates the reflector's ServiceAccount and RBAC); the overlays,
// which replace the same objects, as a dry run that still passes every
// validation and admission step.
func applyDeploy(t testing.TB, cp *controlPlane) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cp.admin)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cp.kube.Discovery()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, dir := range deployVariants(t) {
		dry := dir != "../deploy/base"
		objs := kustomize(t, dir)
		// Namespaces first: the namespaced objects need theirs.
		slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
			return boolInt(b.GetKind() == "Namespace") - boolInt(a.GetKind() == "Namespace")
		})
		for _, o := range objs {
			gvk := o.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Fatalf("%s: %s %s: %v", dir, gvk, o.GetName(), err)
			}
			data, err := json.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			opts := metav1.PatchOptions{FieldManager: "contiv-e2e", Force: new(true)}
			if dry && o.GetKind() != "Namespace" {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if o.GetNamespace() != "" {
				ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
			}
			if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, opts); err != nil {
				t.Errorf("%s: server-side apply of %s %s/%s: %v", dir, gvk.Kind, o.GetNamespace(), o.GetName(), err)
			}
		}
		t.Logf("%s: %d objects applied (dry run: %v)", dir, len(objs), dry)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// auditPolicy records every request of the reflector's ServiceAccount
// (metadata only) and nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    users: ["system:serviceaccount:` + ksrNamespace + `:` + ksrAccount + `"]
  - level: None
`

// auditEvent is the part of an audit event the checks read.
type auditEvent struct {
	Verb      string                    `json:"verb"`
	User      struct{ Username string } `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Stage string `json:"stage"`
}

// request is one kind of API call: what RBAC decides on.
type request struct {
	verb, group, resource, subresource, namespace, name string
}

func (r request) String() string {
	s := r.verb + " " + r.resource
	if r.group != "" {
		s += "." + r.group
	}
	if r.subresource != "" {
		s += "/" + r.subresource
	}
	if r.namespace != "" {
		s += " in " + r.namespace
	}
	if r.name != "" {
		s += " named " + r.name
	}
	return s
}

// ksrRequests reads the audit log: every distinct request the reflector's
// ServiceAccount made, and those the API server refused with 403.
func ksrRequests(t testing.TB, path string) (all []request, forbidden map[request]int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[request]bool{}
	forbidden = map[request]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log: %v", err)
		}
		if e.ObjectRef == nil || e.Stage != "ResponseComplete" && e.Stage != "Panic" {
			continue
		}
		r := request{verb: e.Verb, group: e.ObjectRef.APIGroup, resource: e.ObjectRef.Resource,
			subresource: e.ObjectRef.Subresource, namespace: e.ObjectRef.Namespace, name: e.ObjectRef.Name}
		if r.namespace == missingLeaseNamespace {
			continue // the misconfigured replica of the noLeader scenario
		}
		if !seen[r] {
			seen[r] = true
			all = append(all, r)
		}
		if e.ResponseStatus != nil && e.ResponseStatus.Code == 403 {
			forbidden[r]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, func(a, b request) int { return strings.Compare(a.String(), b.String()) })
	return all, forbidden
}

// checkKSRAccess asks the API server's authorizer (SubjectAccessReview),
// for every request the reflector made during the test, whether deploy/
// base's RBAC allows it to its ServiceAccount, and fails on any denial or
// any request the API server refused.
func checkKSRAccess(t testing.TB, cp *controlPlane) {
	t.Helper()
	all, forbidden := ksrRequests(t, cp.auditLog)
	if len(all) == 0 {
		t.Fatal("the audit log holds no request of the reflector")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	for _, r := range all {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + ksrNamespace + ":" + ksrAccount,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ksrNamespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: r.verb, Group: r.group, Resource: r.resource,
				Subresource: r.subresource, Namespace: r.namespace, Name: r.name},
		}}
		res, err := cp.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SubjectAccessReview of %s: %v", r, err)
		}
		if !res.Status.Allowed {
			errs = append(errs, fmt.Errorf("deploy/base's RBAC does not allow the reflector to %s (%s); refused %d times", r, res.Status.Reason, forbidden[r]))
		}
		t.Logf("reflector request %-60s allowed=%v refused=%d", r, res.Status.Allowed, forbidden[r])
		// A request RBAC allows may still have been refused while a
		// restarted API server's authorizer was filling its caches.
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}
