package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/kubestate"
)

func runLoad(ctx context.Context, s streams, args []string) error {
	fs := newFlagSet(s, "load", "-f FILE.yaml [--etcd host:port,...] [--prune]")
	file := fs.String("f", "", "Kubernetes YAML `file` to load (- for standard input)")
	prune := fs.Bool("prune", false, "also delete the stored objects of every resource the file holds that the file does not name")
	verbose := fs.Bool("v", false, "log every key written")
	var ef etcdFlags
	ef.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *file == "" {
		return fmt.Errorf("%w: -f FILE is required", errUsage)
	}
	objs, err := readManifests(s, *file)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ef.timeout)
	defer cancel()
	cli, err := ef.connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	w := kubestate.NewWriter(cli, logger(s, *verbose))
	stats, err := load(ctx, w, objs, *prune)
	printLoad(s.out, stats)
	if err != nil {
		return err
	}
	if err := markLoaded(ctx, cli, stats); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "loaded %d objects from %s into etcd at %s\n", len(objs), *file, ef.endpoints)
	return nil
}

func readManifests(s streams, file string) ([]kubestate.Object, error) {
	var r io.Reader = s.in
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	objs, err := kubestate.LoadYAML(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return objs, nil
}

// loadStats is what load did to one resource.
type loadStats struct {
	Resource kubestate.Resource
	kubestate.SyncStats
}

// load writes objs through w, resource by resource in the order of
// kubestate.Resources, skipping keys whose stored bytes are already equal.
// With prune, every resource present in objs is synced: its stored keys that
// objs does not hold are deleted. Resources absent from objs are never
// touched.
func load(ctx context.Context, w *kubestate.Writer, objs []kubestate.Object, prune bool) ([]loadStats, error) {
	byRes := make(map[kubestate.Resource][]kubestate.Object)
	for _, o := range objs {
		r := o.Key().Resource
		byRes[r] = append(byRes[r], o)
	}
	var out []loadStats
	for _, r := range kubestate.Resources {
		if len(byRes[r]) == 0 {
			continue
		}
		var (
			st  kubestate.SyncStats
			err error
		)
		if prune {
			st, err = w.Sync(ctx, r, byRes[r])
		} else {
			st, err = w.PutChanged(ctx, byRes[r])
		}
		out = append(out, loadStats{Resource: r, SyncStats: st})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// markLoaded writes the layout and sync markers (kubestate.MarkSynced: a
// compare-and-swap on the stored marker, starting a new lineage, so that a
// reflector marking at the same time never leaves the older marker stored):
// what was loaded is the cluster state, which agents take only as a
// complete output in their layout. A load that changed nothing, into an
// etcd that has them, writes nothing.
func markLoaded(ctx context.Context, cli *clientv3.Client, stats []loadStats) error {
	changed := slices.ContainsFunc(stats, func(s loadStats) bool { return s.Put+s.Deleted > 0 })
	if !changed {
		resp, err := cli.Txn(ctx).Then(clientv3.OpGet(kubestate.LayoutKey), clientv3.OpGet(kubestate.SyncedKey)).Commit()
		if err != nil {
			return err
		}
		value := func(i int) []byte {
			if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
				return kvs[0].Value
			}
			return nil
		}
		if _, err := kubestate.Completeness(value(0), value(1)); err == nil {
			return nil
		}
	}
	_, err := kubestate.MarkSynced(ctx, cli, "contivctl load", 0)
	return err
}

func printLoad(w io.Writer, stats []loadStats) {
	if len(stats) == 0 {
		return
	}
	fmt.Fprintf(w, "%-14s %6s %10s %8s\n", "RESOURCE", "PUT", "UNCHANGED", "DELETED")
	for _, s := range stats {
		fmt.Fprintf(w, "%-14s %6d %10d %8d\n", s.Resource, s.Put, s.Unchanged, s.Deleted)
	}
}
