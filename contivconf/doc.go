// Package contivconf is the configuration of contiv-agent: one typed Config
// with documented defaults, strict loading from YAML, overrides from
// environment variables and command-line flags, and validation that names
// every bad field and its value.
//
// Precedence, lowest first: Defaults, the YAML file (Load, Parse), the
// environment (ApplyEnv), command-line flags (ApplyFlags); Validate runs
// last. Resolve does all of it in that order.
//
// Loading is strict: an unknown field (field names are case-sensitive) or a
// value of the wrong type is an error naming the field's path, for example
// "ipam.podSubnetCIDR", and the bad value; every problem of a file is
// reported at once. deploy/examples/agent.yaml documents every option with
// its default; a test keeps it equal to Defaults.
//
// The package imports nothing of the project and knows nothing about etcd,
// VPP or Kubernetes beyond the shape of their settings: it does no I/O other
// than reading the configuration file.
package contivconf
