// Package kubestate is the cluster state as it is kept in etcd: the compact
// models of the reflected Kubernetes objects and of NodeSync's node records,
// their versioned key layout, their JSON encoding, the conversion from
// k8s.io/api types (FromK8s and friends), the loader of Kubernetes YAML
// (LoadYAML), the Writer that puts, deletes and mark-and-sweeps them in
// batched transactions, and a reader (List, ListAll).
//
// The reflector (contiv-ksr) and `contivctl load` write through this package;
// the agent's controller reads through it. It knows nothing about VPP, the
// controller or the service processor. docs/etcd-layout.md documents the keys.
//
// Pods are keyed by node (k8s/pod/<node>/<namespace>/<name>, PodPrefix), so
// that an agent lists and watches its own node's pods only; layout 1 keyed
// them by namespace alone, and ParseKey refuses such keys (ErrOldLayout).
// A mark and sweep of pods writes the layout marker (LayoutKey). A complete
// output (every sweep of the reflector, a load) ends with the sync marker
// (SyncedKey; MarkerWriter, MarkSynced); Completeness tells an agent whether
// a listing is such an output, MarkerHistory whether its marker is older
// than the one taken in. Markers are ordered by etcd, never by a clock:
// each is written by a compare-and-swap on the stored one, continuing its
// writer's lineage (generation + 1) or starting a new one (a random name)
// on another writer's marker or on none (a fresh or wiped etcd); a reader
// compares generations within a lineage only, takes a lineage it never saw
// for a newer output and one it left for an older one.
//
// Everything read from etcd or from a manifest is untrusted: Decode,
// ParseKey and LoadYAML have fuzz targets (fuzz_test.go, `make fuzz`) that
// check that refused input gets an error naming the key or document, and
// that accepted input is writable and encodes stably. Decode reads the bulk
// resources through a hand-written fast path (fastdecode.go) that gives
// encoding/json's results or leaves the value to encoding/json;
// FuzzDecodeFast compares the two. DecodeStored, the controller's, reads
// a key and value as ParseKey and Decode do (FuzzDecodeStored compares
// them) with the key in the object's strings, parsing no key for a value
// in the Writer's form. EndpointSlice and Service have Equal
// (equal.go), field by field, with which the controller tells no-op puts;
// TestEqualSeesEveryField keeps it seeing every field.
//
// The models a cluster holds most of are compact, for an agent holds them
// all (W(50000): 50 000 Services, 500 000 endpoints). An Endpoint
// (endpoint.go) is 48 bytes: its one address in its usual text held as 16
// bytes (Addr; any other text, several addresses or none behind a pointer
// to what few endpoints have, with another target kind and the topology
// hints), its node name and target namespace as 4-byte handles of a table
// of interned names (names.go: never forgotten, bounded; past the bound a
// name is kept as a string), its conditions and a target kind of "Pod" as
// bits, its target name a string. It is read through methods and built
// from EndpointFields, its fields spelled out, which is also its stored
// form: the stored bytes are those of the earlier struct of strings, and
// a round trip gives back every text as it was (TestEndpointAddressForms,
// TestEndpointRoundTrip, FuzzEndpointAddress). A Service keeps the fields
// few services set behind one pointer, ServiceRare (embedded, so decoded
// flat; read through methods of the same names), stored in the order of
// fields it had before (serviceJSON; TestStoredFormsUnchanged: the Writer
// compares stored bytes). The fast decoder builds both directly: an endpoint's address is parsed once, at
// decode, and the service processor takes it as an address.
//
// Assumptions (ASSUMPTION in the code): names.go, that the node names and
// namespaces an agent sees in its life fit its table of names (262 144;
// past it, endpoints hold new names as strings).
package kubestate
