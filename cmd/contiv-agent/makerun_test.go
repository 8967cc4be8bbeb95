package main

import (
	"os"
	"strings"
	"testing"
)

// TestMakeRunNeverTouchesARealVPP: make run simulates VPP by explicit
// choice (always), served on a socket of its own; with auto it would
// program a real VPP whose socket exists (issue 22).
func TestMakeRunNeverTouchesARealVPP(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, recipe, ok := strings.Cut(string(b), "\nrun:\n")
	if !ok {
		t.Fatal("no run target in the Makefile")
	}
	recipe, _, _ = strings.Cut(recipe, "\n\n")
	if !strings.Contains(recipe, "--vpp-simulate always") || strings.Contains(recipe, "--vpp-socket") {
		t.Errorf("make run does not choose the simulated VPP on its own socket (--vpp-simulate always, no --vpp-socket):\n%s", recipe)
	}
}
