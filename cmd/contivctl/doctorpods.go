package main

import (
	"fmt"
	"strings"
)

// podsDoctorView is the agent's /v1/pods (agent/pods.go).
type podsDoctorView struct {
	Enabled bool   `json:"enabled"`
	Kind    string `json:"kind"`
	Why     string `json:"why"`
	Ready   bool   `json:"ready"`
	Pods    []struct {
		Pod string `json:"pod"`
		IP  string `json:"ip"`
	} `json:"pods"`
}

// checkPods says who wires the node's pods and, when the agent does, with
// which kind of interface (a tap v2 or af_packet on a veth pair) and why.
// An agent without /v1/pods (older) is not judged.
func (d *doctor) checkPods() {
	p := d.pods
	switch {
	case p == nil:
	case !p.Enabled:
		d.add(verdictOK, "pods", "the agent wires no pods (cni.enabled is off): another CNI must give each pod a VPP interface tagged <namespace>/<pod>",
			"")
	case p.Kind == "tap" && strings.Contains(p.Why, "no /dev/vhost-net"):
		d.add(verdictWarn, "pods", fmt.Sprintf("the agent wires pods with tap interfaces (%s)", p.Why),
			"give VPP /dev/vhost-net (modprobe vhost_net; mount it into VPP's container) or set cni.podInterface to auto or af_packet")
	case !p.Ready:
		d.add(verdictWarn, "pods", fmt.Sprintf("the agent wires pods with %s interfaces (%s); the pods of its records are not all back in VPP yet", p.Kind, p.Why),
			"wait, or see the agent's log (part=pods)")
	default:
		d.add(verdictOK, "pods", fmt.Sprintf("the agent wires pods with %s interfaces (%s): %d pod(s) wired", p.Kind, p.Why, len(p.Pods)), "")
	}
}
