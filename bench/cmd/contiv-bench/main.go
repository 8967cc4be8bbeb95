package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"time"

	"contiv.dev/vpp/bench/core"
	"contiv.dev/vpp/bench/harness"
)

func main() {
	harness.RunChild() // this binary as the large figure's etcd, simulated VPP or agent
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "contiv-bench:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("contiv-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		out         = fs.String("out", "", "write the results as JSON to this file")
		sizes       = fs.String("n", "1000,5000,10000,50000", "comma-separated sizes N of W(N)")
		runs        = fs.Int("runs", 5, "runs per figure; medians are reported")
		figures     = fs.String("figures", "", "comma-separated figures to measure ("+figureNames()+"; real-vpp with -vpp-socket); default all but real-vpp")
		decode      = fs.Int("decode-iters", 20000, "decodes per run of the decode figure")
		joiners     = fs.Int("joiners", 100, "NodeSync: agents claiming an ID at once")
		many        = fs.Int("many-joiners", 1000, "NodeSync, the nodesync-many figure: agents claiming an ID at once")
		nplN        = fs.Int("npl-n", 10000, "network programming latency: N of W(N) loaded into etcd")
		nplDur      = fs.Duration("npl-duration", 60*time.Second, "network programming latency: how long changes are written")
		nplRate     = fs.Float64("npl-rate", 20, "network programming latency: changes written per second")
		programN    = fs.Int("program-n", 10000, "vpp-program and startup: N of W(N) programmed over the simulated VPP's socket")
		largeN      = fs.Int("large-n", 50000, "large: N of W(N) programmed and started over the simulated VPP's socket, the agent's heap measured")
		vppSocket   = fs.String("vpp-socket", "", "real-vpp (only when named in -figures): the API socket of a freshly started real VPP that W(-large-n) is programmed into")
		fanoutKs    = fs.String("fanout-k", "50,100,200", "fan-out: comma-separated agent counts K")
		fanoutN     = fs.Int("fanout-n", 10000, "fan-out and agent-change: N of W(N) loaded into etcd")
		fanoutCh    = fs.Int("fanout-changes", 50, "fan-out: changes written at each K")
		agentCh     = fs.Int("agent-changes", 2000, "agent-change: changes measured (blocks of 100)")
		quick       = fs.Bool("quick", false, "smoke mode: N=100,1000, 1 run, 10 and 20 joiners, 2 s of latency on W(1000), W(1000) over the socket (both figures), 5 and 10 agents on W(1000)")
		profileDir  = fs.String("cpuprofile-dir", "", "write CPU profiles of the largest N's resync and per-change paths here (and, with agent-change, the agent's heap and changes)")
		profileTime = fs.Duration("profile-time", 5*time.Second, "with -cpuprofile-dir: the length of each CPU profile")
		verbose     = fs.Bool("v", false, "log progress and the agent's warnings to stderr")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o := core.Options{
		Runs: *runs, DecodeIters: *decode, Joiners: *joiners, ManyJoiners: *many, NPLSize: *nplN, NPLDuration: *nplDur, NPLRate: *nplRate,
		ProgramSize: *programN, LargeSize: *largeN, VPPSocket: *vppSocket, ProfileDir: *profileDir, ProfileTime: *profileTime, FanoutSize: *fanoutN, FanoutChanges: *fanoutCh, AgentChanges: *agentCh,
	}
	var err error
	if o.Sizes, err = parseSizes(*sizes); err != nil {
		return err
	}
	if o.FanoutKs, err = parseSizes(*fanoutKs); err != nil {
		return fmt.Errorf("-fanout-k: %w", err)
	}
	for _, f := range strings.Split(*figures, ",") {
		if f = strings.TrimSpace(f); f != "" {
			o.Figures = append(o.Figures, core.FigureName(f))
		}
	}
	if *quick {
		o.Sizes, o.Runs, o.Joiners, o.ManyJoiners, o.NPLSize, o.NPLDuration = []int{100, 1000}, 1, 10, 20, 1000, 2*time.Second
		o.ProgramSize, o.LargeSize = 1000, 1000
		o.FanoutKs, o.FanoutSize, o.FanoutChanges, o.AgentChanges = []int{5, 10}, 1000, 10, 200
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
		o.AgentLog = stderr
	}
	o.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	res, err := harness.Run(ctx, o)
	if err != nil {
		return err
	}
	var table bytes.Buffer
	if err := res.WriteTable(&table); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Standard benchmark (BENCH.md), medians of %d runs; %d CPUs, %s, %s; took %s\n\n",
		o.Runs, runtime.NumCPU(), runtime.Version(), time.Now().Format(time.DateOnly), time.Since(start).Round(time.Second))
	if _, err := stdout.Write(table.Bytes()); err != nil {
		return err
	}
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		if err := res.WriteJSON(f); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", *out, err)
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// parseSizes parses "1000,5000,10000".
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-n: %q is not a positive size", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// figureNames is the names of the figures measured by default, comma-separated.
func figureNames() string {
	var names []string
	for _, f := range harness.AllFigures() {
		names = append(names, string(f))
	}
	return strings.Join(names, ",")
}
