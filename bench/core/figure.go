package core

import "context"

// FigureName names a figure: what -figures selects and Options.Figures
// holds.
type FigureName string

// A Figure is one measurement of a family: its name, what it measures,
// how it is measured into Results and the rows it adds to the printed
// table. NewFigure makes one.
type Figure interface {
	// Name is the figure's name.
	Name() FigureName
	// Measures says in one line what the figure measures.
	Measures() string
	// OnlyWhenNamed is true for a figure that needs what the machine may
	// not have (a real VPP): it is measured only when Options.Figures
	// names it.
	OnlyWhenNamed() bool
	// Check refuses options the figure cannot work with (nil: none).
	Check(o Options) error
	// Prepare makes the figure's family's results in res (their keys
	// that results.json always holds are then there, measured or not).
	Prepare(res *Results)
	// Run measures the figure into res.
	Run(ctx context.Context, env *Env, o Options, res *Results) error
	// Rows adds the figure's rows to the table.
	Rows(res *Results, t *Rows)
}

// NewFigure is the figure named name that measures what measures says,
// by run, and adds rows to the table. Its family keeps its results in a T
// (one per Results, shared by the family's figures: Part), which run
// fills and rows reads.
func NewFigure[T any](name FigureName, measures string,
	run func(ctx context.Context, env *Env, o Options, res *Results, into *T) error,
	rows func(res *Results, from *T, t *Rows)) Figure {
	return figure[T]{name: name, measures: measures, run: run, rows: rows}
}

// OnlyWhenNamed is f measured only when Options.Figures names it, for a
// figure that needs what the machine may not have; check refuses the
// options it cannot work with.
func OnlyWhenNamed(f Figure, check func(o Options) error) Figure {
	return named{f, check}
}

type figure[T any] struct {
	name     FigureName
	measures string
	run      func(ctx context.Context, env *Env, o Options, res *Results, into *T) error
	rows     func(res *Results, from *T, t *Rows)
}

func (f figure[T]) Name() FigureName           { return f.name }
func (f figure[T]) Measures() string           { return f.measures }
func (f figure[T]) OnlyWhenNamed() bool        { return false }
func (f figure[T]) Check(Options) error        { return nil }
func (f figure[T]) Prepare(res *Results)       { Part[T](res) }
func (f figure[T]) Rows(res *Results, t *Rows) { f.rows(res, Part[T](res), t) }

func (f figure[T]) Run(ctx context.Context, env *Env, o Options, res *Results) error {
	return f.run(ctx, env, o, res, Part[T](res))
}

// named is a Figure measured only when named.
type named struct {
	Figure
	check func(o Options) error
}

func (named) OnlyWhenNamed() bool     { return true }
func (n named) Check(o Options) error { return n.check(o) }
