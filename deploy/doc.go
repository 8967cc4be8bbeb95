// Package deploy holds the deployment manifests (base/), the Dockerfiles
// (docker/) and the example configuration and cluster (examples/). Its tests
// check the manifests by strict decoding into the Kubernetes API types.
package deploy
