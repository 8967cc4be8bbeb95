// Command contiv-bench runs the standard benchmark of BENCH.md (make
// bench): it prints the table and writes the figures as JSON
// (bench/results.json). Flags choose the sizes, the number of runs, the
// latency figure's duration and rate, the fan-out figure's agent counts
// (-fanout-k) and changes, its proxy tier's proxies (-fanout-proxies) and
// lightweight watchers (-fanout-light), a short smoke mode (-quick), and CPU profiles
// of the largest resync and per-change paths and of the running agent's
// changes.
//
// It is wiring only: the measurements live in bench/harness.
package main
