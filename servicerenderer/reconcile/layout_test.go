package reconcile

import (
	"bytes"
	"log/slog"
	"testing"
	"unsafe"

	"contiv.dev/vpp/servicerenderer"
)

// TestFrontendReadFieldsLead: what a change of a claimant's object reads
// of its frontend (all but the key, which its claim holds) lies in the
// frontend's first 32 bytes, so that a 48-byte frontend (an 8-byte key,
// as NAT44's) is read in one cache line more often; with the key first
// they ended at byte 34.
func TestFrontendReadFieldsLead(t *testing.T) {
	var fe Frontend[key8, int]
	for name, end := range map[string]uintptr{
		"Desired":   unsafe.Offsetof(fe.Desired) + unsafe.Sizeof(fe.Desired),
		"Applied":   unsafe.Offsetof(fe.Applied) + unsafe.Sizeof(fe.Applied),
		"winner":    unsafe.Offsetof(fe.winner) + unsafe.Sizeof(fe.winner),
		"dirty":     unsafe.Offsetof(fe.dirty) + unsafe.Sizeof(fe.dirty),
		"contested": unsafe.Offsetof(fe.contested) + unsafe.Sizeof(fe.contested),
	} {
		if end > 32 {
			t.Errorf("a frontend's %s ends at byte %d", name, end)
		}
	}
}

// key8 is an 8-byte key, as NAT44's MappingKey.
type key8 [8]byte

func (k key8) String() string { return string(k[:]) }

// TestClaimIsOneCacheLine: a claim on a 56-byte object (NAT44's Mapping:
// TestMappingIsCompact there) is 64 bytes, and the claims Set makes of
// one such object (a service with one frontend) are one aligned cache
// line, which a change of the service reads whole: the frontend's
// pointer, the key, and the fields its Same and Desire read.
func TestClaimIsOneCacheLine(t *testing.T) {
	type obj struct {
		k    key8
		rest [48]byte
	}
	if n := unsafe.Sizeof(claim[key8, obj]{}); n != 64 {
		t.Fatalf("a claim on a 56-byte object takes %d bytes", n)
	}
	tb := NewTable(Object[key8, obj]{
		KeyOf:   func(o *obj) key8 { return o.k },
		Compare: func(a, b key8) int { return bytes.Compare(a[:], b[:]) },
		Same:    func(a, b *obj) bool { return a == b || a != nil && b != nil && *a == *b },
	}, slog.New(slog.DiscardHandler))
	svc := &servicerenderer.ContivService{}
	for i := range 64 {
		c := &Claimant[key8, obj]{}
		tb.Set(c, svc, []obj{{k: key8{byte(i), 1}}})
		if at := uintptr(unsafe.Pointer(&c.claims[0])); at%64 != 0 {
			t.Fatalf("claims start %d bytes into a cache line", at%64)
		}
	}
}
