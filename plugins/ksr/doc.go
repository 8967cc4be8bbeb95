// Package ksr is the Kubernetes State Reflector: it mirrors the Services,
// EndpointSlices (discovery.k8s.io/v1), Pods, Nodes and Namespaces of the
// Kubernetes API into etcd as kubestate's compact models, for the agents to
// watch.
//
// Informers (resync period 0) only note which keys changed; one writer
// goroutine drains the noted keys in batches, reads each object's current
// state from the informer cache, converts it (kubestate.FromK8s) and writes
// only what differs from what it last wrote, through kubestate.Writer in
// etcd transactions of at most kubestate.MaxTxnOps operations. An update
// that changes no reflected field writes nothing.
//
// Pods are stored under their node (kubestate.PodPrefix); a pod that gets
// its node (or, were it possible, changes it) moves: the delete of its old
// key and the put of the new one are one transaction (kubestate.MoveOp). The
// first mark and sweep of pods deletes pod keys of the older layout and sets
// the layout marker (kubestate.LayoutKey), which migrates etcd.
//
// After the informer caches sync, after a failed etcd write, after a failed
// etcd health probe and periodically (repairing what was written behind its
// back), the reflector marks and sweeps: per resource it
// lists etcd, puts what is missing or different, deletes stale keys and
// leaves unchanged keys alone; it retries with backoff until etcd answers.
// A short loss of the Kubernetes API is absorbed by the informers' relist; a
// longer one costs the leadership, and the next term starts with fresh
// informers and a mark and sweep. The probe also reads the marker key
// (MarkerKey, kubestate.SyncedKey) written last by each sweep through a
// kubestate.MarkerWriter kept across terms (a compare-and-swap on the stored
// marker, ordered by etcd, never by the replica's clock: Params.Now stamps
// it only): when it is gone, or older than the one this replica wrote last
// (etcd restored from a backup), etcd lost its data and the reflector writes
// everything again. Agents take no listing without it.
//
// With leader election (a coordination.k8s.io Lease) only the holder of the
// lease runs informers and writes; losing the lease cancels the term at
// once.
//
// The writes themselves are fenced in etcd (fence.go): a term starts by
// creating LeaderKey, only when it is absent, on an etcd lease it keeps
// alive; every write of the term (batches, marks and sweeps, the marker,
// node releases through the Etcd the NodeReleaser is given) is a
// transaction whose first comparison is LeaderKey's mod revision. A leader
// deposed while a batch was in flight (its lease revoked or expired, etcd
// wiped) thus has that batch refused (ErrDeposed, counted in
// contiv_ksr_fenced_writes_refused_total) and ends its term
// (contiv_ksr_deposed_total); the probe also notices a lost key. A term
// that ends revokes its lease, so the next leader takes the key at once;
// one that cannot (stuck, cut off from etcd) leaves it to expire after
// Params.LeaderTTL. Without election the key alone keeps two reflectors
// from writing at once. A deleted Kubernetes Node has its NodeSync record and ID released
// through the NodeReleaser the caller provides; a sweep releases the records
// of nodes deleted while no reflector was running, after the API confirms
// that the node is gone; a node the API cannot be asked about, or whose
// release fails, is logged, counted and left for the next sweep without
// failing it.
//
// With election, every replica notes when a leader was last seen (a changed
// Lease read, or its own successful write of it): when none was seen for
// longer than the lease duration and a follower's takeover retries, every
// replica is not ready, with the reason (contiv_ksr_no_leader).
//
// The package knows the Kubernetes API, kubestate and etcd. It knows nothing
// of the agent: not the controller, the service processor, VPP, nor how
// NodeSync stores its records (NodeReleaser hides it).
package ksr
