package kubestate

import (
	"reflect"
	"testing"
	"unsafe"
)

// storedCases are keys and values DecodeStored must read as ParseKey and
// Decode do: in the Writer's form and not, under their own key and under
// keys that name another object or that ParseKey refuses.
var storedCases = []struct{ key, value string }{
	{Prefix + "k8s/service/shop/frontend", `{"namespace":"shop","name":"frontend","clusterIPs":["10.96.10.10"],"ports":[{"protocol":"TCP","port":80}]}`},
	{Prefix + "k8s/service/shop/frontend", `{ "namespace": "shop", "name": "frontend" }`}, // not the Writer's form
	{Prefix + "k8s/service/shop/frontend", `{"namespace":"shop","name":"other"}`},
	{Prefix + "k8s/service/shop/front/end", `{"namespace":"shop","name":"front/end"}`},
	{Prefix + "k8s/service/sh/op/frontend", `{"namespace":"sh/op","name":"frontend"}`},
	{Prefix + "k8s/service//frontend", `{"namespace":"","name":"frontend"}`},
	{Prefix + "k8s/service/shop/", `{"namespace":"shop","name":""}`},
	{Prefix + "k8s/service/shop", `{"namespace":"shop","name":""}`},
	{Prefix + "k8s/service/", `{}`},
	{Prefix + "k8s/service/shop/frontend", `{broken`},
	{Prefix + "k8s/endpointslice/shop/frontend-x", `{"namespace":"shop","name":"frontend-x","serviceName":"frontend","addressType":"IPv4","ports":[{"name":"http","protocol":"TCP","port":8080}],"endpoints":[{"addresses":["10.1.1.2"],"ready":true,"nodeName":"n1"}]}`},
	{Prefix + "k8s/endpointslice/shop/frontend-x", `{"namespace":"shop","name":"frontend-y","serviceName":"frontend"}`},
	{Prefix + "k8s/endpointslice/shop/frontend-x/", `{"namespace":"shop","name":"frontend-x/"}`},
	{Prefix + "k8s/pod/n1/shop/p", `{"namespace":"shop","name":"p","nodeName":"n1","ips":["10.1.1.2"]}`},
	{Prefix + "k8s/pod/n1/shop/p", `{"namespace":"shop","name":"p","nodeName":"n2"}`},
	{Prefix + "k8s/pod/_unscheduled/shop/p", `{"namespace":"shop","name":"p"}`},
	{Prefix + "k8s/pod/_unscheduled/shop/p", `{"namespace":"shop","name":"p","nodeName":"_unscheduled"}`},
	{Prefix + "k8s/pod//shop/p", `{"namespace":"shop","name":"p"}`},
	{Prefix + "k8s/pod/shop/p", `{"namespace":"shop","name":"p"}`}, // layout 1
	{Prefix + "k8s/pod/n1/shop/p/q", `{"namespace":"shop","name":"p/q","nodeName":"n1"}`},
	{Prefix + "k8s/pod/n/1/shop/p", `{"namespace":"shop","name":"p","nodeName":"n/1"}`},
	{Prefix + "k8s/namespace/shop", `{"name":"shop"}`},
	{Prefix + "k8s/namespace/shop", `{"name":"other"}`},
	{Prefix + "k8s/node/n1", `{"name":"n1"}`},
	{Prefix + "nodesync/node/n1", `{"name":"n1","id":1}`},
	{Prefix + "k8s/secret/shop/s", `{"namespace":"shop","name":"s"}`},
	{Prefix + "k8s/s", `{}`},
	{"/elsewhere/k8s/service/shop/frontend", `{"namespace":"shop","name":"frontend"}`},
}

// checkStored fails t unless DecodeStored reads key and value as ParseKey
// and Decode do, with the key's strings the object's.
func checkStored(t *testing.T, key, value []byte) {
	t.Helper()
	k, o, err := DecodeStored(key, value)
	wk, perr := ParseKey(string(key))
	var wo Object
	werr := perr
	if perr == nil {
		wo, werr = Decode(wk, value)
	}
	switch {
	case (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error():
		t.Fatalf("%s: error %v, ParseKey and Decode give %v", key, err, werr)
	case k != wk:
		t.Fatalf("%s: key %#v, ParseKey gives %#v", key, k, wk)
	case !reflect.DeepEqual(o, wo):
		t.Fatalf("%s: object %#v, Decode gives %#v", key, o, wo)
	case o != nil && (unsafe.StringData(k.Name) != unsafe.StringData(o.Key().Name) || unsafe.StringData(k.Namespace) != unsafe.StringData(o.Key().Namespace)):
		t.Fatalf("%s: the key's strings are not the object's", key)
	}
}

func TestDecodeStoredIsParseKeyAndDecode(t *testing.T) {
	for _, c := range storedCases {
		checkStored(t, []byte(c.key), []byte(c.value))
	}
}

// FuzzDecodeStored checks DecodeStored against ParseKey and Decode.
func FuzzDecodeStored(f *testing.F) {
	for _, c := range storedCases {
		f.Add([]byte(c.key), []byte(c.value))
	}
	f.Fuzz(func(t *testing.T, key, value []byte) { checkStored(t, key, value) })
}
