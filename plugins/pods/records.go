package pods

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/plugins/vpp"
)

// record is what the agent keeps of a wired pod, one JSON file a pod in
// Params.StateDir (written to a temporary file, then renamed: a record is
// whole or absent). Kept on the node's /var/run (tmpfs), records die with
// a reboot, as pods' netns do.
type record struct {
	Namespace   string          `json:"namespace"`
	Pod         string          `json:"pod"`
	ContainerID string          `json:"containerID"`
	Netns       string          `json:"netns"`
	IfName      string          `json:"ifName"`
	Kind        vpp.PodLinkKind `json:"kind"`
	// HostIf is the agent's end of the veth pair (af_packet).
	HostIf string     `json:"hostIf,omitempty"`
	IP     netip.Addr `json:"ip"`
	// PodMAC is the pod's eth0 MAC, VPPMAC the VPP end's (its gateway).
	PodMAC string `json:"podMAC"`
	VPPMAC string `json:"vppMAC"`
	// SwIfIndex and VPPName are VPP's interface (as last made).
	SwIfIndex uint32 `json:"swIfIndex"`
	VPPName   string `json:"vppName"`
}

func (r *record) pod() addrplan.PodID { return addrplan.PodID{Namespace: r.Namespace, Name: r.Pod} }

// sameContainer tells whether req names the record's sandbox.
func (r *record) sameContainer(req Request) bool { return r.ContainerID == req.ContainerID }

// sameSandbox tells whether req is the ADD that made the record (the same
// container, netns and interface name).
func (r *record) sameSandbox(req Request) bool {
	return r.ContainerID == req.ContainerID && r.Netns == req.Netns && r.IfName == req.IfName
}

// link is the record's VPP interface as the port wants it.
func (r *record) link(vrf, gateway uint32, tag string) vpp.PodLink {
	l := vpp.PodLink{Kind: r.Kind, Tag: tag, VRF: vrf, Unnumbered: gateway, PodIP: r.IP}
	if r.Kind == vpp.PodLinkAFPacket {
		l.HostIfName = r.HostIf
	} else {
		l.HostIfName, l.HostNetns = r.IfName, r.Netns
	}
	if m, err := net.ParseMAC(r.PodMAC); err == nil && len(m) == 6 {
		l.PodMAC = [6]byte(m)
	}
	if m, err := net.ParseMAC(r.VPPMAC); err == nil && len(m) == 6 {
		l.MAC = [6]byte(m)
	}
	return l
}

// records is the state directory.
type records struct{ dir string }

func (s records) file(pod addrplan.PodID) string {
	// Kubernetes names hold no '_': "<namespace>_<pod>.json" is unique.
	return filepath.Join(s.dir, pod.Namespace+"_"+pod.Name+".json")
}

func (s records) put(r *record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	f := s.file(r.pod())
	tmp := f + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("pod record %s: %w", r.pod(), err)
	}
	if err := os.Rename(tmp, f); err != nil {
		return fmt.Errorf("pod record %s: %w", r.pod(), err)
	}
	return nil
}

func (s records) delete(pod addrplan.PodID) error {
	if err := os.Remove(s.file(pod)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pod record %s: %w", pod, err)
	}
	return nil
}

// load reads every record; unreadable files are returned as errors (and
// left in place for an operator).
func (s records) load() (map[addrplan.PodID]*record, []error) {
	out := map[addrplan.PodID]*record{}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return out, []error{fmt.Errorf("pod records in %s: %w", s.dir, err)}
	}
	var errs []error
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.dir, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil || r.Namespace == "" || r.Pod == "" || !r.IP.IsValid() {
			errs = append(errs, fmt.Errorf("pod record %s: unreadable (%v)", e.Name(), err))
			continue
		}
		out[r.pod()] = &r
	}
	return out, errs
}
