// Package cniapi is the wire contract between the contiv-cni plugin and
// the agent's CNI socket: HTTP+JSON over a unix socket, versioned paths
// (/v1/cni/add, /v1/cni/del, /v1/cni/check, /v1/cni/status, /v1/cni/gc), the request
// the plugin sends, the result and the error the agent answers.
//
// It is for both ends (cmd/contiv-cni, plugins/pods) and imports nothing
// of the project, so that the plugin binary stays small.
package cniapi

import (
	"fmt"
	"net/netip"
)

// DefaultSocket is where the agent listens for the plugin.
const DefaultSocket = "/var/run/contiv/cni.sock"

// The paths, under one version prefix.
const (
	PathAdd    = "/v1/cni/add"
	PathDel    = "/v1/cni/del"
	PathCheck  = "/v1/cni/check"
	PathStatus = "/v1/cni/status"
	PathGC     = "/v1/cni/gc"
)

// Request is one CNI call as the plugin forwards it.
type Request struct {
	// ContainerID is CNI_CONTAINERID: the sandbox.
	ContainerID string `json:"containerID"`
	// Netns is CNI_NETNS: the path of the pod's network namespace (empty
	// allowed on DEL).
	Netns string `json:"netns"`
	// IfName is CNI_IFNAME: the pod's interface (eth0).
	IfName string `json:"ifName"`
	// Namespace and Pod are K8S_POD_NAMESPACE and K8S_POD_NAME (CNI_ARGS).
	Namespace string `json:"podNamespace"`
	Pod       string `json:"podName"`
}

// Attachment names one sandbox's interface the runtime still uses.
type Attachment struct {
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifName"`
}

// GCRequest is CNI GC as the plugin forwards it: every attachment of the
// network the runtime still uses (cni.dev/valid-attachments); the agent
// removes every pod it wired whose sandbox is not among them, as DEL does.
type GCRequest struct {
	Valid []Attachment `json:"valid"`
}

// GCResult names the pods GC removed ("namespace/pod").
type GCResult struct {
	Removed []string `json:"removed"`
}

// Result is what ADD gives the pod.
type Result struct {
	// IfName is the pod's interface, MAC its address, Netns its sandbox.
	IfName string `json:"ifName"`
	MAC    string `json:"mac"`
	Netns  string `json:"netns"`
	// IP is the pod's address (a /32), Gateway the pod gateway.
	IP      netip.Prefix `json:"ip"`
	Gateway netip.Addr   `json:"gateway"`
	// Subnet is the node's pod subnet.
	Subnet netip.Prefix `json:"subnet"`
	// VPPInterface is VPP's name of the pod's interface.
	VPPInterface string `json:"vppInterface"`
}

// CNI error codes (the CNI specification's well-known ones, and this
// plugin's from 100).
const (
	CodeIncompatibleVersion = 1
	CodeInvalidEnv          = 4  // a CNI_* variable (or CNI_ARGS' pod name) is wrong
	CodeIOFailure           = 5  // the agent's answer could not be read
	CodeDecode              = 6  // the network configuration could not be decoded
	CodeInvalidConfig       = 7  // a field of the network configuration is wrong
	CodeTryAgainLater       = 11 // agent not running or not ready, VPP not connected
	CodeNoAddress           = 100
	CodeVPPRefused          = 101
	CodeNetnsGone           = 102
	CodeCheckFailed         = 103
	CodeInternal            = 199
)

// Error is a CNI error as the agent answers it and the plugin prints it.
type Error struct {
	Code    uint   `json:"code"`
	Msg     string `json:"msg"`
	Details string `json:"details,omitempty"`
}

func (e *Error) Error() string {
	if e.Details == "" {
		return fmt.Sprintf("%s (code %d)", e.Msg, e.Code)
	}
	return fmt.Sprintf("%s: %s (code %d)", e.Msg, e.Details, e.Code)
}

// Status is /v1/cni/status's answer.
type Status struct {
	// Ready: the agent can wire pods now.
	Ready bool `json:"ready"`
	// Why says what is missing when not ready.
	Why string `json:"why,omitempty"`
	// Kind is the pod interface kind in use (tap or af_packet) and why.
	Kind string `json:"kind"`
}
