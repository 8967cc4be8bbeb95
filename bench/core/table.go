package core

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Verdict is "yes" or "NO" when the target can be judged, else "n/a".
func Verdict(judged bool, met func() bool) string {
	switch {
	case !judged:
		return "n/a"
	case met():
		return "yes"
	}
	return "NO"
}

type table struct {
	sizes []int
	rows  [][]string
}

func (t *table) write(w io.Writer) error {
	head := []string{"figure"}
	for _, n := range t.sizes {
		head = append(head, "N="+strconv.Itoa(n))
	}
	head = append(head, "target", "met?")
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	line(head)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// SortedNumeric is m's keys in numeric order.
func SortedNumeric[V any](m map[string]V) []string {
	ks := slices.Collect(maps.Keys(m))
	slices.SortFunc(ks, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	return ks
}

// FmtList formats xs with format, comma-separated.
func FmtList(xs []float64, format string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, ", ")
}

// Rows collects a table's rows: those with a cell per N first, then those
// with one value (in the last column).
type Rows struct {
	sizes        []int
	perN, single [][]string
}

// Sizes are the table's N, one column each.
func (t *Rows) Sizes() []int { return t.sizes }

// AddPerN adds a row with a cell per N (cell formats N's) and the target
// with whether it is met.
func (t *Rows) AddPerN(name string, cell func(n int) string, target, met string) {
	cells := make([]string, len(t.sizes))
	for i, n := range t.sizes {
		cells[i] = cell(n)
	}
	t.perN = append(t.perN, append(append([]string{name}, cells...), target, met))
}

// AddSingle adds a row with one value, in the last column.
func (t *Rows) AddSingle(name, value, target, met string) {
	cells := make([]string, len(t.sizes))
	for i := range cells {
		cells[i] = "—"
	}
	if len(cells) > 0 {
		cells[len(cells)-1] = value
	}
	t.single = append(t.single, append(append([]string{name}, cells...), target, met))
}
