// Package harness runs the standard benchmark of BENCH.md: Run measures
// the figures it is asked for, each by its entry in one table (registry)
// of the families' figures under bench/figures, and returns
// core.Results, which print the table and write bench/results.json. It
// is for whoever runs make bench (contiv-bench is its command) or adds a
// figure to the table. Bad options are refused with core.ErrOptions,
// naming what is wrong; a binary that calls Run calls RunChild first
// thing, and nothing in the product imports the benchmark.
package harness
