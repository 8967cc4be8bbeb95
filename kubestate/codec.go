package kubestate

import (
	"encoding/json"
	"errors"
	"fmt"
)

// MaxValueSize bounds a stored value; larger values are refused on decode.
const MaxValueSize = 1 << 20

// Errors callers branch on.
var (
	ErrUnknownKey = errors.New("not a key of a known resource")
	ErrTooLarge   = errors.New("value too large")
	// ErrOldLayout: a key of an older layout (a pod key without its node).
	ErrOldLayout = errors.New("key of an older layout")
)

// Encode returns the stored form of o.
func Encode(o Object) ([]byte, error) {
	var b []byte
	var err error
	switch o := o.(type) { // as json.Marshal, without checking the output of MarshalJSON again
	case *EndpointSlice:
		b, err = o.appendJSON(make([]byte, 0, 128+160*len(o.Endpoints)))
	case *Service:
		b, err = json.Marshal(o.stored())
	default:
		b, err = json.Marshal(o)
	}
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", o.Key(), err)
	}
	return b, nil
}

// New returns an empty object of resource r.
func New(r Resource) (Object, error) {
	switch r {
	case ResService:
		return &Service{}, nil
	case ResEndpointSlice:
		return &EndpointSlice{}, nil
	case ResPod:
		return &Pod{}, nil
	case ResNode:
		return &Node{}, nil
	case ResNamespace:
		return &Namespace{}, nil
	case ResVppNode:
		return &VppNode{}, nil
	}
	return nil, fmt.Errorf("resource %q: %w", r, ErrUnknownKey)
}

// Decode decodes the value stored under key k. Decoding is strict about
// types and tolerant of unknown fields; the decoded object must carry the
// key it is stored under. The object is compacted (see compact): the
// strings many objects repeat are shared, which does not change its value;
// the fast path also shares short lists of ports between objects. A
// decoded object is read-only: build a changed copy instead (for an
// endpoint, Endpoint.Edit).
// The bulk resources take a fast path (decodeFast) with encoding/json's
// results; whatever it does not take, json.Unmarshal decodes.
func Decode(k Key, value []byte) (Object, error) {
	return decodeValue(k, value, true)
}

// decodeValue is Decode, trying the fast path when fast is set.
func decodeValue(k Key, value []byte, fast bool) (Object, error) {
	if len(value) > MaxValueSize {
		return nil, fmt.Errorf("decode %s: %d bytes: %w", k, len(value), ErrTooLarge)
	}
	var o Object
	var ok bool
	if fast {
		o, ok = decodeFast(k.Resource, value)
	}
	if !ok {
		var err error
		if o, err = decodeJSON(k, value); err != nil {
			return nil, err
		}
	}
	if got := o.Key(); got != k {
		return nil, fmt.Errorf("decode %s: value names %s", k, got)
	}
	return o, nil
}

// decodeJSON decodes value with encoding/json and compacts it.
func decodeJSON(k Key, value []byte) (Object, error) {
	o, err := New(k.Resource)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(value, o); err != nil {
		return nil, fmt.Errorf("decode %s: %w", k, err)
	}
	compact(o)
	return o, nil
}

// DecodeStored decodes value, stored in etcd under key: it returns what
// ParseKey and Decode return for them (the key when it parsed, also with a
// value that does not decode), and their errors. With the object, it keeps
// nothing of key: the key returned holds the object's own strings (a
// listing's keys then cost no memory of their own, and comparing one with
// its object's reads no bytes). A value in the Writer's form takes a path
// that parses no key: the decoded object's key is checked to be key.
func DecodeStored(key, value []byte) (Key, Object, error) {
	fast := true
	if r, ok := resourceOf(key); ok && len(value) <= MaxValueSize {
		o, ok := decodeFast(r, value)
		if ok {
			if k := o.Key(); k.storedAs(key) {
				return k, o, nil
			}
		}
		fast = ok // then the value names another key, which decode reports
	}
	k, err := ParseKey(string(key))
	if err != nil {
		return Key{}, nil, err
	}
	o, err := decodeValue(k, value, fast)
	if err != nil {
		return k, nil, err
	}
	return o.Key(), o, nil // k, in the object's strings
}
