package deploy

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestCNIInstalledAndSocketShared: every non-development variant installs
// contiv-cni and its conflist into the host's CNI directories (an init
// container of the agent's DaemonSet running the plugin's installer), the
// agent serves the socket the installed conflist names, on a host
// directory it shares, and may enter the pods' netns; a development
// variant keeps its cluster's own CNI.
func TestCNIInstalledAndSocketShared(t *testing.T) {
	for _, v := range variants {
		t.Run(v.dir, func(t *testing.T) {
			m := render(t, v)
			spec := m.agent.Spec.Template.Spec
			cfg := m.agentConfig(t)
			i := slices.IndexFunc(spec.InitContainers, func(c corev1.Container) bool { return c.Name == "install-cni" })
			if v.dev {
				if i >= 0 || cfg.CNI.Enabled {
					t.Errorf("development variant: install-cni %v, cni.enabled %v; want neither (its cluster has a CNI)", i >= 0, cfg.CNI.Enabled)
				}
				return
			}
			if i < 0 {
				t.Fatal("no install-cni init container")
			}
			if !cfg.CNI.Enabled {
				t.Error("cni.enabled is off: the installed plugin would find no socket")
			}
			ic := spec.InitContainers[i]
			if !strings.Contains(ic.Image, "contiv-cni") || len(ic.Args) == 0 || ic.Args[0] != "install" {
				t.Errorf("install-cni runs %s %v; want contiv-cni install", ic.Image, ic.Args)
			}
			hostPath := map[string]string{}
			for _, vol := range spec.Volumes {
				if vol.HostPath != nil {
					hostPath[vol.Name] = vol.HostPath.Path
				}
			}
			mounted := func(c corev1.Container, path string) string {
				for _, vm := range c.VolumeMounts {
					if vm.MountPath == path {
						return hostPath[vm.Name]
					}
				}
				return ""
			}
			for flag, host := range map[string]string{"-bin-dir=": "/opt/cni/bin", "-conf-dir=": "/etc/cni/net.d"} {
				j := slices.IndexFunc(ic.Args, func(a string) bool { return strings.HasPrefix(a, flag) })
				if j < 0 {
					t.Errorf("install-cni has no %s", flag)
					continue
				}
				if got := mounted(ic, strings.TrimPrefix(ic.Args[j], flag)); got != host {
					t.Errorf("install-cni %s%s is the host's %q; want %s", flag, strings.TrimPrefix(ic.Args[j], flag), got, host)
				}
			}
			j := slices.IndexFunc(ic.Args, func(a string) bool { return strings.HasPrefix(a, "-socket=") })
			if j < 0 || strings.TrimPrefix(ic.Args[j], "-socket=") != cfg.CNI.Socket {
				t.Errorf("the conflist names socket %v; the agent serves %s", ic.Args, cfg.CNI.Socket)
			}
			agent := spec.Containers[0]
			sockDir := cfg.CNI.Socket[:strings.LastIndex(cfg.CNI.Socket, "/")]
			if got := mounted(agent, sockDir); got != sockDir {
				t.Errorf("the agent's %s is the host's %q; want the host's %s (the plugin runs on the host)", sockDir, got, sockDir)
			}
			if agent.SecurityContext == nil || agent.SecurityContext.Privileged == nil || !*agent.SecurityContext.Privileged || !spec.HostPID {
				t.Error("the agent is not privileged with hostPID: it cannot enter the pods' netns")
			}
		})
	}
}
