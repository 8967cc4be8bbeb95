// Command contivctl is the operator's command-line tool.
//
// Subcommands:
//
//	load -f FILE.yaml [--etcd host:port,...] [--prune]
//	    decode Kubernetes YAML (Services, EndpointSlices, Pods, Nodes,
//	    Namespaces) and write it into etcd in the reflector's format, through
//	    the same kubestate.Writer the reflector uses; unchanged keys are not
//	    rewritten. With --prune, stored objects of the resources the file
//	    holds that the file does not name are deleted.
//
// main.go only wires the process; each subcommand is a function of
// (context, streams, args) returning an error, so it is tested in-process
// against an embedded etcd. A new subcommand is one function and one entry
// in commands(). contivctl knows kubestate and the etcd client; it knows
// nothing of the agent's internals.
package main
