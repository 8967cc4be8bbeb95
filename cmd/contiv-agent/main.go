package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"contiv.dev/vpp/agent"
	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run parses the command line, builds the agent and runs it until SIGINT
// or SIGTERM; it returns the process exit code.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("contiv-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", os.Getenv("CONTIV_CONFIG"), "YAML configuration file (env CONTIV_CONFIG); see deploy/examples/agent.yaml")
	load := fs.String("load", "", "Kubernetes YAML written into etcd at start, as contivctl load does (demos, tests)")
	contivconf.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg, err := contivconf.Resolve(contivconf.Sources{File: *configPath, Env: os.LookupEnv, Flags: fs, Hostname: os.Hostname})
	if err != nil {
		fmt.Fprintf(stderr, "contiv-agent: refusing to start: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// govpp logs through process-wide loggers: set once, before any use.
	vpp.RouteGovppLogs(slog.New(cfg.Log.NewHandler(stderr)).With("node", cfg.NodeName))
	opts := agent.Options{Config: cfg, LoadFile: *load, LogOutput: stderr}
	if _, err := os.Stat(cfg.VPP.Socket); cfg.VPP.Simulated(err == nil) {
		// Only by choice (vpp.simulate auto or always): the default, never,
		// waits for a real VPP and is not ready meanwhile. The simulated
		// VPP is served on a socket of its own, which the agent dials with
		// govpp's socket client as it would a real VPP's.
		v := sim.New(sim.Options{Logger: slog.New(cfg.Log.NewHandler(stderr)).With("part", "sim")})
		sock := filepath.Join(os.TempDir(), fmt.Sprintf("contiv-simulated-vpp-%d.sock", os.Getpid()))
		srv, err := v.Serve(sock)
		if err != nil {
			fmt.Fprintf(stderr, "contiv-agent: serving the simulated VPP: %v\n", err)
			return 1
		}
		defer srv.Close()
		cfg.VPP.Socket = sock
		opts.Config = cfg
		opts.Dataplane = agent.SimulatedOverSocket(v)
	}
	a, err := agent.New(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "contiv-agent: %v\n", err)
		return 1
	}
	if err := a.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "contiv-agent: %v\n", err)
		return 1
	}
	return 0
}
