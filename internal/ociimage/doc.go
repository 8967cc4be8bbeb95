// Package ociimage assembles the programs' container images without a
// container daemon: a scratch-like base (users root and nonroot, /tmp,
// nothing else) and one static binary, written as an OCI image layout in
// a tar file (an "oci-archive", which podman, skopeo and containerd's
// import read). Every timestamp is the one given (SOURCE_DATE_EPOCH) and
// every other byte follows from the inputs, so the same binaries give the
// same image digest.
//
// It builds on github.com/google/go-containerregistry's image model
// (config, layers, digests) and writes the archive itself. It knows
// nothing of the programs: deploy/images says which binary goes where,
// under which user and labels.
package ociimage
