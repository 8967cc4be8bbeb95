package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/containernetworking/plugins/pkg/testutils"
	"golang.org/x/sys/unix"
)

// The container runtime's side of pod networking, as containerd's CRI
// plugin does it through libcni: one CNI bin and conf directory per node
// (the DaemonSet's init container, `contiv-cni install`, fills them), a
// network namespace per pod sandbox, ADD when the sandbox is made, CHECK
// on demand, DEL when it is torn down.

// cniNetwork is the network name of the conflist contiv-cni installs.
const cniNetwork = "contiv-vpp"

// podIfName is the pod's interface, as kubelet's runtimes name it.
const podIfName = "eth0"

// cniCallTimeout bounds one libcni call (the plugin's own bound on the
// agent is 25 s: the conflist's timeout).
const cniCallTimeout = 40 * time.Second

// nodeCNI is one node's CNI as its container runtime sees it: libcni over
// the node's bin directory and the conflist the installer wrote, pointing
// at that node's agent socket.
type nodeCNI struct {
	cni  *libcni.CNIConfig
	list *libcni.NetworkConfigList
	// confDir holds the conflist (read again by nothing: the runtime
	// loads it once, as containerd does at start and on change).
	confDir string
}

// installCNI runs the plugin binary's installer as the DaemonSet's init
// container does, into dir's bin and net.d (the node's /opt/cni/bin and
// /etc/cni/net.d) with socket as the agent's socket, and loads the
// conflist it wrote by its network name, as a runtime does.
func installCNI(bin, dir, socket string) (*nodeCNI, error) {
	binDir, confDir := filepath.Join(dir, "bin"), filepath.Join(dir, "net.d")
	out, err := exec.Command(bin, "install", "--bin-dir="+binDir, "--conf-dir="+confDir, "--socket="+socket).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("contiv-cni install: %w\n%s", err, out)
	}
	list, err := libcni.LoadConfList(confDir, cniNetwork)
	if err != nil {
		return nil, fmt.Errorf("loading the conflist contiv-cni installed in %s: %w", confDir, err)
	}
	return &nodeCNI{
		cni:     libcni.NewCNIConfigWithCacheDir([]string{binDir}, filepath.Join(dir, "cache"), nil),
		list:    list,
		confDir: confDir,
	}, nil
}

// status is the network's CNI STATUS (nil: the plugin and its agent are
// ready for ADDs).
func (c *nodeCNI) status(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, cniCallTimeout)
	defer cancel()
	return c.cni.GetStatusNetworkList(ctx, c.list)
}

// sandbox is one pod sandbox: its container ID, its network namespace and
// what CNI ADD gave it.
type sandbox struct {
	namespace, pod, node string
	id                   string // the sandbox's container ID
	netns                ns.NetNS
	rt                   *libcni.RuntimeConf
	ip                   string // from the ADD result
	// ready is closed once ADD ended (err says how).
	ready chan struct{}
	err   error
}

// newContainerID is a sandbox ID as runtimes make them: 64 random hex
// digits.
func newContainerID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// runtimeConf is what the runtime passes the plugin for the sandbox:
// CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME and kubelet's CNI_ARGS.
func (sb *sandbox) runtimeConf(uid string) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{
		ContainerID: sb.id,
		NetNS:       sb.netns.Path(),
		IfName:      podIfName,
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", sb.namespace},
			{"K8S_POD_NAME", sb.pod},
			{"K8S_POD_INFRA_CONTAINER_ID", sb.id},
			{"K8S_POD_UID", uid},
		},
	}
}

// setUp makes the sandbox's network namespace and calls ADD; it records
// the pod's IPv4 address from the ADD result. On failure nothing is left:
// DEL is called for what ADD may have made, and the namespace is removed.
func (sb *sandbox) setUp(ctx context.Context, c *nodeCNI, uid string) (err error) {
	defer close(sb.ready)
	defer func() { sb.err = err }()
	n, err := testutils.NewNS()
	if err != nil {
		return fmt.Errorf("network namespace of %s/%s: %w", sb.namespace, sb.pod, err)
	}
	sb.netns = n
	sb.rt = sb.runtimeConf(uid)
	defer func() {
		if err != nil {
			err = errors.Join(err, sb.tearDown(context.WithoutCancel(ctx), c))
		}
	}()
	actx, cancel := context.WithTimeout(ctx, cniCallTimeout)
	defer cancel()
	res, err := c.cni.AddNetworkList(actx, c.list, sb.rt)
	if err != nil {
		return fmt.Errorf("CNI ADD of %s/%s: %w", sb.namespace, sb.pod, err)
	}
	r, err := types100.NewResultFromResult(res)
	if err != nil {
		return fmt.Errorf("CNI ADD of %s/%s: the result: %w", sb.namespace, sb.pod, err)
	}
	for _, ip := range r.IPs {
		if v4 := ip.Address.IP.To4(); v4 != nil {
			sb.ip = v4.String()
			break
		}
	}
	if sb.ip == "" {
		return fmt.Errorf("CNI ADD of %s/%s: no IPv4 address in the result %+v", sb.namespace, sb.pod, r)
	}
	return nil
}

// check is CNI CHECK of the sandbox.
func (sb *sandbox) check(ctx context.Context, c *nodeCNI) error {
	ctx, cancel := context.WithTimeout(ctx, cniCallTimeout)
	defer cancel()
	if err := c.cni.CheckNetworkList(ctx, c.list, sb.rt); err != nil {
		return fmt.Errorf("CNI CHECK of %s/%s (%s): %w", sb.namespace, sb.pod, sb.ip, err)
	}
	return nil
}

// tearDown calls DEL and removes the network namespace, as a runtime
// does when it stops the sandbox.
func (sb *sandbox) tearDown(ctx context.Context, c *nodeCNI) error {
	if sb.netns == nil {
		return nil
	}
	var errs []error
	if sb.rt != nil {
		dctx, cancel := context.WithTimeout(ctx, cniCallTimeout)
		if err := c.cni.DelNetworkList(dctx, c.list, sb.rt); err != nil {
			errs = append(errs, fmt.Errorf("CNI DEL of %s/%s: %w", sb.namespace, sb.pod, err))
		}
		cancel()
	}
	errs = append(errs, sb.netns.Close(), removeNetns(sb.netns.Path()))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	sb.netns = nil
	return nil
}

// removeNetns unmounts the bind mount that keeps a sandbox's network
// namespace and removes its file, as runtimes do: lazily (MNT_DETACH), for
// a plugin process being forked at that moment holds a copy of the
// descriptor open until its exec, which a plain unmount answers with
// EBUSY; the namespace goes with the last reference.
func removeNetns(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount netns %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove netns %s: %w", path, err)
	}
	return nil
}
