package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"contiv.dev/vpp/plugins/ksr"
)

// errUsage marks a bad command line (exit code 2).
var errUsage = errors.New("usage")

// options is the parsed command line.
type options struct {
	kubeconfig string
	master     string

	etcdEndpoints        []string
	etcdCA               string
	etcdCert             string
	etcdKey              string
	etcdDialTimeout      time.Duration
	etcdTimeout          time.Duration
	probeInterval        time.Duration
	resyncInterval       time.Duration
	releasedIDQuarantine time.Duration
	leaderKeyTTL         time.Duration

	leaderElect    bool
	leaseNamespace string
	leaseName      string
	leaseDuration  time.Duration
	renewDeadline  time.Duration
	retryPeriod    time.Duration
	identity       string

	httpAddr  string
	logLevel  slog.Level
	logFormat string
}

// environment is what options read besides the arguments.
type environment struct {
	getenv   func(string) string
	hostname func() (string, error)
}

// parseOptions parses args; help and errors are printed to out.
func parseOptions(args []string, env environment, out io.Writer) (options, error) {
	var (
		o         options
		endpoints string
		level     string
	)
	fs := flag.NewFlagSet("contiv-ksr", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.kubeconfig, "kubeconfig", env.getenv("KUBECONFIG"), "kubeconfig `file`; empty: in-cluster configuration")
	fs.StringVar(&o.master, "master", "", "API server `URL` (https://IP:6443); overrides the in-cluster Service address or the kubeconfig's server, so that the reflector needs no Service")
	fs.StringVar(&endpoints, "etcd-endpoints", "", "etcd endpoints, comma-separated `URLs` (required)")
	fs.StringVar(&o.etcdCA, "etcd-ca-file", "", "CA certificate `file` of etcd (TLS)")
	fs.StringVar(&o.etcdCert, "etcd-cert-file", "", "client certificate `file` for etcd (TLS)")
	fs.StringVar(&o.etcdKey, "etcd-key-file", "", "client key `file` for etcd (TLS)")
	fs.DurationVar(&o.etcdDialTimeout, "etcd-dial-timeout", 5*time.Second, "how long to wait for etcd at start")
	fs.DurationVar(&o.etcdTimeout, "etcd-timeout", ksr.DefaultEtcdTimeout, "bound of one write batch, node release or health probe")
	fs.DurationVar(&o.probeInterval, "etcd-probe-interval", ksr.DefaultProbeInterval, "how often etcd's health and data are checked")
	fs.DurationVar(&o.resyncInterval, "resync-interval", ksr.DefaultResyncInterval, "how often a mark and sweep repairs etcd (0: never)")
	fs.DurationVar(&o.releasedIDQuarantine, "released-id-quarantine", time.Hour, "how long a deleted node's ID stays reserved (0: freed at once)")
	fs.DurationVar(&o.leaderKeyTTL, "leader-key-ttl", ksr.DefaultLeaderTTL, "TTL of the etcd leader key that fences every write (whole seconds)")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader on a Lease; false only for a single replica")
	fs.StringVar(&o.leaseNamespace, "lease-namespace", or(env.getenv("POD_NAMESPACE"), "contiv-system"), "`namespace` of the Lease ($POD_NAMESPACE if set)")
	fs.StringVar(&o.leaseName, "lease-name", ksr.DefaultLeaseName, "`name` of the Lease")
	fs.DurationVar(&o.leaseDuration, "lease-duration", ksr.DefaultLeaseDuration, "how long followers wait before taking over a Lease that is not renewed")
	fs.DurationVar(&o.renewDeadline, "renew-deadline", ksr.DefaultRenewDeadline, "the leader stops when it could not renew for this long")
	fs.DurationVar(&o.retryPeriod, "retry-period", ksr.DefaultRetryPeriod, "pause between Lease attempts")
	fs.StringVar(&o.identity, "identity", env.getenv("POD_NAME"), "this replica's `name` in the Lease (default $POD_NAME or the host name)")
	fs.StringVar(&o.httpAddr, "http-addr", ":9191", "listen `address` of /healthz, /readyz, /metrics and /v1/status")
	fs.StringVar(&level, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "text", "log `format`: text or json")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	for e := range strings.SplitSeq(endpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			o.etcdEndpoints = append(o.etcdEndpoints, e)
		}
	}
	if err := o.logLevel.UnmarshalText([]byte(level)); err != nil {
		return o, fmt.Errorf("%w: --log-level %q: want debug, info, warn or error", errUsage, level)
	}
	if o.identity == "" {
		h, err := env.hostname()
		if err != nil {
			return o, fmt.Errorf("%w: no --identity, no $POD_NAME, and no host name: %v", errUsage, err)
		}
		o.identity = h
	}
	return o, o.check()
}

// check refuses options the reflector cannot run with, naming them.
func (o options) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(o.etcdEndpoints) == 0 {
		bad("--etcd-endpoints is required: the etcd the agents read")
	}
	if o.logFormat != "text" && o.logFormat != "json" {
		bad("--log-format %q: want text or json", o.logFormat)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"--etcd-dial-timeout", o.etcdDialTimeout}, {"--etcd-timeout", o.etcdTimeout},
		{"--etcd-probe-interval", o.probeInterval}, {"--lease-duration", o.leaseDuration},
		{"--renew-deadline", o.renewDeadline}, {"--retry-period", o.retryPeriod},
		{"--leader-key-ttl", o.leaderKeyTTL},
	} {
		if d.v <= 0 {
			bad("%s %s: must be positive", d.name, d.v)
		}
	}
	if o.resyncInterval < 0 {
		bad("--resync-interval %s: must not be negative", o.resyncInterval)
	}
	if o.releasedIDQuarantine < 0 {
		bad("--released-id-quarantine %s: must not be negative", o.releasedIDQuarantine)
	}
	if o.leaderElect {
		if o.leaseNamespace == "" || o.leaseName == "" {
			bad("--lease-namespace and --lease-name must not be empty")
		}
		if o.renewDeadline >= o.leaseDuration {
			bad("--renew-deadline %s: must be less than --lease-duration %s", o.renewDeadline, o.leaseDuration)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return nil
}

// election is the reflector's election settings; nil without election.
func (o options) election() *ksr.Election {
	if !o.leaderElect {
		return nil
	}
	return &ksr.Election{
		Namespace:     o.leaseNamespace,
		Name:          o.leaseName,
		LeaseDuration: o.leaseDuration,
		RenewDeadline: o.renewDeadline,
		RetryPeriod:   o.retryPeriod,
	}
}

// resync is the reflector's ResyncInterval: 0 on the command line is never.
func (o options) resync() time.Duration {
	if o.resyncInterval == 0 {
		return -1
	}
	return o.resyncInterval
}

// logger is the process's logger on w.
func (o options) logger(w io.Writer) *slog.Logger {
	ho := &slog.HandlerOptions{Level: o.logLevel}
	if o.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, ho))
	}
	return slog.New(slog.NewTextHandler(w, ho))
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
