package main

import "testing"

// TestDoctorNamesThePodInterfaceKind: doctor says which kind of pod
// interface the agent uses and why, or that it wires no pods.
func TestDoctorNamesThePodInterfaceKind(t *testing.T) {
	views := recordedViews(t, "simulated")
	views["pods"] = map[string]any{"enabled": true, "kind": "af_packet", "why": "auto: no /dev/vhost-net", "ready": true,
		"pods": []any{map[string]any{"pod": "default/web", "ip": "10.1.1.2"}}}
	_, fs := doctorRun(t, views, "--allow-simulated")
	requireFinding(t, fs, verdictOK, "pods", "af_packet", "no /dev/vhost-net", "1 pod(s)")
	views["pods"] = map[string]any{"enabled": true, "kind": "tap", "why": "configured, but no /dev/vhost-net here: VPP refuses every tap without it", "ready": true}
	_, fs = doctorRun(t, views, "--allow-simulated")
	requireFinding(t, fs, verdictWarn, "pods", "tap", "VPP refuses every tap", "modprobe vhost_net", "af_packet")
	views["pods"] = map[string]any{"enabled": false}
	_, fs = doctorRun(t, views, "--allow-simulated")
	requireFinding(t, fs, verdictOK, "pods", "cni.enabled is off")
}
