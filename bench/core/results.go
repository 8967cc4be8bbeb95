package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
)

// Results are the figures of one benchmark run: each family's results (a
// part, Part) and what the run was. The parts' JSON fields, merged into
// one object, are bench/results.json; fields without a JSON name are
// shown in the table only.
type Results struct {
	// Sizes are the N of W(N) measured, ascending: the table's columns.
	Sizes []int
	// Runs is the number of runs each median is taken over.
	Runs int
	// Figures are the figures measured; empty means all.
	Figures []FigureName
	// Table are the figures whose rows WriteTable prints, in order.
	Table []Figure
	// KeyOrder is the order of the JSON object's keys; keys it does not
	// name follow, sorted.
	KeyOrder []string
	parts    map[reflect.Type]any
}

// PartInit is a part that Part initialises when it makes it.
type PartInit interface {
	InitPart(r *Results)
}

// Part is r's part of type T, made (zero, then InitPart when *T has it)
// on first use. A family keeps all its results in one type of its own.
func Part[T any](r *Results) *T {
	k := reflect.TypeFor[T]()
	if p, ok := r.parts[k]; ok {
		return p.(*T)
	}
	if r.parts == nil {
		r.parts = map[reflect.Type]any{}
	}
	p := new(T)
	r.parts[k] = p
	if i, ok := any(p).(PartInit); ok {
		i.InitPart(r)
	}
	return p
}

// Has tells whether the figure f was measured.
func (r *Results) Has(f FigureName) bool { return len(r.Figures) == 0 || slices.Contains(r.Figures, f) }

// WriteJSON writes the results in the shape of bench/results.json: one
// object holding every part's fields (two parts may not share a key).
func (r *Results) WriteJSON(w io.Writer) error {
	fields := map[string]json.RawMessage{}
	for _, p := range r.parts {
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("results part %T: %w", p, err)
		}
		for k, v := range m {
			if _, dup := fields[k]; dup {
				return fmt.Errorf("results: two parts hold the key %q", k)
			}
			fields[k] = v
		}
	}
	var keys []string
	for _, k := range r.KeyOrder {
		if _, ok := fields[k]; ok {
			keys = append(keys, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	var obj bytes.Buffer
	obj.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			obj.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return err
		}
		obj.Write(kb)
		obj.WriteByte(':')
		obj.Write(fields[k])
	}
	obj.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, obj.Bytes(), "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}

// WriteTable prints the BENCH.md table in Markdown: one column per N, the
// target and whether it is met (targets apply at N = 10000). Each figure
// of Table adds its rows.
func (r *Results) WriteTable(w io.Writer) error {
	t := &Rows{sizes: r.Sizes}
	for _, f := range r.Table {
		f.Rows(r, t)
	}
	return (&table{sizes: r.Sizes, rows: append(t.perN, t.single...)}).write(w)
}
