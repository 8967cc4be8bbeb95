package core

import (
	"slices"
	"testing"
)

func TestSortedNumeric(t *testing.T) {
	got := SortedNumeric(map[string]int{"200": 0, "50": 0, "100": 0})
	if want := []string{"50", "100", "200"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
