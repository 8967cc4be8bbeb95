package noderegistry

import (
	"context"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/kubestate"
)

// maxPublishRounds bounds how often Publish re-reads a record that changed
// under it (only Claim and Release write it besides Publish).
const maxPublishRounds = 5

// Publish makes the record of node name, holding ID id, carry a. It writes
// only when the stored addresses differ and reports whether it wrote. It
// fails with ErrReleased when the node no longer holds id (the reflector
// released it, or etcd lost it): the caller claims again.
func Publish(ctx context.Context, cli Etcd, name string, id uint32, a Addresses) (bool, error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	vpp, mgmt := a.canonical()
	want := &kubestate.VppNode{Name: name, ID: id, VppIPs: vpp, MgmtIPs: mgmt}
	val, err := kubestate.Encode(want)
	if err != nil {
		return false, err
	}
	for range maxPublishRounds {
		resp, err := cli.Txn(ctx).Then(clientv3.OpGet(recordKey(name)), clientv3.OpGet(idKey(id))).Commit()
		if err != nil {
			return false, fmt.Errorf("node %s: publish addresses: %w", name, err)
		}
		owner := resp.Responses[1].GetResponseRange().GetKvs()
		if len(owner) == 0 || string(owner[0].Value) != name {
			return false, fmt.Errorf("node %s: publish addresses: ID %d no longer held: %w", name, id, ErrReleased)
		}
		recCmp := clientv3.Compare(clientv3.CreateRevision(recordKey(name)), "=", 0)
		if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
			have, err := decodeRecord(name, kvs[0].Value)
			if err == nil && have.ID != id {
				return false, fmt.Errorf("node %s: publish addresses: the record holds ID %d, not %d: %w", name, have.ID, id, ErrReleased)
			}
			if err == nil && slices.Equal(have.VppIPs, vpp) && slices.Equal(have.MgmtIPs, mgmt) {
				return false, nil
			}
			recCmp = clientv3.Compare(clientv3.ModRevision(recordKey(name)), "=", kvs[0].ModRevision)
		}
		tr, err := cli.Txn(ctx).
			If(clientv3.Compare(clientv3.Value(idKey(id)), "=", name), recCmp).
			Then(clientv3.OpPut(recordKey(name), string(val))).
			Commit()
		if err != nil {
			return false, fmt.Errorf("node %s: publish addresses: %w", name, err)
		}
		if tr.Succeeded {
			return true, nil
		}
	}
	return false, fmt.Errorf("node %s: publish addresses: the record changed %d times meanwhile", name, maxPublishRounds)
}
