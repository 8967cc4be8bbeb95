package core

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// partA and partB are two families' results.
type partA struct {
	A     float64           `json:"a"`
	Z     map[string]string `json:"z,omitempty"`
	Sizes []int             `json:"-"`
	inits int
}

func (p *partA) InitPart(r *Results) { p.inits++; p.Sizes = r.Sizes }

type partB struct {
	B *partA `json:"b"`
}

func TestPartIsMadeOnceAndInitialised(t *testing.T) {
	r := &Results{Sizes: []int{100, 1000}}
	a := Part[partA](r)
	if Part[partA](r) != a || a.inits != 1 || len(a.Sizes) != 2 {
		t.Fatalf("second Part %p, first %p; inits %d, sizes %v", Part[partA](r), a, a.inits, a.Sizes)
	}
	if Part[partB](r).B != nil {
		t.Error("partB not zero")
	}
}

// TestWriteJSONIsOneObjectInKeyOrder: the parts' fields are written as one
// struct holding them in KeyOrder would be (json.Encoder, two-space
// indent), keys KeyOrder does not name last, sorted.
func TestWriteJSONIsOneObjectInKeyOrder(t *testing.T) {
	r := &Results{KeyOrder: []string{"z", "b", "missing"}}
	a := Part[partA](r)
	a.A, a.Z = 1.5, map[string]string{"k": "<v>"}
	Part[partB](r).B = &partA{A: 2}
	var got bytes.Buffer
	if err := r.WriteJSON(&got); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	if err := enc.Encode(struct {
		Z map[string]string `json:"z"`
		B *partA            `json:"b"`
		A float64           `json:"a"`
	}{a.Z, Part[partB](r).B, a.A}); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("got\n%s\nwant\n%s", got.String(), want.String())
	}
}

type partC struct {
	A int `json:"a"`
}

func TestWriteJSONRefusesAKeyTwoPartsHold(t *testing.T) {
	r := &Results{}
	Part[partA](r)
	Part[partC](r)
	if err := r.WriteJSON(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("err = %v", err)
	}
}
