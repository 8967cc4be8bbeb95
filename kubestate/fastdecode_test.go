package kubestate_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"contiv.dev/vpp/kubestate"
)

const (
	es  = kubestate.ResEndpointSlice
	svc = kubestate.ResService
	pod = kubestate.ResPod
)

// esValue is an EndpointSlice as the Writer stores it, every field set.
const esValue = `{"namespace":"ns","name":"web-abc","serviceName":"web","addressType":"IPv4",` +
	`"ports":[{"name":"http","protocol":"TCP","port":8080}],` +
	`"endpoints":[{"addresses":["10.1.1.2"],"ready":true,"serving":true,"terminating":true,"nodeName":"node-1",` +
	`"targetKind":"Pod","targetNamespace":"ns","targetName":"web-1","hintZones":["z1"],"hintNodes":["node-1"]}],` +
	`"triggerTime":"2024-01-02T03:04:05.6Z"}`

// trickyValues are the cases where encoding/json's semantics matter, with
// whether the fast path takes them (fast) or leaves them to encoding/json.
var trickyValues = []struct {
	name  string
	res   kubestate.Resource
	value string
	fast  bool
}{
	{"writer output", es, esValue, true},
	{"white space", es, " \t\r\n{ \"name\" : \"a\" ,\n\t\"ports\" : [ { \"port\" : 1 } , null ] } \n", true},
	{"form feed is not white space", es, "{\"name\":\"a\"}\f", false},
	{"empty object", es, `{}`, true},
	{"unknown fields, nested", es, `{"namespace":"ns","x":{"a":[1,-2.5e+3,0.5E-7,{"b":null}],"c":"\u00e9\n\"\\\/\b\f\r\t"},"y":[[[]]],"z":true,"w":false,"name":"a"}`, true},
	{"unknown field with invalid UTF-8", es, "{\"x\":\"\xff\",\"name\":\"a\"}", true},
	{"unknown key repeated", es, `{"x":1,"x":"2","name":"a"}`, true},
	{"nulls", es, `{"namespace":null,"name":"a","ports":null,"endpoints":[null,{"addresses":null,"ready":null,"nodeName":null,"hintZones":null}],"triggerTime":null}`, true},
	{"null elements", es, `{"name":"a","ports":[null,{"port":null}],"endpoints":[{"addresses":[null,"10.1.1.2"],"hintNodes":[null]}]}`, true},
	{"empty arrays", es, `{"name":"a","ports":[],"endpoints":[{"addresses":[],"hintZones":[]}]}`, true},
	{"17 endpoints", es, `{"name":"a","endpoints":[` + strings.Repeat(`{"addresses":["10.1.1.2"]},`, 16) + `{}]}`, true},
	{"UTF-8 value", es, `{"name":"é€😀"}`, true},
	{"escapes in a value", es, `{"name":"a\u00e9\"\\\/\b\f\n\r\t"}`, false},
	{"escaped interned value", es, `{"namespace":"n\u0073","endpoints":[{"nodeName":"node\u002d1"}]}`, false},
	{"surrogate pair", es, `{"name":"\ud83d\ude00"}`, false},
	{"lone surrogate", es, `{"name":"\ud800x"}`, false},
	{"invalid UTF-8 in a value", es, "{\"name\":\"a\xffb\"}", false},
	{"UTF-16 surrogate as UTF-8", es, "{\"name\":\"\xed\xa0\x80\"}", false},
	{"key in another case", es, `{"Name":"a","NAMESPACE":"ns"}`, false},
	{"Kelvin sign in a key", es, "{\"endpoints\":[{\"target\xe2\x84\xaaind\":\"Pod\"}]}", false},
	{"long s in a key", pod, "{\"name\":\"a\",\"ho\xc5\xbftIP\":\"x\"}", false},
	{"escaped key", es, `{"n\u0061me":"a"}`, false},
	{"unknown non-ASCII key", es, "{\"\xc3\xa9\":1,\"name\":\"a\"}", false},
	{"repeated field", es, `{"name":"a","name":"b"}`, false},
	{"repeated field, then null", es, `{"name":"a","name":null}`, false},
	{"repeated array, shorter and with null", es, `{"endpoints":[{"addresses":["a","b"],"addresses":[null]}]}`, false},
	{"repeated array of structs", es, `{"ports":[{"name":"x","port":1},{"port":2}],"ports":[{"port":3}]}`, false},
	{"repeated time", es, `{"triggerTime":"2024-01-02T03:04:05Z","triggerTime":null}`, false},
	{"string for a number", es, `{"ports":[{"port":"80"}]}`, false},
	{"number for a bool", es, `{"endpoints":[{"ready":1}]}`, false},
	{"number for a string", es, `{"name":1}`, false},
	{"object for an array", es, `{"ports":{}}`, false},
	{"string for an array", es, `{"endpoints":[{"addresses":"a"}]}`, false},
	{"number for an object", es, `{"ports":[1]}`, false},
	{"array at the top", es, `[]`, false},
	{"null at the top", es, `null`, false},
	{"string at the top", es, `"x"`, false},
	{"largest int32", es, `{"ports":[{"port":2147483647}]}`, true},
	{"smallest int32", es, `{"ports":[{"port":-2147483648}]}`, true},
	{"minus zero", es, `{"ports":[{"port":-0}]}`, true},
	{"int32 overflow", es, `{"ports":[{"port":2147483648}]}`, false},
	{"int32 underflow", es, `{"ports":[{"port":-2147483649}]}`, false},
	{"int64 overflow", es, `{"ports":[{"port":99999999999999999999}]}`, false},
	{"fraction", es, `{"ports":[{"port":1.0}]}`, false},
	{"exponent", es, `{"ports":[{"port":1e2}]}`, false},
	{"leading zero", es, `{"ports":[{"port":01}]}`, false},
	{"lone minus", es, `{"ports":[{"port":-}]}`, false},
	{"trailing comma in an array", es, `{"x":[1,]}`, false},
	{"trailing comma in an object", es, `{"name":"a",}`, false},
	{"bad literal", es, `{"x":tru}`, false},
	{"literal run on", es, `{"endpoints":[{"ready":truex}]}`, false},
	{"control character", es, "{\"x\":\"a\x01\"}", false},
	{"short \\u escape", es, `{"x":"\u12"}`, false},
	{"bad escape", es, `{"x":"\q"}`, false},
	{"leading zero, unknown field", es, `{"x":01}`, false},
	{"fraction without digits", es, `{"x":1.}`, false},
	{"exponent without digits", es, `{"x":1e+}`, false},
	{"garbage after the value", es, `{"name":"a"} x`, false},
	{"two values", es, `{"name":"a"}{}`, false},
	{"NUL after the value", es, "{\"name\":\"a\"}\x00", false},
	{"missing colon", es, `{"name" "a"}`, false},
	{"lone comma", es, `{,}`, false},
	{"number key", es, `{1:2}`, false},
	{"empty", es, ``, false},
	{"unterminated object", es, `{`, false},
	{"unterminated string", es, `{"name":"a`, false},
	{"unknown field nested 50 deep", es, `{"x":` + strings.Repeat("[", 50) + strings.Repeat("]", 50) + `}`, true},
	{"unknown field nested 500 deep", es, `{"x":` + strings.Repeat(`{"a":`, 500) + "1" + strings.Repeat("}", 500) + `}`, false},
	{"unknown field nested past encoding/json's limit", es, `{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, false},
	{"time with an offset", es, `{"triggerTime":"2025-02-01T09:00:00+01:00"}`, true},
	{"bad time", es, `{"triggerTime":"2025-13-01T00:00:00Z"}`, false},
	{"time not a string", es, `{"triggerTime":1}`, false},
	{"escaped time", es, `{"triggerTime":"2025-02-01T09:00:00\u005a"}`, false},
	{"service, writer output", svc, `{"namespace":"ns","name":"web","type":"LoadBalancer","clusterIPs":["10.96.0.7","fd00::7"],` +
		`"externalIPs":["192.0.2.1"],"lbIngressIPs":["203.0.113.1"],"lbProxyIPs":["203.0.113.2"],` +
		`"ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":"web","nodePort":30080}],"healthCheckNodePort":32000,` +
		`"loadBalancerSourceRanges":["10.0.0.0/8"],"trafficDistribution":"PreferClose","externalTrafficPolicy":"Local",` +
		`"internalTrafficPolicy":"Cluster","sessionAffinity":"ClientIP","sessionAffinityTimeout":60,"proxyName":"other",` +
		`"created":"2024-05-06T07:08:09Z"}`, true},
	{"service, negative timeout", svc, `{"name":"a","sessionAffinityTimeout":-1}`, true},
	{"service, headless", svc, `{"name":"a","clusterIPs":["None"]}`, true},
	{"service, bad created", svc, `{"name":"a","created":"yesterday"}`, false},
	{"service, repeated port", svc, `{"name":"a","ports":[{"port":1,"port":2}]}`, false},
	{"pod, writer output", pod, `{"namespace":"ns","name":"p","nodeName":"n1","ips":["10.1.1.2","fd00::2"],"hostIP":"192.168.56.101","hostNetwork":true}`, true},
	{"pod, hostNetwork false", pod, `{"name":"p","hostNetwork":false}`, true},
	{"node, not on the fast path", kubestate.ResNode, `{"name":"n1","podCIDRs":["10.1.1.0/24"]}`, false},
	{"namespace, not on the fast path", kubestate.ResNamespace, `{"name":"ns","labels":{"a":"b"}}`, false},
	{"vppnode, not on the fast path", kubestate.ResVppNode, `{"name":"n1","id":1}`, false},
}

// TestDecodeFastTricky checks the fast path against encoding/json where
// their semantics could part, and which of those cases it takes.
func TestDecodeFastTricky(t *testing.T) {
	for _, c := range trickyValues {
		t.Run(c.name, func(t *testing.T) {
			fast, diff := kubestate.CompareDecodeFast(c.res, []byte(c.value))
			if diff != "" {
				t.Fatal(diff)
			}
			if fast != c.fast {
				t.Errorf("fast path taken: %v, want %v", fast, c.fast)
			}
		})
	}
}

// TestDecodeFastTakesWriterOutput checks that the fast path takes the
// fuzz target's seeds of its resources (what the Writer stores, and the
// same reindented) and agrees with encoding/json on every seed.
func TestDecodeFastTakesWriterOutput(t *testing.T) {
	for _, s := range seedValues(t) {
		fast, diff := kubestate.CompareDecodeFast(s.res, s.value)
		if diff != "" {
			t.Fatalf("%s: %s", s.value, diff)
		}
		if want := s.res == es || s.res == svc || s.res == pod; fast != want {
			t.Errorf("%s %s: fast path taken: %v", s.res, s.value, fast)
		}
	}
}

// TestDecodeEndpointSliceAllocations holds the fast path to its few
// allocations for a slice of 11 endpoints: the object, its endpoints and
// the strings moved out of the value; nothing per endpoint (their
// addresses are held as addresses), and its ports are the list of ports
// other slices decoded hold (cached after the first run). Every
// repeated string is interned (cached after the first run).
func TestDecodeEndpointSliceAllocations(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"namespace":"ns","name":"web-abc","serviceName":"web","addressType":"IPv4","ports":[{"name":"http","protocol":"TCP","port":8080}],"endpoints":[`)
	for i := range 11 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"addresses":["10.1.%d.2"],"ready":true,"serving":true,"nodeName":"node-%d","targetKind":"Pod","targetNamespace":"ns","targetName":"web-%d"}`, i, i, i)
	}
	b.WriteString(`]}`)
	value := []byte(b.String())
	k := kubestate.Key{Resource: es, Namespace: "ns", Name: "web-abc"}
	var got *kubestate.EndpointSlice
	allocs := testing.AllocsPerRun(100, func() {
		o, err := kubestate.Decode(k, value)
		if err != nil {
			t.Fatal(err)
		}
		got = o.(*kubestate.EndpointSlice)
	})
	if len(got.Endpoints) != 11 || got.Endpoints[10].Address(0) != "10.1.10.2" {
		t.Fatalf("decoded %+v", got)
	}
	if allocs > 3 {
		t.Errorf("%.0f allocations per decode, want at most 3", allocs)
	}
	for i, e := range got.Endpoints {
		if a, ok := e.Addr(); !ok || a != netip.AddrFrom4([4]byte{10, 1, byte(i), 2}) {
			t.Errorf("endpoint %d: address %v %v, want 10.1.%d.2 held as an address", i, a, ok, i)
		}
	}
}
