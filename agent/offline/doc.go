// Package offline renders what an agent would program on one node, without
// etcd or a real VPP (contivctl render and trace): the node's address plan
// from its ID, the pipeline the agent builds (nodepipeline: the service
// processor and the configured renderer) over the objects given, and its
// full apply into a fresh simulated VPP whose node and pod interfaces are
// made as the simulated node makes them (simnode). The same inputs give the
// same result.
package offline
