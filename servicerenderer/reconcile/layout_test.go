package reconcile

import (
	"testing"
	"unsafe"
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
