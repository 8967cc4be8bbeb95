package vpp

import (
	"testing"

	"contiv.dev/vpp/servicerenderer/nat44"
)

// TestDumpArena: the mappings and locals a dump hands out are its own:
// appending to one mapping's locals never writes into another's, across
// blocks too.
func TestDumpArena(t *testing.T) {
	var a dumpArena
	var got [][]nat44.Local
	var ms []*nat44.Mapping
	for i := range 3 * arenaLocals / 7 {
		m := a.mapping()
		m.Tag = string(rune('a' + i%26))
		m.Locals = a.locals(7)
		for j := range m.Locals {
			m.Locals[j].Port = uint16(i)
		}
		ms, got = append(ms, m), append(got, m.Locals)
	}
	for i, m := range ms {
		m.Locals = append(m.Locals, nat44.Local{Port: 65535})
		if i > 0 && ms[i-1] == m {
			t.Fatalf("mapping %d handed out twice", i)
		}
	}
	for i, ls := range got {
		for j, l := range ls {
			if l.Port != uint16(i) {
				t.Fatalf("mapping %d's local %d: port %d, want %d (another mapping's append wrote into it)", i, j, l.Port, i)
			}
		}
	}
}
