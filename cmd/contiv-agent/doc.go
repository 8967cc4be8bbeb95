// Command contiv-agent implements Kubernetes Services on one node by
// programming VPP's NAT44-ED plugin; it runs as a DaemonSet beside VPP.
// It parses the configuration (file, environment, flags), then runs the
// agent package's wiring until SIGINT or SIGTERM.
package main
