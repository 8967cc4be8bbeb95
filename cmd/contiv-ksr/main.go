package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"contiv.dev/vpp/internal/etcd"
	"contiv.dev/vpp/noderegistry"
	"contiv.dev/vpp/plugins/ksr"
)

func main() {
	env := environment{getenv: os.Getenv, hostname: os.Hostname}
	os.Exit(run(os.Args[1:], env, os.Stderr))
}

// run parses the command line, wires the reflector and runs it until
// SIGINT or SIGTERM; it returns the process exit code.
func run(args []string, env environment, stderr io.Writer) int {
	o, err := parseOptions(args, env, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "contiv-ksr: refusing to start: %v\n", err)
		return 2
	}
	log := o.logger(stderr)
	klog.SetSlogLogger(log) // client-go's own logs, where no context carries a logger
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, o, log); err != nil {
		log.Error("contiv-ksr failed", "err", err)
		return 1
	}
	log.Info("contiv-ksr stopped")
	return 0
}

// serve builds the clients and the reflector, then runs the reflector and
// its HTTP server until ctx ends.
func serve(ctx context.Context, o options, log *slog.Logger) error {
	kcfg, err := kubeConfig(o.kubeconfig, o.master)
	if err != nil {
		return err
	}
	kcfg.UserAgent = "contiv-ksr"
	kube, err := kubernetes.NewForConfig(kcfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	cli, err := etcd.NewClient(ctx, etcd.ClientParams{
		Endpoints: o.etcdEndpoints, DialTimeout: o.etcdDialTimeout,
		CAFile: o.etcdCA, CertFile: o.etcdCert, KeyFile: o.etcdKey,
	})
	if err != nil {
		return err
	}
	defer cli.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r, err := ksr.New(ksr.Params{
		Logger: log,
		Kube:   kube,
		Etcd:   cli,
		Nodes: ksr.NodeReleaserFunc(func(ctx context.Context, etcd ksr.Etcd, name string) error {
			return noderegistry.Release(ctx, etcd, name, o.releasedIDQuarantine)
		}),
		Registerer:     reg,
		Identity:       o.identity,
		Election:       o.election(),
		EtcdTimeout:    o.etcdTimeout,
		LeaderTTL:      o.leaderKeyTTL,
		ProbeInterval:  o.probeInterval,
		ResyncInterval: o.resync(),
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.httpAddr)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	log.Info("contiv-ksr starting", "identity", o.identity, "etcd", o.etcdEndpoints,
		"leaderElection", o.leaderElect, "lease", o.leaseNamespace+"/"+o.leaseName, "http", ln.Addr().String())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { r.Run(ctx) })
	err = r.HTTP(o.httpAddr, reg).Serve(ctx, ln)
	cancel()
	wg.Wait()
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	return nil
}

// kubeConfig loads path, or the in-cluster configuration when path is
// empty; a non-empty master replaces the API server address of either. In
// the cluster the in-cluster address is the kubernetes Service's ClusterIP,
// which only works once Services do: --master names the API server itself.
func kubeConfig(path, master string) (*rest.Config, error) {
	if path == "" {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster kubernetes configuration (or pass --kubeconfig): %w", err)
		}
		if master != "" {
			c.Host = master
		}
		return c, nil
	}
	c, err := clientcmd.BuildConfigFromFlags(master, path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return c, nil
}
