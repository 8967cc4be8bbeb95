// Package ipam is IPAM's controller handler and the etcd store of pod IP
// allocations.
//
// In the resync after NodeSync's (which gives this node its ID) it derives
// the node's address plan (addrplan.NewPlan), releases the allocations of pods
// gone from the cluster state, and has this node's VPP addresses (IPv4,
// then IPv6 when configured) published through NodeSync. A deleted pod's address is released when its change
// arrives. A pod still wired (SetInUse: the pod manager holds its record)
// keeps its address either way: it is released by the CNI's DEL.
//
// Allocations live under /contiv/v1/ipam/<node>/<namespace>/<pod>, the
// value being the address in text form; only the node's own agent writes
// them.
//
// # etcd down
//
// The handler never talks to etcd on the controller's goroutine. Its
// background writer (package internal/retryloop) loads the allocations from
// etcd once the plan is derived (Allocator is nil until then), writes the
// allocator's changes, and, after each resync, compares etcd's records with
// the allocations and repairs them; every etcd request has a deadline and
// failures are retried with a jittered backoff.
//
// The allocator in memory is the truth for this node's records. Allocate
// and Release act on it at once and record the pod's new record for the
// writer (one pending record per pod: the latest wins, so a pod created and
// deleted while etcd is down ends as one deletion, of a key etcd never
// had). An allocation made while etcd
// is down is therefore handed out at once and persisted when etcd is back;
// allocation stays idempotent per pod. When etcd comes back with records
// that differ from the allocations (a lost write, an etcd restored from a
// backup, a wiped etcd), the allocations win: missing or different records
// are written, records of pods the allocator does not hold are deleted.
// Records are written by the writer alone, so a change is never lost
// behind a repair, and a record is written again only if the write's
// answer was lost (writing the same value twice). Pending records are lost
// if the agent stops while etcd is down; the agent then cannot start again
// before etcd is back (it claims its ID first), and reloads what etcd has.
// WriteStatus tells whether the allocations are loaded, how many records
// wait, and the last error; the writer stops with Close or the controller's
// ShutdownEvent (which first lets it finish, within the shutdown's
// deadline).
//
// It knows the controller's events, the kubestate keys and etcd; the
// address arithmetic is package ipam's. It knows nothing of VPP or services.
package ipam
