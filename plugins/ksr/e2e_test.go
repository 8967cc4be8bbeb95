package ksr

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/netip"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	svcproc "contiv.dev/vpp/plugins/service"
	sr "contiv.dev/vpp/servicerenderer"
)

// readManifests decodes the Kubernetes objects of a multi-document YAML
// file, giving namespaced objects without a namespace "default".
func readManifests(t *testing.T, path string) []runtime.Object {
	t.Helper()
	file, err := os.Open(path)
	require.NoError(t, err)
	defer file.Close()
	sch := runtime.NewScheme()
	require.NoError(t, errors.Join(corev1.AddToScheme(sch), discoveryv1.AddToScheme(sch)))
	dec := serializer.NewCodecFactory(sch, serializer.EnableStrict).UniversalDeserializer()
	yr := utilyaml.NewYAMLReader(bufio.NewReader(file))
	var out []runtime.Object
	for {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		j, err := utilyaml.ToJSON(doc)
		require.NoError(t, err)
		if string(j) == "null" {
			continue
		}
		obj, _, err := dec.Decode(j, nil, nil)
		require.NoError(t, err)
		if m, ok := obj.(metav1.Object); ok && m.GetNamespace() == "" {
			if _, cluster := obj.(*corev1.Node); !cluster {
				if _, cluster := obj.(*corev1.Namespace); !cluster {
					m.SetNamespace(kubestate.DefaultNamespace)
				}
			}
		}
		out = append(out, obj)
	}
}

// thisNode is node-1 of deploy/examples/cluster.yaml, for the processor.
type thisNode struct{}

func (thisNode) NodeName() string { return "node-1" }
func (thisNode) NodeID() uint32   { return 1 }
func (thisNode) NodeIPs() []netip.Addr {
	return []netip.Addr{netip.MustParseAddr("192.168.16.1"), netip.MustParseAddr("192.168.56.101")}
}
func (thisNode) PodSubnetThisNode() netip.Prefix { return netip.MustParsePrefix("10.1.1.0/24") }
func (thisNode) PodSubnetAllNodes() netip.Prefix { return netip.MustParsePrefix("10.1.0.0/16") }

type noInterfaces struct{}

func (noInterfaces) InterfaceByTag(string) (string, bool) { return "", false }

// processed is what the service processor derives from objs.
func processed(t *testing.T, objs map[kubestate.Key]kubestate.Object) []*sr.ContivService {
	t.Helper()
	p, err := svcproc.New(svcproc.Params{Node: thisNode{}, Subnets: thisNode{}, Interfaces: noInterfaces{}})
	require.NoError(t, err)
	require.NoError(t, p.Resync(context.Background(), &controller.ResyncEvent{
		Kind:  controller.ResyncStartup,
		State: &controller.Snapshot{Objects: objs},
	}))
	return p.Services()
}

// The example cluster goes through the fake API, the reflector and etcd;
// the agent's service processor derives from what etcd holds exactly what
// it derives from the same objects converted directly.
func TestEndToEndTheProcessorSeesTheSameServices(t *testing.T) {
	objs := readManifests(t, "../../deploy/examples/cluster.yaml")
	direct := make(map[kubestate.Key]kubestate.Object)
	for _, o := range objs {
		m, err := kubestate.FromK8s(o)
		require.NoError(t, err)
		direct[m.Key()] = m
	}
	f := newFixture(t, objs...)
	r := f.start(Params{})
	r.waitSynced(t, 1)
	f.waitEqual()

	l, err := kubestate.ListAll(context.Background(), f.cli)
	require.NoError(t, err)
	require.Empty(t, l.Bad)
	require.True(t, equalState(direct, l.Objects), "etcd holds the direct conversion")

	want := processed(t, direct)
	got := processed(t, l.Objects)
	require.Len(t, got, len(want))
	require.GreaterOrEqual(t, len(want), 8, "the example's services are rendered")
	for i := range want {
		require.True(t, want[i].Equal(got[i]), "service %s:\nwant %+v\ngot  %+v", want[i].ID, want[i], got[i])
	}

	// A change flows through as well: a backend leaves the web service.
	ctx := context.Background()
	slices, err := f.kube.DiscoveryV1().EndpointSlices("shop").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, slices.Items)
	s := slices.Items[0].DeepCopy()
	require.NotEmpty(t, s.Endpoints)
	s.Endpoints = s.Endpoints[:len(s.Endpoints)-1]
	f.update(s)
	f.waitEqual()
	m, err := kubestate.FromK8s(s)
	require.NoError(t, err)
	direct[m.Key()] = m
	l, err = kubestate.ListAll(ctx, f.cli)
	require.NoError(t, err)
	want, got = processed(t, direct), processed(t, l.Objects)
	require.Len(t, got, len(want))
	for i := range want {
		require.True(t, want[i].Equal(got[i]), "after the change, service %s", want[i].ID)
	}
}
