// Command contiv-bench runs the standard benchmark of BENCH.md (make
// bench), for whoever measures the agent or compares it with another
// implementation. It prints the table, writes the figures as JSON
// (bench/results.json) and exits non-zero, saying why, on bad flags or a
// failed measurement. Flags choose the figures (-figures), the sizes, the
// number of runs, the latency figure's duration and rate, the fan-out
// figure's agent counts (-fanout-k) and changes, a short smoke mode
// (-quick), and CPU profiles of the largest resync and per-change paths
// and of the running agent's changes.
//
// It is wiring only: the figures and their measurements live in
// bench/figures, their table in bench/harness.
package main
