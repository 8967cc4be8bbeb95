package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"contiv.dev/vpp/plugins/pods/cniapi"
)

// defaultTimeout bounds one call to the agent (a little more than the
// agent's own deadline, so that its answer, not ours, says what failed).
const defaultTimeout = 25 * time.Second

// netConf is the plugin's network configuration.
type netConf struct {
	types.PluginConf
	// Socket is the agent's CNI socket.
	Socket string `json:"socket,omitempty"`
	// Timeout bounds one call to the agent ("20s").
	Timeout string `json:"timeout,omitempty"`

	timeout time.Duration
}

// podArgs are the CNI_ARGS the plugin reads.
type podArgs struct {
	types.CommonArgs
	K8S_POD_NAMESPACE          types.UnmarshallableString //nolint:revive,stylecheck // CNI_ARGS names
	K8S_POD_NAME               types.UnmarshallableString //nolint:revive,stylecheck
	K8S_POD_INFRA_CONTAINER_ID types.UnmarshallableString //nolint:revive,stylecheck
	K8S_POD_UID                types.UnmarshallableString //nolint:revive,stylecheck
}

// parseConf reads and checks the network configuration; a wrong field is
// a CNI error 7 naming it.
func parseConf(b []byte) (*netConf, *types.Error) {
	var c netConf
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "the network configuration is not valid JSON", err.Error())
	}
	bad := func(field, why string) *types.Error {
		return types.NewError(types.ErrInvalidNetworkConfig, fmt.Sprintf("network configuration: %s: %s", field, why), "")
	}
	if c.Name == "" {
		return nil, bad("name", "missing")
	}
	if c.Socket == "" {
		c.Socket = cniapi.DefaultSocket
	}
	if !filepath.IsAbs(c.Socket) {
		return nil, bad("socket", fmt.Sprintf("%q is not an absolute path", c.Socket))
	}
	c.timeout = defaultTimeout
	if c.Timeout != "" {
		d, err := time.ParseDuration(c.Timeout)
		if err != nil || d <= 0 {
			return nil, bad("timeout", fmt.Sprintf("%q is not a positive duration (\"20s\")", c.Timeout))
		}
		c.timeout = d
	}
	return &c, nil
}

// request builds the agent's request from the runtime's arguments.
func request(args *skel.CmdArgs) (cniapi.Request, *types.Error) {
	var a podArgs
	a.IgnoreUnknown = true
	if err := types.LoadArgs(args.Args, &a); err != nil {
		return cniapi.Request{}, types.NewError(types.ErrInvalidEnvironmentVariables, "CNI_ARGS: cannot parse", err.Error())
	}
	if a.K8S_POD_NAMESPACE == "" || a.K8S_POD_NAME == "" {
		return cniapi.Request{}, types.NewError(types.ErrInvalidEnvironmentVariables,
			"CNI_ARGS: K8S_POD_NAMESPACE and K8S_POD_NAME are required", fmt.Sprintf("CNI_ARGS=%q", args.Args))
	}
	return cniapi.Request{ContainerID: args.ContainerID, Netns: args.Netns, IfName: args.IfName,
		Namespace: string(a.K8S_POD_NAMESPACE), Pod: string(a.K8S_POD_NAME)}, nil
}

// plugin is the CNI plugin: each command one call to the agent.
type plugin struct{}

func (plugin) add(args *skel.CmdArgs) error {
	c, req, cerr := prepare(args)
	if cerr != nil {
		return cerr
	}
	var res cniapi.Result
	if err := c.post(cniapi.PathAdd, req, &res); err != nil {
		return err
	}
	r := result(res, c.CNIVersion)
	return types.PrintResult(r, c.CNIVersion)
}

func (plugin) del(args *skel.CmdArgs) error {
	c, req, cerr := prepare(args)
	if cerr != nil {
		return cerr
	}
	return c.post(cniapi.PathDel, req, nil)
}

func (plugin) check(args *skel.CmdArgs) error {
	c, req, cerr := prepare(args)
	if cerr != nil {
		return cerr
	}
	return c.post(cniapi.PathCheck, req, nil)
}

// gc is CNI GC: the agent removes every pod it wired whose sandbox is not
// among the attachments the runtime still uses.
func (plugin) gc(args *skel.CmdArgs) error {
	c, cerr := parseConf(args.StdinData)
	if cerr != nil {
		return cerr
	}
	req := cniapi.GCRequest{Valid: make([]cniapi.Attachment, 0, len(c.ValidAttachments))}
	for _, a := range c.ValidAttachments {
		req.Valid = append(req.Valid, cniapi.Attachment{ContainerID: a.ContainerID, IfName: a.IfName})
	}
	// The agent bounds each DEL it runs; the whole GC is bounded by the
	// runtime, which kills a plugin it stops waiting for.
	c.timeout = 0
	return c.post(cniapi.PathGC, req, nil)
}

func (plugin) status(args *skel.CmdArgs) error {
	c, cerr := parseConf(args.StdinData)
	if cerr != nil {
		return cerr
	}
	var st cniapi.Status
	err := c.get(cniapi.PathStatus, &st)
	if err == nil && st.Ready {
		return nil
	}
	var ce *types.Error
	if errors.As(err, &ce) && ce.Msg == msgNotRunning {
		return types.NewError(types.ErrPluginNotAvailable, msgNotRunning, ce.Details)
	}
	why := st.Why
	if why == "" && err != nil {
		why = err.Error()
	}
	return types.NewError(types.ErrPluginNotAvailable, "agent not ready", why)
}

func prepare(args *skel.CmdArgs) (*netConf, cniapi.Request, *types.Error) {
	c, cerr := parseConf(args.StdinData)
	if cerr != nil {
		return nil, cniapi.Request{}, cerr
	}
	req, cerr := request(args)
	if cerr != nil {
		return nil, cniapi.Request{}, cerr
	}
	return c, req, nil
}

// result is the agent's answer as a CNI result: one interface in the
// sandbox, its /32 with the gateway, and the default route.
func result(r cniapi.Result, cniVersion string) *types100.Result {
	zero := 0
	gw := net.IP(r.Gateway.AsSlice())
	return &types100.Result{
		CNIVersion: cniVersion,
		Interfaces: []*types100.Interface{{Name: r.IfName, Mac: r.MAC, Sandbox: r.Netns}},
		IPs: []*types100.IPConfig{{
			Interface: &zero,
			Address:   net.IPNet{IP: r.IP.Addr().AsSlice(), Mask: net.CIDRMask(r.IP.Bits(), 32)},
			Gateway:   gw,
		}},
		Routes: []*types.Route{{Dst: net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}, GW: gw}},
	}
}

const msgNotRunning = "agent not running"

func (c *netConf) client() *http.Client {
	return &http.Client{Timeout: c.timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", c.Socket)
		},
	}}
}

// post sends req to the agent and decodes its result into out (when not
// nil); the agent's CNI error is returned as it is.
func (c *netConf) post(path string, req any, out any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return types.NewError(types.ErrIOFailure, "encoding the request", err.Error())
	}
	resp, err := c.client().Post("http://contiv-agent"+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return c.unreachable(err)
	}
	defer resp.Body.Close()
	return answer(resp, out)
}

func (c *netConf) get(path string, out any) error {
	resp, err := c.client().Get("http://contiv-agent" + path)
	if err != nil {
		return c.unreachable(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = json.Unmarshal(body, out)
	if resp.StatusCode != http.StatusOK {
		return types.NewError(types.ErrTryAgainLater, "agent not ready", string(body))
	}
	return nil
}

// unreachable is the error of a call the agent did not answer.
func (c *netConf) unreachable(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return types.NewError(types.ErrTryAgainLater, "the agent did not answer within "+c.timeout.String(), err.Error())
	}
	return types.NewError(types.ErrTryAgainLater, msgNotRunning, fmt.Sprintf("socket %s: %v", c.Socket, err))
}

func answer(resp *http.Response, out any) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return types.NewError(types.ErrIOFailure, "reading the agent's answer", err.Error())
	}
	if resp.StatusCode != http.StatusOK {
		var e cniapi.Error
		if err := json.Unmarshal(body, &e); err != nil || e.Code == 0 {
			return types.NewError(types.ErrIOFailure, fmt.Sprintf("the agent answered %s", resp.Status), string(body))
		}
		return types.NewError(e.Code, e.Msg, e.Details)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return types.NewError(types.ErrIOFailure, "decoding the agent's answer", err.Error())
		}
	}
	return nil
}
