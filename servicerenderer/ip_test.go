package servicerenderer

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"testing"
	"unsafe"

	"pgregory.net/rapid"
)

// genAddr draws an address of any kind a netip.Addr may hold: invalid,
// IPv4, IPv6, IPv4-mapped IPv6, with or without a zone.
func genAddr(t *rapid.T, label string) netip.Addr {
	switch rapid.IntRange(0, 4).Draw(t, label+" kind") {
	case 0:
		return netip.Addr{}
	case 1:
		return netip.AddrFrom4([4]byte(rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, label)))
	case 2:
		b := [16]byte(rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, label))
		b[0] = rapid.SampledFrom([]byte{0, 0xfe, 0x20, b[0]}).Draw(t, label+" first")
		a := netip.AddrFrom16(b)
		if rapid.Bool().Draw(t, label+" zoned") {
			a = a.WithZone("eth0")
		}
		return a
	default:
		return netip.AddrFrom16(netip.AddrFrom4([4]byte(rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, label))).As16())
	}
}

// TestIPAgainstAddr checks IP against the netip.Addr it stands for (its
// zone dropped): conversion, family, order, text and JSON.
func TestIPAgainstAddr(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := genAddr(t, "a").WithZone(""), genAddr(t, "b").WithZone("")
		x, y := IPOf(a), IPOf(b)
		if x.Addr() != a {
			t.Fatalf("IPOf(%v).Addr() = %v", a, x.Addr())
		}
		if x.IsValid() != a.IsValid() || x.Is4() != a.Is4() || x.Is6() != a.Is6() {
			t.Fatalf("%v: family differs", a)
		}
		if got, want := x.Compare(&y), a.Compare(b); got != want {
			t.Fatalf("Compare(%v, %v) = %d, netip: %d", a, b, got, want)
		}
		if (x == y) != (a == b) {
			t.Fatalf("%v == %v: %v, netip: %v", a, b, x == y, a == b)
		}
		if x.Unmap() != IPOf(a.Unmap()) || x.String() != a.String() {
			t.Fatalf("%v: Unmap or String differs", a)
		}
		if a.Is4() && x.As4() != a.As4() || x.As16() != a.As16() {
			t.Fatalf("%v: bytes differ", a)
		}
		got, err1 := json.Marshal(Backend{IP: x, Port: 80})
		want, err2 := json.Marshal(struct {
			IP                                              netip.Addr
			Port                                            uint16
			Local, HostNetwork, Ready, Serving, Terminating bool
		}{IP: a, Port: 80})
		if err1 != nil || err2 != nil || string(got) != string(want) {
			t.Fatalf("JSON %s (%v), netip: %s (%v)", got, err1, want, err2)
		}
		var back Backend
		if err := json.Unmarshal(got, &back); err != nil || back.IP != x {
			t.Fatalf("JSON %s decodes to %v (%v)", got, back.IP, err)
		}
	})
}

// TestBackendCompact guards the compact form: a Backend holds no pointer
// (arrays of them are not scanned by the garbage collector) and is 26
// bytes (32 with a netip.Addr).
func TestBackendCompact(t *testing.T) {
	if n := unsafe.Sizeof(Backend{}); n != 26 {
		t.Errorf("Backend is %d bytes, want 26", n)
	}
	if p := pointerField(reflect.TypeFor[Backend]()); p != "" {
		t.Errorf("Backend holds a pointer: %s", p)
	}
}

// pointerField names a field of t that is or holds a pointer ("" if none).
func pointerField(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			if p := pointerField(t.Field(i).Type); p != "" {
				return t.Field(i).Name + "." + p
			}
		}
		return ""
	case reflect.Array:
		return pointerField(t.Elem())
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return ""
	}
	return t.String()
}
