package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcd"
)

// streams are the standard streams a command uses.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// command is one subcommand. A new one is a function and a line in
// commands().
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, s streams, args []string) error
}

func commands() []command {
	return []command{
		{name: "services", summary: "the services an agent derived (--skipped: what it left out, and why)", run: runServices},
		{name: "nat44", summary: "an agent's NAT44 state, desired or --applied, with failures and conflicts", run: runNAT44},
		{name: "renderer", summary: "an agent's service renderer (nat44 or cnat): counters, failures, conflicts, pending interfaces and tables", run: runRenderer},
		{name: "nodes", summary: "the nodes an agent knows: names, IDs, VPP and management IPs", run: runNodes},
		{name: "ipam", summary: "an agent's address plan and pod IP allocations", run: runIPAM},
		{name: "status", summary: "an agent's controller, VPP connection and readiness", run: runStatus},
		{name: "latency", summary: "an agent's network programming latency: p50, p99 and max over its latest changes", run: runLatency},
		{name: "render", summary: "offline: the NAT44 state an agent on a node would program for manifests", run: runRender},
		{name: "trace", summary: "which backends a packet to VIP:PORT/PROTO reaches, with probabilities", run: runTrace},
		{name: "doctor", summary: "names what an agent misses of VPP, the CNI and etcd, with what to do", run: runDoctor},
		{name: "load", summary: "write Kubernetes YAML into etcd in the reflector's format", run: runLoad},
	}
}

// errUsage marks an error in how a command was called (exit status 2).
var errUsage = errors.New("usage")

// run dispatches args to a subcommand and returns the exit status:
// 0 success, 1 failure, 2 bad usage.
func run(ctx context.Context, args []string, s streams) int {
	if len(args) == 0 {
		usage(s.err)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		usage(s.out)
		return 0
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		err := c.run(ctx, s, args[1:])
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(s.err, "contivctl %s: %v\n", name, err)
			return 2
		}
		fmt.Fprintf(s.err, "contivctl %s: %v\n", name, err)
		return 1
	}
	fmt.Fprintf(s.err, "contivctl: unknown command %q\n\n", name)
	usage(s.err)
	return 2
}

func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("Usage: contivctl <command> [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'contivctl <command> -h' for the flags of a command.\n")
	_, _ = io.WriteString(w, b.String())
}

// newFlagSet returns a flag set for command name whose errors and help go
// to s.err.
func newFlagSet(s streams, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(s.err)
	fs.Usage = func() {
		fmt.Fprintf(s.err, "Usage: contivctl %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args into fs; a parse error (already printed) is a usage
// error, and no positional arguments are accepted.
func parse(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}

// parseFlags parses args into fs; a parse error (already printed) is a
// usage error. Positional arguments are left in fs.Args().
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return nil
}

// defaultEtcd is where --etcd points by default: the client URL of the
// agent's embedded etcd (make run's agent).
var defaultEtcd = contivconf.Defaults().Etcd.Embedded.ClientURL

// etcdFlags are the flags of commands that talk to etcd.
type etcdFlags struct {
	endpoints   string
	dialTimeout time.Duration
	timeout     time.Duration
	ca          string
	cert        string
	key         string
}

func (f *etcdFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.endpoints, "etcd", defaultEtcd, "etcd endpoints, `host:port,...` or URLs")
	fs.DurationVar(&f.dialTimeout, "dial-timeout", 5*time.Second, "how long to wait for etcd to answer at first")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "bound on the whole command's etcd work")
	fs.StringVar(&f.ca, "etcd-ca", "", "CA certificate `file` of etcd (TLS)")
	fs.StringVar(&f.cert, "etcd-cert", "", "client certificate `file` for etcd (TLS)")
	fs.StringVar(&f.key, "etcd-key", "", "client key `file` for etcd (TLS)")
}

func (f *etcdFlags) connect(ctx context.Context) (*clientv3.Client, error) {
	var eps []string
	for e := range strings.SplitSeq(f.endpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			eps = append(eps, e)
		}
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("%w: --etcd names no endpoint", errUsage)
	}
	cli, err := etcd.NewClient(ctx, etcd.ClientParams{
		Endpoints: eps, DialTimeout: f.dialTimeout,
		CAFile: f.ca, CertFile: f.cert, KeyFile: f.key,
	})
	if err != nil {
		return nil, err
	}
	// The client dials lazily: fail fast, with a clear error, when no
	// endpoint answers.
	pctx, cancel := context.WithTimeout(ctx, f.dialTimeout)
	defer cancel()
	if _, err := cli.Get(pctx, "/", clientv3.WithCountOnly()); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("etcd at %s not answering within %s: %w", f.endpoints, f.dialTimeout, err)
	}
	return cli, nil
}

// logger logs to s.err: warnings, or everything with verbose.
func logger(s streams, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: level}))
}
