package nodesync

import (
	"context"
	"errors"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/retryloop"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/noderegistry"
	"contiv.dev/vpp/plugins/controller"
)

// write is the background writer's job: it claims this node's ID if asked
// to, then makes its record carry the wanted addresses.
func (h *Handler) write(ctx context.Context) error {
	h.mu.RLock()
	gen, id, claim := h.gen, h.id, h.claimGen != 0
	h.mu.RUnlock()
	if claim && id != 0 {
		gone, err := h.nodeGone(ctx)
		if err != nil {
			return err
		}
		if gone {
			// Released with its Node: the Node's return asks again.
			h.log.Info("nodesync: this node's Kubernetes Node is gone: its ID stays released until the Node is back",
				"node", h.p.NodeName, "id", id)
			h.mu.Lock()
			h.released = true
			if h.claimGen <= gen {
				h.claimGen = 0
			}
			h.done = max(h.done, gen)
			h.mu.Unlock()
			return nil
		}
	}
	if claim {
		cctx, cancel := context.WithTimeout(ctx, h.p.ClaimTimeout)
		got, err := noderegistry.Claim(cctx, noderegistry.Params{
			Client: h.p.Client, Name: h.p.NodeName, StateFile: h.p.StateFile,
			WantID: id, MaxID: h.p.MaxID, AttemptTimeout: h.p.WriteTimeout, Logger: h.log,
		})
		cancel()
		if err != nil {
			if errors.Is(err, noderegistry.ErrIDTaken) || errors.Is(err, noderegistry.ErrIDConflict) || errors.Is(err, noderegistry.ErrInvalid) {
				h.log.Error("nodesync: claim refused", "node", h.p.NodeName, "err", err)
				err = fmt.Errorf("%w: %w", err, retryloop.ErrNoRetry)
			}
			return fmt.Errorf("nodesync: %w", err)
		}
		h.mu.Lock()
		first := h.id == 0
		h.id = got
		h.released = false
		if h.claimGen <= gen {
			h.claimGen = 0
		}
		h.mu.Unlock()
		if first && h.events != nil {
			// The handlers after this one (IPAM) wait for the ID.
			h.events.FollowUp(&controller.ResyncEvent{Kind: controller.ResyncHealing})
		}
	}
	if err := h.publish(ctx); err != nil {
		return err
	}
	h.mu.Lock()
	h.done = max(h.done, gen)
	h.mu.Unlock()
	return nil
}

// publish makes this node's record carry the wanted addresses.
func (h *Handler) publish(ctx context.Context) error {
	h.mu.RLock()
	id := h.id
	var addrs noderegistry.Addresses
	rec, haveRecord := h.table.Record(h.p.NodeName)
	if haveRecord {
		addrs, _ = noderegistry.RecordAddresses(rec) // canonical already
	}
	haveVppIPs := h.vppIPs != nil
	if haveVppIPs {
		addrs.VppIPs = slices.Clone(h.vppIPs)
	}
	mgmt, haveK8sNode := h.table.K8sMgmtIPs(h.p.NodeName)
	if haveK8sNode {
		addrs.MgmtIPs = mgmt
	}
	h.mu.RUnlock()
	if id == 0 || (!haveVppIPs && !haveK8sNode) {
		return nil // no ID yet (a claim will come), or nothing of ours to publish yet
	}
	wctx, cancel := context.WithTimeout(ctx, h.p.WriteTimeout)
	defer cancel()
	wrote, err := noderegistry.Publish(wctx, h.p.Client, h.p.NodeName, id, addrs)
	if err != nil {
		if errors.Is(err, noderegistry.ErrReleased) {
			h.log.Warn("nodesync: this node's ID was released", "node", h.p.NodeName, "id", id)
			if !h.claimAfterRelease() {
				// The Node's return asks for the claim.
				err = fmt.Errorf("%w: %w", err, retryloop.ErrNoRetry)
			}
		}
		return fmt.Errorf("nodesync: %w", err)
	}
	if wrote {
		h.log.Info("nodesync: addresses published", "node", h.p.NodeName, "id", id,
			"vppIPs", addrs.VppIPs, "mgmtIPs", addrs.MgmtIPs)
	}
	return nil
}

// claimAfterRelease takes in that this node's ID is no longer held, found
// by a publish: the record's delete may not be delivered yet, and the Node's
// re-creation may have been. While the Node is known, it asks for a claim
// (the next run, after the backoff, checks that the Node still exists) and
// returns true.
func (h *Handler) claimAfterRelease() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.released = true
	if _, ok := h.table.K8sMgmtIPs(h.p.NodeName); !ok {
		return false
	}
	h.gen++
	h.claimGen = h.gen
	return true
}

// nodeGone tells whether this node's Kubernetes Node is missing from etcd.
// The reflector deletes it before it releases the node's record, so an ID
// found released while the Node is in etcd was lost with etcd's data, or
// the Node came back: either way this node claims it again. A released ID
// whose Node is gone stays released.
//
// ASSUMPTION: the check and the claim are two requests; a Node deleted and
// released between them leaves a record the reflector's next mark and sweep
// releases (it releases the records of deleted nodes; every 10 minutes by
// default).
func (h *Handler) nodeGone(ctx context.Context) (bool, error) {
	rctx, cancel := context.WithTimeout(ctx, h.p.WriteTimeout)
	defer cancel()
	key := kubestate.Key{Resource: kubestate.ResNode, Name: h.p.NodeName}.String()
	resp, err := h.p.Client.Txn(rctx).Then(clientv3.OpGet(key, clientv3.WithCountOnly())).Commit()
	if err != nil {
		return false, fmt.Errorf("nodesync: read this node's Kubernetes Node: %w", err)
	}
	return resp.Responses[0].GetResponseRange().GetCount() == 0, nil
}

// WriteStatus is the state of the handler's background etcd writer.
type WriteStatus struct {
	// Pending is set while a claim or a publish waits to reach etcd.
	Pending bool `json:"pending"`
	// Claiming is set while this node's ID waits to be claimed.
	Claiming bool `json:"claiming"`
	// Clashes lists this node's VPP addresses that are another node's
	// management address (clash.go), one sentence each.
	Clashes []string `json:"clashes,omitempty"`
	retryloop.Status
}

// WriteStatus returns the background writer's state and the address
// clashes (for /v1/status).
func (h *Handler) WriteStatus() WriteStatus {
	h.mu.RLock()
	st := WriteStatus{Pending: h.done != h.gen, Claiming: h.claimGen != 0, Clashes: slices.Clone(h.clashes)}
	h.mu.RUnlock()
	st.Status = h.w.Status()
	return st
}

// Flush waits until nothing waits to be written, or ctx ends, or the writer
// stalled on a failure retrying cannot mend (see WriteStatus).
func (h *Handler) Flush(ctx context.Context) error {
	if err := h.w.Wait(ctx, h.written); err != nil {
		return fmt.Errorf("nodesync: %w", err)
	}
	return nil
}

// written tells whether every claim and publish asked for reached etcd.
func (h *Handler) written() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.done == h.gen
}

// Close stops the background writer; what it had not written stays
// unwritten. Safe to call more than once; the controller's ShutdownEvent
// calls it.
func (h *Handler) Close() { h.w.Close() }
