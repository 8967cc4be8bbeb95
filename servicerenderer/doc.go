// Package servicerenderer is the contract between the service processor and
// the renderers that turn Kubernetes Services into data-plane configuration.
//
// The processor (plugins/service) derives one ContivService per Service and
// hands renderers only what changed: one service at a time, interface role
// changes one interface at a time, and a full snapshot on resync. A renderer
// never receives the list of all other services on an update. This package
// knows nothing about etcd, the controller or VPP.
//
// Its values are compact, for the hundreds of thousands of backends of a
// large cluster: a Backend holds its address as an IP (ip.go: 16 bytes and
// its family, no pointer), so arrays of backends are memory the garbage
// collector does not scan.
package servicerenderer
