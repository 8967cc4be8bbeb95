// Package noderegistry gives every node of the cluster a cluster-wide integer ID
// and shares the nodes' addresses, over etcd.
//
// Claim gets this node its ID: the smallest free positive integer, claimed
// with an etcd transaction that creates the ID key and the node record
// together, so two nodes never hold one ID. A restarted node finds its record
// and keeps its ID; a local state file keeps the ID across a loss of etcd's
// data, and the node claims that exact ID again (or fails with ErrIDTaken,
// never silently moving its pod subnet). Nodes joining together queue in etcd
// and each takes the free ID matching its place in the queue, so a burst of
// joiners does not chase one ID. Publish writes the node's addresses into its
// record when they change. Release, called by the reflector when a
// Kubernetes node is deleted, frees the node's ID behind a quarantine.
//
// Nodes is the table of all nodes the agent keeps from the records and the
// Kubernetes Node objects it watches, answering each change with the node's
// previous and new state.
//
// The package knows the etcd layout of its own keys and the kubestate models;
// it knows nothing of the controller, the plugins, IPAM or VPP.
//
// # etcd keys
//
// All under kubestate.Prefix ("/contiv/v1/"):
//
//	nodesync/node/<name>       the node record: kubestate.VppNode as JSON
//	                           {name, id, vppIPs, mgmtIPs}; written by Claim
//	                           and Publish, deleted by Release. The agents'
//	                           controllers watch it as the resource "vppnode".
//	nodesync/id/<id>           the node name holding ID <id> (decimal); created
//	                           in one transaction with the record, only if
//	                           neither the ID key, nor the record, nor a
//	                           tombstone for <id> exists; deleted with the
//	                           record.
//	nodesync/released/<id>     tombstone of a released ID, JSON {name, id,
//	                           released, quarantine}, attached to an etcd lease
//	                           whose TTL is the quarantine: while it lives no
//	                           other node may claim <id> (the node named in it
//	                           may take its ID back); etcd deletes it when
//	                           the quarantine is over.
//	nodesync/joining/<name>    a node waiting for an ID (value: its name),
//	                           attached to a short lease so that a crashed
//	                           joiner leaves the queue by itself. Joiners are
//	                           ordered by the key's creation revision; the
//	                           n-th joiner claims the n-th free ID.
package noderegistry
