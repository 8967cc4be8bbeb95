package kubestate

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Fuzz targets for the decoders of untrusted input: values and keys read
// from etcd, and the YAML `contivctl load` reads. Seed corpora are in
// testdata/fuzz/<target>/; `make fuzz` runs each target for FUZZTIME.

// FuzzDecode decodes a value stored under a key of any resource. A refused
// value gets an error naming its key; an accepted one is an object under
// that key which the Writer would store, and encode→decode→encode gives the
// same bytes (what the writer compares to skip unchanged keys).
func FuzzDecode(f *testing.F) {
	for i := range Resources {
		f.Add(uint8(i), "shop", "a", []byte(`{"namespace":"shop","name":"a"}`))
	}
	f.Add(uint8(4), "shop", "frontend", []byte(`{"namespace":"shop","name":"frontend","type":"NodePort","clusterIPs":["10.96.10.10"],"ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":"http","nodePort":30080}],"created":"2025-02-01T09:00:00+01:00"}`))
	f.Add(uint8(5), "shop", "frontend-x", []byte(`{"namespace":"shop","name":"frontend-x","serviceName":"frontend","addressType":"IPv4","ports":[{"name":"http","protocol":"TCP","port":8080}],"endpoints":[{"addresses":["10.1.1.2"],"ready":true,"serving":true,"nodeName":"n1","targetKind":"Pod","targetNamespace":"shop","targetName":"p"}],"triggerTime":"2025-02-01T09:00:00.123Z"}`))
	f.Add(uint8(3), "shop", "p", []byte(`{"namespace":"shop","name":"p","nodeName":"n1","ips":["10.1.1.2"],"hostIP":"192.168.56.101","hostNetwork":true}`))
	f.Add(uint8(1), "", "n1", []byte(`{"name":"n1","podCIDRs":["10.1.1.0/24"],"addresses":[{"type":"InternalIP","address":"192.168.56.101"}]}`))
	f.Add(uint8(0), "", "shop", []byte(`{"name":"shop","labels":{"b":"2","a":"1"},"unknown":[1,2]}`))
	f.Add(uint8(2), "", "n1", []byte(`{"name":"n1","id":4294967295,"vppIPs":["192.168.16.1/24"],"mgmtIPs":["10.0.0.1"]}`))
	f.Add(uint8(2), "", "n1", []byte(`{"name":"n1","id":"1"}`))
	f.Fuzz(func(t *testing.T, res uint8, ns, name string, value []byte) {
		r := Resources[int(res)%len(Resources)]
		if !r.Namespaced() {
			ns = ""
		}
		k := Key{Resource: r, Namespace: ns, Name: name}
		if checkKey(k) != nil {
			return // not a key ParseKey gives
		}
		o, err := Decode(k, value)
		if err != nil {
			if !strings.Contains(err.Error(), k.String()) {
				t.Fatalf("error %q does not name key %s", err, k)
			}
			return
		}
		if o.Key() != k {
			t.Fatalf("decoded %s under key %s", o.Key(), k)
		}
		enc, err := Encode(o)
		if err != nil {
			t.Fatalf("decoded object does not encode: %v", err)
		}
		o2, err := Decode(k, enc)
		if err != nil {
			t.Fatalf("own encoding %s refused: %v", enc, err)
		}
		enc2, err := Encode(o2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable:\n%s\n%s (%v)", enc, enc2, err)
		}
		if len(enc) <= MaxValueSize {
			if _, err := toRaw(PutOp(o2)); err != nil {
				t.Fatalf("the writer refuses a decoded object: %v", err)
			}
		}
	})
}

// FuzzParseKey parses etcd keys. An accepted key formats back to the same
// string and is one the Writer writes; a refused one is named in the error.
// Pod keys carry their node: a parsed pod key lies under its node's
// PodPrefix, only pods have a node, and a pod key of layout 1 (no node
// segment) is refused as ErrOldLayout.
func FuzzParseKey(f *testing.F) {
	for _, r := range Resources {
		f.Add(Key{Resource: r, Namespace: "shop", Name: "a"}.String())
	}
	f.Add(Prefix + "k8s/service/shop")
	f.Add(Prefix + "k8s/service/shop/a/b")
	f.Add(Prefix + "k8s/node/")
	f.Add(Prefix + "nodesync/id/1")
	f.Add(Prefix + "ksr/synced")
	f.Add(Key{Resource: ResPod, Node: "n1", Namespace: "shop", Name: "a"}.String())
	f.Add(Prefix + "k8s/pod/_unscheduled/shop/a")
	f.Add(Prefix + "k8s/pod/shop/a")
	f.Add(Prefix + "k8s/pod/n1//a")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if rest, ok := strings.CutPrefix(s, ResPod.KeyPrefix()); ok && isOldPodKey(rest) && !errors.Is(err, ErrOldLayout) {
			t.Fatalf("layout-1 pod key %q: error %v, want ErrOldLayout", s, err)
		}
		if err == nil && k.Resource == ResPod && !strings.HasPrefix(s, PodPrefix(k.Node)) {
			t.Fatalf("pod key %q parsed to node %q: not under %s", s, k.Node, PodPrefix(k.Node))
		}
		if err == nil && k.Resource != ResPod && k.Node != "" {
			t.Fatalf("key %q of a %s has node %q", s, k.Resource, k.Node)
		}
		if err != nil {
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", s)) {
				t.Fatalf("error %q does not name key %q", err, s)
			}
			return
		}
		if k.String() != s {
			t.Fatalf("ParseKey(%q) = %+v, formats as %q", s, k, k.String())
		}
		if err := checkKey(k); err != nil {
			t.Fatalf("parsed key %q cannot be written: %v", s, err)
		}
	})
}

// isOldPodKey tells whether rest, after the pod prefix, is
// <namespace>/<name>: a layout-1 pod key.
func isOldPodKey(rest string) bool {
	ns, name, ok := strings.Cut(rest, "/")
	return ok && ns != "" && name != "" && !strings.Contains(name, "/")
}

// FuzzLoadYAML reads manifests as `contivctl load -f` does. A refused file
// gets an error naming the document; every object of an accepted one can
// be written and survives its encoding unchanged.
func FuzzLoadYAML(f *testing.F) {
	f.Add([]byte(`apiVersion: v1
kind: Service
metadata: {name: frontend, namespace: shop}
spec:
  type: NodePort
  clusterIP: 10.96.10.10
  ports: [{name: http, port: 80, targetPort: http, nodePort: 30080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: frontend-x
  labels: {kubernetes.io/service-name: frontend}
  annotations: {endpoints.kubernetes.io/last-change-trigger-time: "2025-02-01T09:00:00Z"}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints: [{addresses: [10.1.1.2], nodeName: n1, conditions: {ready: false}}]
`))
	f.Add([]byte(`apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}, spec: {podCIDR: 10.1.1.0/24}}
- {apiVersion: v1, kind: Namespace, metadata: {name: shop, labels: {a: b}}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p}
  spec: {nodeName: n1, hostNetwork: true, containers: [{name: c, image: x}]}
  status: {podIP: 10.1.1.2}
`))
	f.Add([]byte("# only a comment\n---\n"))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	f.Add([]byte("apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {bogus: 1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := LoadYAML(bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "yaml document ") {
				t.Fatalf("error %q does not name the document", err)
			}
			if len(objs) != 0 {
				t.Fatalf("objects returned with an error")
			}
			return
		}
		for _, o := range objs {
			r, err := toRaw(PutOp(o))
			if errors.Is(err, ErrTooLarge) {
				continue
			}
			if err != nil {
				t.Fatalf("loaded object %s cannot be written: %v", o.Key(), err)
			}
			o2, err := Decode(o.Key(), r.val)
			if err != nil {
				t.Fatalf("loaded object %s: its encoding is refused: %v", o.Key(), err)
			}
			if enc2, _ := Encode(o2); !bytes.Equal(enc2, r.val) {
				t.Fatalf("loaded object %s: encoding not stable:\n%s\n%s", o.Key(), r.val, enc2)
			}
		}
	})
}
