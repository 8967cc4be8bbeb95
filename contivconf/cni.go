package contivconf

import (
	"path/filepath"
	"time"
)

// Pod interface kinds accepted by CNIConfig.PodInterface.
const (
	PodInterfaceAuto     = "auto"
	PodInterfaceTap      = "tap"
	PodInterfaceAFPacket = "af_packet"
)

// CNIConfig configures the agent's pod manager: the socket the contiv-cni
// plugin calls, and how pods are wired into VPP (plugins/pods).
type CNIConfig struct {
	// Enabled serves the plugin's socket and wires pods. Off, pods get no
	// VPP interface from this agent (the simulated VPP's stand-in CNI
	// gives them one; another CNI must otherwise).
	Enabled bool `json:"enabled"`
	// Socket is the unix socket the plugin calls (shared with the host's
	// /var/run/contiv in the DaemonSet).
	Socket string `json:"socket"`
	// StateDir keeps one record per wired pod (for DEL after an agent
	// restart and to re-create pods after a VPP restart); on tmpfs, so
	// that a reboot forgets them as it forgets the pods' netns.
	StateDir string `json:"stateDir"`
	// PodInterface is how a pod reaches VPP: auto (a tap v2 where
	// /dev/vhost-net exists, an af_packet interface on a veth pair
	// otherwise), tap or af_packet.
	PodInterface string `json:"podInterface"`
	// Deadline bounds one CNI request in the agent.
	Deadline Duration `json:"deadline"`
}

func defaultCNI() CNIConfig {
	return CNIConfig{
		Socket: "/var/run/contiv/cni.sock", StateDir: "/var/run/contiv/pods",
		PodInterface: PodInterfaceAuto, Deadline: Duration(20 * time.Second),
	}
}

func (c CNIConfig) validate(p *problems) {
	if !filepath.IsAbs(c.Socket) {
		p.add("cni.socket", c.Socket, "must be an absolute path")
	}
	if !filepath.IsAbs(c.StateDir) {
		p.add("cni.stateDir", c.StateDir, "must be an absolute path")
	}
	switch c.PodInterface {
	case PodInterfaceAuto, PodInterfaceTap, PodInterfaceAFPacket:
	default:
		p.add("cni.podInterface", c.PodInterface, "want auto, tap or af_packet")
	}
	if c.Deadline <= 0 {
		p.add("cni.deadline", c.Deadline, "must be positive")
	}
}
