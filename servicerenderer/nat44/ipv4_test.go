package nat44

import (
	"encoding/json"
	"net/netip"
	"testing"
	"unsafe"

	"pgregory.net/rapid"
)

// TestLocalIsCompact guards the size of a Local: 600 000 of them at
// W(50 000), 12 bytes each, and no pointer for the collector to follow.
func TestLocalIsCompact(t *testing.T) {
	if s := unsafe.Sizeof(Local{}); s != 12 {
		t.Errorf("a Local takes %d bytes, want 12", s)
	}
	if Placeholder != (Local{}) || Placeholder.IP.Addr() != netip.IPv4Unspecified() {
		t.Errorf("placeholder %v, want the zero Local 0.0.0.0:0", Placeholder)
	}
}

// TestIPv4AsNetipAddr checks that an IPv4 orders, prints and encodes as
// the netip.Addr it stands for, so that locals sort, print and read back
// as they did when they held one.
func TestIPv4AsNetipAddr(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var a, b IPv4
		copy(a[:], rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, "a"))
		copy(b[:], rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, "b"))
		na, nb := netip.AddrFrom4(a), netip.AddrFrom4(b)
		if got, want := a.Compare(b), na.Compare(nb); got != want {
			t.Fatalf("%v.Compare(%v) = %d, netip says %d", a, b, got, want)
		}
		if a.String() != na.String() {
			t.Fatalf("%v prints %q, netip %q", a, a.String(), na.String())
		}
		js, err := json.Marshal(Local{IP: a})
		if err != nil {
			t.Fatal(err)
		}
		wantJS, _ := json.Marshal(struct{ IP netip.Addr }{na})
		if string(js[:len(wantJS)-1]) != string(wantJS[:len(wantJS)-1]) {
			t.Fatalf("JSON %s, want it to start as %s", js, wantJS)
		}
		var back Local
		if err := json.Unmarshal(js, &back); err != nil || back.IP != a {
			t.Fatalf("JSON %s read back as %v (%v)", js, back.IP, err)
		}
		if v, ok := IPv4Of(netip.AddrFrom16(na.As16())); !ok || v != a {
			t.Fatalf("IPv4-mapped %v: %v %v", na, v, ok)
		}
	})
}

// TestIPv4OfRefusesIPv6 checks that what is not IPv4 is refused.
func TestIPv4OfRefusesIPv6(t *testing.T) {
	for _, a := range []netip.Addr{{}, netip.MustParseAddr("fd00::1"), netip.IPv6Unspecified()} {
		if v, ok := IPv4Of(a); ok {
			t.Errorf("IPv4Of(%v) = %v, want refused", a, v)
		}
	}
	var ip IPv4
	if err := ip.UnmarshalText([]byte("fd00::1")); err == nil {
		t.Errorf("an IPv6 address read as IPv4 %v", ip)
	}
}

// TestMappingIsCompact guards the size of a mapping's key and of a
// mapping: 8 and 56 bytes (60 000 of each at W(50 000), in the frontends'
// map and the claims), the key without a pointer. A claim on a mapping
// (reconcile's, with its frontend's pointer: TestClaimIsOneCacheLine
// there) is then 64 bytes, one aligned cache line, which a change of the
// service reads; with a mapping of 64 bytes (its subset held in it) it
// was 72, two lines.
func TestMappingIsCompact(t *testing.T) {
	if s := unsafe.Sizeof(MappingKey{}); s != 8 {
		t.Errorf("a MappingKey takes %d bytes, want 8", s)
	}
	if s := unsafe.Sizeof(Mapping{}); s != 56 {
		t.Errorf("a Mapping takes %d bytes, want 56", s)
	}
	if s := unsafe.Sizeof(frontendState{}); s != 40 {
		t.Errorf("a frontend takes %d bytes, want 40 (an allocation of 48)", s)
	}
}

// TestRouteIsCompact guards the size of a route's key and value: 12 and
// 20 bytes, no pointer (a /32 per service at W(50 000)).
func TestRouteIsCompact(t *testing.T) {
	if s := unsafe.Sizeof(RouteKey{}); s != 12 {
		t.Errorf("a RouteKey takes %d bytes, want 12", s)
	}
	if s := unsafe.Sizeof(Route{}); s != 20 {
		t.Errorf("a Route takes %d bytes, want 20", s)
	}
	if (IPv4Prefix{}).IsValid() || (IPv4Prefix{}).String() != (netip.Prefix{}).String() || (IPv4Prefix{}).Bits() != -1 {
		t.Error("the zero IPv4Prefix is not the invalid prefix")
	}
}

// TestIPv4PrefixAsNetipPrefix checks that an IPv4Prefix keeps, prints,
// masks and encodes what the netip.Prefix it stands for does.
func TestIPv4PrefixAsNetipPrefix(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var a [4]byte
		copy(a[:], rapid.SliceOfN(rapid.Byte(), 4, 4).Draw(t, "addr"))
		np := netip.PrefixFrom(netip.AddrFrom4(a), rapid.IntRange(0, 32).Draw(t, "bits"))
		p, ok := IPv4PrefixOf(np)
		if !ok || p.AsPrefix() != np || p.Addr() != np.Addr() || p.Bits() != np.Bits() || !p.IsValid() {
			t.Fatalf("%v became %v (%v)", np, p, ok)
		}
		if p.String() != np.String() || p.Masked().AsPrefix() != np.Masked() {
			t.Fatalf("%v: prints %q masks to %v; netip %q, %v", np, p, p.Masked(), np.String(), np.Masked())
		}
		js, err := json.Marshal(RouteKey{Prefix: p})
		if err != nil {
			t.Fatal(err)
		}
		var back RouteKey
		if err := json.Unmarshal(js, &back); err != nil || back.Prefix != p {
			t.Fatalf("JSON %s read back as %v (%v)", js, back.Prefix, err)
		}
		wantJS, _ := json.Marshal(struct{ Prefix netip.Prefix }{np})
		if string(js[:len(wantJS)-1]) != string(wantJS[:len(wantJS)-1]) {
			t.Fatalf("JSON %s, want it to start as %s", js, wantJS)
		}
	})
	for _, np := range []netip.Prefix{{}, netip.MustParsePrefix("fd00::/108"), netip.MustParsePrefix("::ffff:10.0.0.0/104")} {
		if p, ok := IPv4PrefixOf(np); ok {
			t.Errorf("IPv4PrefixOf(%v) = %v, want refused", np, p)
		}
	}
	var p IPv4Prefix
	if err := p.UnmarshalText([]byte("fd00::/108")); err == nil {
		t.Errorf("an IPv6 prefix read as IPv4 %v", p)
	}
}
