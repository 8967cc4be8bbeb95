package kubestate

import (
	"encoding/json"
	"strconv"
)

// The stored form of an EndpointSlice, written by hand: encoding/json's
// output for its fields spelled out (its endpoints as EndpointFields),
// byte for byte (TestEncodeSliceAsEncodingJSON), at the cost the slice of
// strings had. Marshalling the fields spelled out instead costs five times
// as much: every address made text again, then the output checked.

// MarshalJSON stores s in its stored form.
func (s EndpointSlice) MarshalJSON() ([]byte, error) { return s.appendJSON(nil) }

// appendJSON appends s's stored form to b.
func (s *EndpointSlice) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"namespace":`...)
	b = appendString(b, s.Namespace)
	b = append(b, `,"name":`...)
	b = appendString(b, s.Name)
	b = appendField(b, "serviceName", s.ServiceName)
	b = appendField(b, "addressType", s.AddressType)
	if len(s.Ports) > 0 {
		b = append(b, `,"ports":[`...)
		for i := range s.Ports {
			p := &s.Ports[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			n := len(b)
			b = appendField(b, "name", p.Name)
			b = appendField(b, "protocol", p.Protocol)
			b = append(b, `,"port":`...)
			b = strconv.AppendInt(b, int64(p.Port), 10)
			b = append(b[:n], b[n+1:]...) // the first field's comma
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(s.Endpoints) > 0 {
		b = append(b, `,"endpoints":[`...)
		for i := range s.Endpoints {
			if i > 0 {
				b = append(b, ',')
			}
			b = s.Endpoints[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	if !s.TriggerTime.IsZero() {
		t, err := s.TriggerTime.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b = append(b, `,"triggerTime":`...)
		b = append(b, t...)
	}
	return append(b, '}'), nil
}

// appendJSON appends e's stored form (its EndpointFields) to b.
func (e *Endpoint) appendJSON(b []byte) []byte {
	b = append(b, `{"addresses":`...)
	switch a, ok := e.Addr(); {
	case ok:
		b = append(b, `["`...)
		b = a.AppendTo(b)
		b = append(b, `"]`...)
	case e.more == nil || e.more.addresses == nil:
		b = append(b, "null"...)
	default:
		b = appendStrings(b, e.more.addresses)
	}
	for _, c := range [...]struct {
		on   bool
		name string
	}{{e.Ready(), `,"ready":true`}, {e.Serving(), `,"serving":true`}, {e.Terminating(), `,"terminating":true`}} {
		if c.on {
			b = append(b, c.name...)
		}
	}
	b = appendField(b, "nodeName", e.NodeName())
	b = appendField(b, "targetKind", e.TargetKind())
	b = appendField(b, "targetNamespace", e.TargetNamespace())
	b = appendField(b, "targetName", e.targetName)
	if z := e.ZoneHints(); len(z) > 0 {
		b = appendStrings(append(b, `,"hintZones":`...), z)
	}
	if n := e.NodeHints(); len(n) > 0 {
		b = appendStrings(append(b, `,"hintNodes":`...), n)
	}
	return append(b, '}')
}

// appendField appends ,"key":s unless s is "" (omitempty).
func appendField(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return appendString(b, s)
}

// appendStrings appends ss as a JSON array.
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendString appends s as encoding/json writes it: as it is when every
// byte stands for itself there (printable ASCII but the quote, the
// backslash and the HTML characters <, >, & that encoding/json escapes),
// else as encoding/json marshals it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainJSON[s[i]] {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainJSON tells which bytes encoding/json writes as themselves.
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()
