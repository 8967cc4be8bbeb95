package kubestate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// DefaultNamespace is the namespace LoadYAML gives namespaced objects that
// name none, as kubectl does.
const DefaultNamespace = "default"

// LoadYAMLFile is LoadYAML of the file at path; errors name the file.
func LoadYAMLFile(path string) ([]Object, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	objs, err := LoadYAML(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}

// LoadYAML decodes multi-document Kubernetes YAML (Services, EndpointSlices,
// Pods, Nodes, Namespaces, and Lists of them) into compact models, in file
// order, with the API server's defaults applied as the conversion does.
// Decoding is strict: an unknown field, an unknown kind or a bad document is
// an error naming the document (counted from 1) and its kind and name, and
// nothing is returned. Empty documents are skipped.
func LoadYAML(r io.Reader) ([]Object, error) {
	dec, err := yamlDecoder()
	if err != nil {
		return nil, err
	}
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out []Object
	for n := 1; ; n++ {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("yaml document %d: %w", n, err)
		}
		objs, err := loadDoc(dec, doc)
		if err != nil {
			return nil, fmt.Errorf("yaml document %d%s: %w", n, describe(doc), err)
		}
		out = append(out, objs...)
	}
}

// yamlDecoder is the strict decoder of the kinds LoadYAML reads, built
// once (a scheme takes far longer to build than a small file to decode).
var yamlDecoder = sync.OnceValues(func() (runtime.Decoder, error) {
	sch := runtime.NewScheme()
	if err := errors.Join(corev1.AddToScheme(sch), discoveryv1.AddToScheme(sch)); err != nil {
		return nil, fmt.Errorf("yaml: scheme: %w", err)
	}
	return serializer.NewCodecFactory(sch, serializer.EnableStrict).UniversalDeserializer(), nil
})

// loadDoc decodes one document; nil for an empty one.
func loadDoc(dec runtime.Decoder, doc []byte) ([]Object, error) {
	if blank(doc) {
		return nil, nil
	}
	obj, err := decode(dec, doc)
	if err != nil {
		return nil, err
	}
	if !meta.IsListType(obj) {
		o, err := convertDefaulted(obj)
		if err != nil {
			return nil, err
		}
		return []Object{o}, nil
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, err
	}
	var out []Object
	for i, it := range items {
		if u, ok := it.(*runtime.Unknown); ok {
			// An item of a v1 List: raw JSON with its own apiVersion and kind.
			if it, err = decode(dec, u.Raw); err != nil {
				return nil, fmt.Errorf("item %d%s: %w", i+1, describe(u.Raw), err)
			}
		}
		o, err := convertDefaulted(it)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i+1, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// blank tells whether doc holds nothing but blank lines, comments and
// document separators.
func blank(doc []byte) bool {
	for line := range bytes.Lines(doc) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("---")) {
			return false
		}
	}
	return true
}

// decode decodes one Kubernetes object; a kind missing from the scheme is
// ErrUnsupported.
func decode(dec runtime.Decoder, b []byte) (runtime.Object, error) {
	obj, _, err := dec.Decode(b, nil, nil)
	switch {
	case runtime.IsMissingKind(err):
		return nil, fmt.Errorf("no kind: %w", ErrInvalid)
	case runtime.IsMissingVersion(err):
		return nil, fmt.Errorf("no apiVersion: %w", ErrInvalid)
	case runtime.IsNotRegisteredError(err):
		var tm metav1.TypeMeta
		if yaml.Unmarshal(b, &tm) == nil && tm.Kind != "" {
			return nil, fmt.Errorf("%s %s: %w", tm.Kind, tm.APIVersion, ErrUnsupported)
		}
	}
	return obj, err
}

// convertDefaulted converts obj, giving namespaced kinds the default
// namespace when they name none.
func convertDefaulted(obj runtime.Object) (Object, error) {
	switch o := obj.(type) {
	case *corev1.Service, *corev1.Pod, *discoveryv1.EndpointSlice:
		if m := o.(metav1.Object); m.GetNamespace() == "" {
			m.SetNamespace(DefaultNamespace)
		}
	}
	return FromK8s(obj)
}

// describe names the kind and name of a document for an error message,
// as far as they can be read.
func describe(doc []byte) string {
	var head struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"metadata"`
	}
	if yaml.Unmarshal(doc, &head) != nil {
		return ""
	}
	var parts []string
	if head.Kind != "" {
		parts = append(parts, head.Kind)
	}
	if id := objectID(head.Metadata.Namespace, head.Metadata.Name); id != "" {
		parts = append(parts, id)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, " ") + ")"
}
