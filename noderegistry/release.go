package noderegistry

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/backoff"
)

// Release frees node name's ID: it deletes the node record and the node's
// ID keys in one transaction and, when quarantine > 0, leaves a tombstone per
// ID that keeps other nodes from taking it until etcd expires it (the tomb-
// stone's lease TTL is the quarantine, in whole seconds, at least the
// minimum TTL etcd grants). The node itself may take its ID back meanwhile.
// Releasing a node that holds nothing is no error. The reflector calls
// Release when a Kubernetes node is deleted.
func Release(ctx context.Context, cli Etcd, name string, quarantine time.Duration) error {
	if err := checkName(name); err != nil {
		return err
	}
	for fails := 0; ; fails++ {
		if done, err := releaseOnce(ctx, cli, name, quarantine); done || err != nil {
			return err
		}
		if !backoff.Sleep(ctx, pause(fails, defaultMaxBackoff)) {
			return fmt.Errorf("node %s: release: %w", name, ctx.Err())
		}
	}
}

// releaseOnce tries once; false without error means it lost a race.
func releaseOnce(ctx context.Context, cli Etcd, name string, quarantine time.Duration) (bool, error) {
	resp, err := cli.Txn(ctx).Then(viewOps(name)...).Commit()
	if err != nil {
		return false, fmt.Errorf("node %s: release: %w", name, err)
	}
	v, err := parseView(name, resp.Header.GetRevision(), resp.Responses)
	if err != nil {
		return false, fmt.Errorf("node %s: release: %w", name, err)
	}
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	ids := map[uint32]bool{}
	if v.record != nil {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(recordKey(name)), "=", v.record.mod))
		ops = append(ops, clientv3.OpDelete(recordKey(name)))
		if rec, err := decodeRecord(name, v.record.value); err == nil {
			if owner, held := v.owners[rec.ID]; !held || string(owner.value) == name {
				ids[rec.ID] = true
			}
		}
	}
	for id, e := range v.owners {
		if string(e.value) == name {
			ids[id] = true
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(idKey(id)), "=", e.mod))
			ops = append(ops, clientv3.OpDelete(idKey(id)))
		}
	}
	if len(ops) == 0 {
		return true, nil
	}
	var lease clientv3.LeaseID
	if quarantine > 0 {
		l, err := cli.Grant(ctx, int64((quarantine+time.Second-1)/time.Second))
		if err != nil {
			return false, fmt.Errorf("node %s: release: quarantine lease: %w", name, err)
		}
		lease = l.ID
		now := time.Now().UTC()
		for id := range ids {
			val, err := json.Marshal(Tombstone{Name: name, ID: id, Released: now, Quarantine: quarantine.String()})
			if err != nil {
				return false, err
			}
			ops = append(ops, clientv3.OpPut(releasedKey(id), string(val), clientv3.WithLease(lease)))
		}
	}
	tr, err := cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err == nil && tr.Succeeded {
		return true, nil
	}
	if lease != 0 {
		_, _ = cli.Revoke(ctx, lease)
	}
	if err != nil {
		return false, fmt.Errorf("node %s: release: %w", name, err)
	}
	return false, nil
}
