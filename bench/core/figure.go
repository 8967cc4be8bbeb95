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

// Spec describes a figure whose family keeps its results in a T (one
// per Results, shared by the family's figures: see Part).
type Spec[T any] struct {
	Name          FigureName
	Measures      string
	OnlyWhenNamed bool
	// Check, when set, refuses options the figure cannot work with.
	Check func(o Options) error
	Run   func(ctx context.Context, env *Env, o Options, res *Results, into *T) error
	Rows  func(res *Results, from *T, t *Rows)
}

// NewFigure is the Figure s describes.
func NewFigure[T any](s Spec[T]) Figure { return figure[T]{s} }

type figure[T any] struct{ s Spec[T] }

func (f figure[T]) Name() FigureName     { return f.s.Name }
func (f figure[T]) Measures() string     { return f.s.Measures }
func (f figure[T]) OnlyWhenNamed() bool  { return f.s.OnlyWhenNamed }
func (f figure[T]) Prepare(res *Results) { Part[T](res) }

func (f figure[T]) Check(o Options) error {
	if f.s.Check == nil {
		return nil
	}
	return f.s.Check(o)
}

func (f figure[T]) Run(ctx context.Context, env *Env, o Options, res *Results) error {
	return f.s.Run(ctx, env, o, res, Part[T](res))
}

func (f figure[T]) Rows(res *Results, t *Rows) { f.s.Rows(res, Part[T](res), t) }
