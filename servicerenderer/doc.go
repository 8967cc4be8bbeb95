// Package servicerenderer is the contract between the service processor and
// the renderers that turn Kubernetes Services into data-plane configuration.
//
// The processor (plugins/service) derives one ContivService per Service and
// hands renderers only what changed: one service at a time, interface role
// changes one interface at a time, and a full snapshot on resync. A renderer
// never receives the list of all other services on an update. This package
// knows nothing about etcd, the controller or VPP.
package servicerenderer
