package ipam

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/kubestate"
)

// KeyPrefix is the etcd prefix of node's pod IP allocations.
func KeyPrefix(node string) string { return kubestate.Prefix + "ipam/" + node + "/" }

// Store keeps one node's pod IP allocations in etcd. It implements
// addrplan.Store.
type Store struct {
	kv     clientv3.KV
	prefix string
	log    *slog.Logger
}

var _ addrplan.Store = (*Store)(nil)

// NewStore returns the store of node's allocations.
func NewStore(kv clientv3.KV, node string, log *slog.Logger) *Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{kv: kv, prefix: KeyPrefix(node), log: log}
}

func (s *Store) key(pod addrplan.PodID) string { return s.prefix + pod.Namespace + "/" + pod.Name }

// List implements addrplan.Store. Keys that name no pod are logged and skipped.
func (s *Store) List(ctx context.Context) (map[addrplan.PodID]string, error) {
	resp, err := s.kv.Get(ctx, s.prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.prefix, err)
	}
	out := make(map[addrplan.PodID]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		ns, name, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), s.prefix), "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			s.log.Warn("ipam: key names no pod, skipped", "key", string(kv.Key))
			continue
		}
		out[addrplan.PodID{Namespace: ns, Name: name}] = string(kv.Value)
	}
	return out, nil
}

// Put implements addrplan.Store.
func (s *Store) Put(ctx context.Context, pod addrplan.PodID, ip netip.Addr) error {
	if _, err := s.kv.Put(ctx, s.key(pod), ip.String()); err != nil {
		return fmt.Errorf("put %s: %w", s.key(pod), err)
	}
	return nil
}

// Delete implements addrplan.Store.
func (s *Store) Delete(ctx context.Context, pod addrplan.PodID) error {
	if _, err := s.kv.Delete(ctx, s.key(pod)); err != nil {
		return fmt.Errorf("delete %s: %w", s.key(pod), err)
	}
	return nil
}
