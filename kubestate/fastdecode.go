package kubestate

import (
	"encoding/binary"
	"math/bits"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"
)

// The fast path of Decode.
//
// Why: encoding/json's reflection costs ~25 µs and 81 allocations per
// EndpointSlice, and an agent's start decodes ~20 000 values (mostly
// EndpointSlices and Services): most of its start-up time. The decoder
// below reads the JSON the Writer stores (encoding/json's own output) for
// the bulk resources, EndpointSlice, Service and Pod, in one pass (~7 µs
// and 15 allocations): it cuts strings from one copy of the value,
// interns those compact interns as it goes, and at the end moves the
// others into one allocation of their own (rehome). It expects the
// Writer's form: keys met in their stored order are matched whole
// (storedKey), and an endpoint written as the Writer writes nearly all
// (one address, no hints) is read by its literal keys (storedEndpoint,
// a quarter of a slice's instructions); anything else takes the general
// reader.
//
// Exactness: the fast path accepts only a subset of JSON on which its
// result is plainly encoding/json's, and gives up (ok false) on anything
// else; Decode then decodes the value with json.Unmarshal + compact as
// before, so results and errors stay encoding/json's. Given up on: strings
// with escapes or invalid UTF-8 (its replacement rules), keys that match a
// field only case-insensitively or are not plain ASCII (its Unicode case
// folding), a field given twice (its reuse of the earlier value), numbers
// that are not plain integers in range, a value of the wrong type, deep
// nesting, any syntax error (encoding/json names it), and a field of a
// model the fast path does not read (known from the models' json tags).
// Unknown fields are skipped after checking their syntax as encoding/json
// does; null leaves a string, number, bool or time as it is and makes a
// slice nil, [] an empty non-nil slice, as encoding/json does. FuzzDecodeFast
// compares the two on arbitrary bytes.

// maxSkipDepth bounds the nesting of a skipped value; deeper values go to
// encoding/json (whose limit is 10 000).
const maxSkipDepth = 100

// decoder is the state of one fast decode.
type decoder struct {
	b []byte // the value
	// s is the value's bytes as a string, not a copy: decoded strings are
	// cut from it, and rehome copies them out (or they are interned)
	// before decodeFast returns, so that the object holds nothing of the
	// value, which stays the caller's.
	s string
	i int // the next byte to read
	// names holds the two names looked up last and their handles, the
	// latest first: a slice's endpoints alternate their node names with
	// one namespace, which then costs no lookup.
	names [2]struct {
		s string
		h name
	}
}

// decodeFast decodes value as a stored r, or tells that it cannot.
func decodeFast(r Resource, value []byte) (Object, bool) {
	if r != ResEndpointSlice && r != ResService && r != ResPod {
		return nil, false
	}
	d := decoder{b: value, s: unsafe.String(unsafe.SliceData(value), len(value))}
	d.ws()
	var o Object
	var ok bool
	switch r {
	case ResEndpointSlice:
		x := &EndpointSlice{}
		o, ok = x, d.endpointSlice(x)
	case ResService:
		x := &Service{}
		o, ok = x, d.service(x)
	case ResPod:
		x := &Pod{}
		o, ok = x, d.pod(x)
	}
	if d.ws(); !ok || d.i != len(d.b) {
		return nil, false
	}
	rehome(o)
	return o, true
}

// ws skips JSON white space.
func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next byte, 0 at the end.
func (d *decoder) peek() byte {
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// lit consumes the literal w (true, false, null) if it comes next.
func (d *decoder) lit(w string) bool {
	if strings.HasPrefix(d.s[d.i:], w) {
		d.i += len(w)
		return true
	}
	return false
}

// null consumes a null if one comes next.
func (d *decoder) null() bool { return d.peek() == 'n' && d.lit("null") }

// object reads an object, calling member for each key with the decoder at
// the key's value. A key met in its stored order (order) is matched whole.
func (d *decoder) object(order storedKeys, member func(key string) bool) bool {
	if d.peek() != '{' {
		return false
	}
	d.i++
	d.ws()
	if d.peek() == '}' {
		d.i++
		return true
	}
	next := 0 // the index in order of the first key not met yet
	for {
		key, ok := d.storedKey(order, &next)
		if !ok {
			var ascii bool
			if key, ascii, ok = d.stringBytes(); !ok || !ascii {
				return false // a key encoding/json might fold to a field
			}
			if d.ws(); d.peek() != ':' {
				return false
			}
			d.i++
		}
		if d.ws(); !member(key) {
			return false
		}
		d.ws()
		switch d.peek() {
		case ',':
			d.i++
			d.ws()
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// plainString reads a string without escapes and with valid UTF-8, whose
// value is then its bytes, cut from d.s.
func (d *decoder) plainString() (string, bool) {
	s, ascii, ok := d.stringBytes()
	return s, ok && (ascii || utf8.ValidString(s))
}

// stringBytes reads a string without escapes or control characters and
// returns its bytes and whether they are all ASCII.
func (d *decoder) stringBytes() (s string, ascii, ok bool) {
	if d.peek() != '"' {
		return "", false, false
	}
	start := d.i + 1
	ascii = true
	for i := start; ; i++ {
		switch i = plainRun(d.b, i); {
		case i == len(d.b):
			return "", false, false
		case d.b[i] == '"':
			d.i = i + 1
			return d.s[start:i], ascii, true
		case d.b[i] < utf8.RuneSelf: // a backslash or a control character
			return "", false, false
		}
		ascii = false
	}
}

// plainRun returns the index of the first byte of b from i on that does
// not stand for itself (plainByte), len(b) when none: 8 bytes at a time.
func plainRun(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if m := special8(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(b) && plainByte[b[i]] {
		i++
	}
	return i
}

// special8 marks (its high bit) each byte of w, from the first on, that
// may not stand for itself in a JSON string: a quote, a backslash, a
// control character or a byte of a multi-byte UTF-8 sequence. The first
// byte marked is the first such byte (a borrow only marks bytes above it).
func special8(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) &^ v }
	return (w | (w - 0x20*ones) | zero(w^'"'*ones) | zero(w^'\\'*ones)) & highs
}

// plainByte tells which bytes stand for themselves in a JSON string:
// printable ASCII but the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// array reads an array or null into *p, elem reading each element; null
// makes *p nil, [] an empty slice (as encoding/json), a null element the
// zero value. The elements are gathered on the stack and copied to a
// slice of their exact length; elem returns them by value to keep them
// there.
func array[T comparable](d *decoder, p *[]T, elem func() (T, bool)) bool {
	return arrayOf(d, p, elem, nil)
}

// arrayOf reads an array as array does, taking the slice of its elements
// from shared when not nil.
func arrayOf[T comparable](d *decoder, p *[]T, elem func() (T, bool), shared *lists[T]) bool {
	if d.null() {
		*p = nil
		return true
	}
	if d.peek() != '[' {
		return false
	}
	d.i++
	var buf [16]T
	got := buf[:0]
	if d.ws(); d.peek() == ']' {
		d.i++
		*p = []T{}
		return true
	}
	for {
		var v T
		if !d.null() {
			var ok bool
			if v, ok = elem(); !ok {
				return false
			}
		}
		got = append(got, v)
		d.ws()
		switch d.peek() {
		case ',':
			d.i++
			d.ws()
		case ']':
			d.i++
			if shared != nil {
				*p = shared.get(got)
			} else {
				*p = make([]T, len(got))
				copy(*p, got)
			}
			return true
		default:
			return false
		}
	}
}

// str reads a string or null into *p.
func (d *decoder) str(p *string) bool {
	if d.null() {
		return true
	}
	s, ok := d.plainString()
	*p = s
	return ok
}

// istr reads a string or null into *p, interned as compact does.
func (d *decoder) istr(p *string) bool {
	if !d.str(p) {
		return false
	}
	*p = d.intern(*p)
	return true
}

// intern returns the canonical copy of s (see compact), "" for "".
func (d *decoder) intern(s string) string {
	if s == "" {
		return s
	}
	return canonical(s)
}

// name returns the handle of s as nameFor does, looking in d.names first.
func (d *decoder) name(s string) (name, bool) {
	switch s {
	case d.names[0].s:
		return d.names[0].h, true
	case d.names[1].s:
		d.names[0], d.names[1] = d.names[1], d.names[0]
		return d.names[0].h, true
	}
	h, ok := nameFor(s)
	if ok {
		d.names[1] = d.names[0]
		d.names[0].s, d.names[0].h = s, h
	}
	return h, ok
}

// strsInto reads an array of strings or null as strs does, appending the
// strings to buf[:0] (an array of the caller's, on its stack when they
// fit).
func (d *decoder) strsInto(buf []string) ([]string, bool) {
	if d.null() {
		return nil, true
	}
	if d.peek() != '[' {
		return nil, false
	}
	d.i++
	got := buf[:0]
	if d.ws(); d.peek() == ']' {
		d.i++
		return got, true
	}
	for {
		var s string
		if !d.null() {
			var ok bool
			if s, ok = d.plainString(); !ok {
				return nil, false
			}
		}
		got = append(got, s)
		d.ws()
		switch d.peek() {
		case ',':
			d.i++
			d.ws()
		case ']':
			d.i++
			return got, true
		default:
			return nil, false
		}
	}
}

// strs reads an array of strings or null.
func (d *decoder) strs(p *[]string) bool { return array(d, p, d.plainString) }

// istrs reads an array of strings or null, interning each.
func (d *decoder) istrs(p *[]string) bool {
	return array(d, p, func() (string, bool) {
		s, ok := d.plainString()
		return d.intern(s), ok
	})
}

// boolean reads true, false or null.
func (d *decoder) boolean(p *bool) bool {
	switch {
	case d.lit("true"):
		*p = true
	case d.lit("false"):
		*p = false
	default:
		return d.null()
	}
	return true
}

// int32 reads an integer in int32's range, or null.
func (d *decoder) int32(p *int32) bool {
	if d.null() {
		return true
	}
	s, ok := d.integer()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(s, 10, 32)
	*p = int32(n)
	return err == nil
}

// integer reads -?(0|[1-9][0-9]*). A fraction or exponent after it is
// left for the caller, who fails on it.
func (d *decoder) integer() (string, bool) {
	start := d.i
	if d.peek() == '-' {
		d.i++
	}
	digits := d.i
	if d.peek() == '0' {
		d.i++
	} else {
		for c := d.peek(); '0' <= c && c <= '9'; c = d.peek() {
			d.i++
		}
	}
	return d.s[start:d.i], d.i > digits
}

// time reads a time through its UnmarshalJSON, as encoding/json does.
func (d *decoder) time(p *time.Time) bool {
	if d.null() {
		return true
	}
	start := d.i
	if _, ok := d.plainString(); !ok {
		return false
	}
	return p.UnmarshalJSON(d.b[start:d.i]) == nil
}

// skip reads any JSON value, checking its syntax.
func (d *decoder) skip(depth int) bool {
	if depth > maxSkipDepth {
		return false
	}
	switch c := d.peek(); {
	case c == '{':
		return d.object(nil, func(string) bool { return d.skip(depth + 1) })
	case c == '[':
		var none []struct{}
		return array(d, &none, func() (struct{}, bool) { return struct{}{}, d.skip(depth + 1) })
	case c == '"':
		return d.skipString()
	case c == '-' || '0' <= c && c <= '9':
		return d.skipNumber()
	}
	return d.lit("true") || d.lit("false") || d.lit("null")
}

// skipString reads any valid JSON string.
func (d *decoder) skipString() bool {
	for i := d.i + 1; i < len(d.b); i++ {
		switch c := d.b[i]; {
		case c == '"':
			d.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			i++
			if i >= len(d.b) {
				return false
			}
			switch d.b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(d.b) || !isHex4(d.b[i+1:i+5]) {
					return false
				}
				i += 4
			default:
				return false
			}
		}
	}
	return false
}

// isHex4 tells whether b is 4 hex digits.
func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// skipNumber reads any JSON number.
func (d *decoder) skipNumber() bool {
	if _, ok := d.integer(); !ok {
		return false
	}
	if d.peek() == '.' {
		d.i++
		if !d.digits() {
			return false
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.i++
		if c := d.peek(); c == '+' || c == '-' {
			d.i++
		}
		return d.digits()
	}
	return true
}

// digits reads one or more decimal digits.
func (d *decoder) digits() bool {
	start := d.i
	for c := d.peek(); '0' <= c && c <= '9'; c = d.peek() {
		d.i++
	}
	return d.i > start
}

// storedKeys are the keys of a model's stored form in the order the Writer
// stores them, each as it stands in the value: quoted, with its colon.
type storedKeys []string

// storedKeysOf returns the storedKeys of t's fields, in t's order.
func storedKeysOf(t reflect.Type) storedKeys {
	var ks storedKeys
	for _, n := range jsonNames(t) {
		ks = append(ks, strconv.Quote(n)+":")
	}
	return ks
}

// storedKey reads the key at d.i, with its colon, when it is one of
// order[*next:] as stored, and moves *next past it.
func (d *decoder) storedKey(order storedKeys, next *int) (string, bool) {
	rest := d.s[d.i:]
	for j := *next; j < len(order); j++ {
		if k := order[j]; strings.HasPrefix(rest, k) {
			d.i += len(k)
			*next = j + 1
			return k[1 : len(k)-2], true
		}
	}
	return "", false
}

// fields tracks the fields an object has given, to give up on a repeat.
type fields uint32

// first marks field f as given and tells whether it was not before.
func (s *fields) first(f uint) bool {
	if *s&(1<<f) != 0 {
		return false
	}
	*s |= 1 << f
	return true
}

// other handles a key the caller does not read: a field of the model
// (another case of a name, or one the fast path does not know) gives up,
// anything else is skipped.
func (d *decoder) other(key string, names []string) bool {
	for _, n := range names {
		if strings.EqualFold(key, n) {
			return false
		}
	}
	return d.skip(0)
}

// jsonNames lists the json names of t's fields.
func jsonNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		if f.Anonymous && f.Tag.Get("json") == "" {
			names = append(names, jsonNames(f.Type.Elem())...) // stored flat
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// The json names of the models the fast path reads.
var (
	serviceNames      = jsonNames(reflect.TypeFor[Service]())
	servicePortNames  = jsonNames(reflect.TypeFor[ServicePort]())
	sliceNames        = jsonNames(reflect.TypeFor[EndpointSlice]())
	endpointPortNames = jsonNames(reflect.TypeFor[EndpointPort]())
	endpointNames     = jsonNames(reflect.TypeFor[EndpointFields]())
	podNames          = jsonNames(reflect.TypeFor[Pod]())

	serviceOrder      = storedKeysOf(reflect.TypeFor[serviceJSON]())
	servicePortOrder  = storedKeysOf(reflect.TypeFor[ServicePort]())
	sliceOrder        = storedKeysOf(reflect.TypeFor[EndpointSlice]())
	endpointPortOrder = storedKeysOf(reflect.TypeFor[EndpointPort]())
	endpointOrder     = storedKeysOf(reflect.TypeFor[EndpointFields]())
	podOrder          = storedKeysOf(reflect.TypeFor[Pod]())
)

// rehome moves the strings of o that compact does not intern, cut from
// the copy of the whole value, into one allocation of their own: the
// object then does not hold on to the value's keys and syntax.
func rehome(o Object) {
	n := 0
	ownStrings(o, func(p *string) { n += len(*p) })
	if n == 0 {
		return
	}
	var b strings.Builder
	b.Grow(n)
	ownStrings(o, func(p *string) {
		if *p == "" {
			return
		}
		off := b.Len()
		b.WriteString(*p)
		*p = b.String()[off:]
	})
}

// ownStrings calls f for each string of o that compact does not intern.
func ownStrings(o Object, f func(*string)) {
	each := func(ss []string) {
		for i := range ss {
			f(&ss[i])
		}
	}
	switch o := o.(type) {
	case *Service:
		f(&o.Name)
		each(o.ClusterIPs)
		if r := o.ServiceRare; r != nil {
			each(r.ExternalIPs)
			each(r.LBIngressIPs)
			each(r.LBProxyIPs)
			each(r.LoadBalancerSourceRanges)
			f(&r.TrafficDistribution)
			f(&r.ProxyName)
		}
	case *EndpointSlice:
		f(&o.Name)
		f(&o.ServiceName)
		for i := range o.Endpoints {
			e := &o.Endpoints[i]
			f(&e.targetName)
			if m := e.more; m != nil {
				each(m.addresses)
				f(&m.nodeName)
				f(&m.namespace)
			}
		}
	case *Pod:
		f(&o.Name)
		each(o.IPs)
	}
}
