package contivconf

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// MaxFileSize bounds the configuration file.
const MaxFileSize = 1 << 20

// Load reads the YAML file at path onto Defaults; see Parse. It does not
// validate: call Validate once every override is applied.
func Load(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return Config{}, fmt.Errorf("config %s: larger than %d bytes: %w", path, MaxFileSize, ErrInvalid)
	}
	c, err := Parse(data)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes YAML onto Defaults: fields the document leaves out (or sets
// to null) keep their default. It is strict: a syntax error, a duplicate
// key, an unknown field (names are case-sensitive) or a value that does not
// fit its field's type is an error, and all such problems are reported
// together, each naming the field's path and the bad value. It does not
// validate: call Validate once every override is applied.
func Parse(data []byte) (Config, error) {
	c := Defaults()
	if line := secondDocument(data); line > 0 {
		return Config{}, &FieldError{Path: "(document)", Msg: fmt.Sprintf("line %d starts a second YAML document; the configuration is one document", line)}
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if tree == nil { // empty document
		return c, nil
	}
	t := reflect.TypeFor[Config]()
	var p problems
	check(tree, t, "", fieldIndex(t), &p)
	if err := p.err(); err != nil {
		return Config{}, err
	}
	// check accepted every field and value; the real decode cannot fail
	// on anything it checked, and stays strict in case it missed something.
	dec = json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	c.normalize()
	return c, nil
}

// secondDocument returns the line number of a "---" that starts a second
// YAML document, or 0. (The YAML decoder would silently ignore it.)
func secondDocument(data []byte) int {
	content := false
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimRight(l, " \t\r")
		switch {
		case l == "---" || strings.HasPrefix(l, "--- "):
			if content {
				return i + 1
			}
			content = strings.TrimSpace(strings.TrimPrefix(l, "---")) != ""
		case l == "" || strings.HasPrefix(strings.TrimSpace(l), "#"):
		default:
			content = true
		}
	}
	return 0
}

// normalize makes empty lists nil, so that a file saying "endpoints: []"
// gives the same Config as one leaving endpoints out.
func (c *Config) normalize() {
	if len(c.Etcd.Endpoints) == 0 {
		c.Etcd.Endpoints = nil
	}
	if len(c.NodeConfig) == 0 {
		c.NodeConfig = nil
	}
	for i := range c.NodeConfig {
		if len(c.NodeConfig[i].OtherInterfaces) == 0 {
			c.NodeConfig[i].OtherInterfaces = nil
		}
	}
}

// isLeaf reports whether values of t are decoded as one unit: scalars and
// types that decode themselves.
func isLeaf(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	if p.Implements(reflect.TypeFor[json.Unmarshaler]()) || p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		return true
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Slice, reflect.Map:
		return false
	}
	return true
}

// check walks the JSON tree v against the Go type t of the field at path
// and records unknown fields and values that do not decode into t. index
// maps every field name of Config to the paths where it is defined, for
// suggestions.
func check(v any, t reflect.Type, path string, index map[string][]string, p *problems) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil { // null keeps the default
		return
	}
	if isLeaf(t) {
		checkLeaf(v, t, path, p)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			p.add(orTop(path), rawJSON(v), "want a mapping of %s", strings.Join(fieldNames(t), ", "))
			return
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys) // report in a stable order
		for _, k := range keys {
			f, ok := fieldByName(t, k)
			if !ok {
				name := k
				if name == "" { // YAML's "! :", "'': 1": the error still names it
					name = `""`
				}
				*p = append(*p, &FieldError{Path: join(path, name), Msg: "unknown field" + suggest(k, path, t, index)})
				continue
			}
			check(obj[k], f.Type, join(path, k), index, p)
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			p.add(path, rawJSON(v), "want a list")
			return
		}
		for i, e := range arr {
			check(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), index, p)
		}
	default: // maps: none in Config
		p.add(path, rawJSON(v), "unsupported field type %s", t)
	}
}

// checkLeaf decodes the scalar v into a fresh value of type t.
func checkLeaf(v any, t reflect.Type, path string, p *problems) {
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, reflect.New(t).Interface())
	}
	if err == nil {
		return
	}
	msg := "want " + expected(t)
	var ute *json.UnmarshalTypeError
	switch {
	case fieldRange(path) != "":
		msg = "want " + fieldRange(path)
	case errors.As(err, &ute), errors.As(err, new(*json.SyntaxError)):
		// a wrong JSON type: "want ..." says it all
	case t == reflect.TypeFor[netip.Prefix]() || t == reflect.TypeFor[netip.Addr]():
		msg += ": " + netipReason(err)
	case t == reflect.TypeFor[Duration]():
		msg = err.Error()
	default:
		msg += ": " + err.Error()
	}
	*p = append(*p, &FieldError{Path: path, Value: string(rawJSON(v)), Msg: msg, Err: err})
}

// fieldRange describes the values of a field narrower than its type's
// ("" for the others).
func fieldRange(path string) string {
	switch path {
	case "nat44.serviceLocalEndpointWeight":
		return "an integer from 1 to 255 (the weight of a backend on this node; a remote one weighs 1)"
	}
	return ""
}

// expected describes the values of type t.
func expected(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Duration]():
		return `a duration like "90s", "10m" or "1h30m"`
	case reflect.TypeFor[netip.Prefix]():
		return "a CIDR prefix like 10.1.0.0/16"
	case reflect.TypeFor[netip.Addr]():
		return "an IP address like 192.168.16.1"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string (quote it)"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return fmt.Sprintf("an integer from %d to %d", int64(-1)<<(bits-1), int64(math.MaxInt64)>>(64-bits))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("an integer from 0 to %d", uint64(math.MaxUint64)>>(64-t.Bits()))
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return t.String()
}

// netipReason keeps what net/netip says is wrong, without its repetition of
// the value.
func netipReason(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, "): "); i >= 0 {
		return s[i+3:]
	}
	return s
}

// rawJSON renders a tree value compactly as JSON, which reads as YAML.
func rawJSON(v any) rendered {
	b, err := json.Marshal(v)
	if err != nil {
		return rendered(fmt.Sprint(v))
	}
	const maxLen = 80
	if len(b) > maxLen {
		return rendered(b[:maxLen]) + "…"
	}
	return rendered(b)
}

// jsonName returns the YAML name of a struct field ("" when not decoded).
func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch name {
	case "-":
		return ""
	case "":
		return f.Name
	}
	return name
}

// fieldByName finds the field of struct t named k in YAML, case-sensitively.
func fieldByName(t reflect.Type, k string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); jsonName(f) == k {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// fieldNames lists the YAML names of struct t's fields.
func fieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if n := jsonName(t.Field(i)); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// fieldIndex maps every field name under struct t to its paths.
func fieldIndex(t reflect.Type) map[string][]string {
	index := map[string][]string{}
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
			if path != "" && t.Kind() == reflect.Struct {
				path += "[]"
			}
		}
		if t.Kind() != reflect.Struct || isLeaf(t) {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if n := jsonName(f); n != "" {
				index[n] = append(index[n], join(path, n))
				walk(f.Type, join(path, n))
			}
		}
	}
	walk(t, "")
	return index
}

// suggest proposes what an unknown field k under path (of type t) may have
// meant: the same name elsewhere, or a close sibling.
func suggest(k, path string, t reflect.Type, index map[string][]string) string {
	if where := index[k]; len(where) > 0 {
		return fmt.Sprintf(" (%s is a field of %s)", k, parentsOf(where))
	}
	best, bestD := "", len(k)/3+1
	for _, n := range fieldNames(t) {
		d := distance(strings.ToLower(k), strings.ToLower(n))
		if d < bestD {
			best, bestD = n, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %s?)", join(path, best))
	}
	return ""
}

// parentsOf lists the parents of paths, e.g. "ipam".
func parentsOf(paths []string) string {
	var ps []string
	for _, p := range paths {
		parent := "the top level"
		if i := strings.LastIndex(p, "."); i >= 0 {
			parent = p[:i]
		}
		ps = append(ps, parent)
	}
	return strings.Join(ps, " and ")
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// join appends field name k to path.
func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// orTop names the top level of the document.
func orTop(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}
