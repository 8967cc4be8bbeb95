package pods

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/testutils"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/plugins/pods/cniapi"
	"contiv.dev/vpp/plugins/vpp"
)

func TestAddWiresPodDelRemovesIt(t *testing.T) {
	e := newEnv(t, 24)
	ctx := context.Background()
	req := e.request("web", e.netns())
	res, err := e.m.Add(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !e.plan.PodSubnet.Contains(res.IP.Addr()) || res.IP.Bits() != 32 || res.Gateway != e.plan.PodGateway {
		t.Fatalf("result %+v: want a /32 of %s via %s", res, e.plan.PodSubnet, e.plan.PodGateway)
	}
	e.assertWired(req, res)
	if err := e.m.Check(ctx, req); err != nil {
		t.Fatalf("CHECK after ADD: %v", err)
	}
	// ADD again: the same answer, nothing new in VPP.
	writes := e.vpp.Writes()
	again, err := e.m.Add(ctx, req)
	if err != nil || again != res {
		t.Fatalf("ADD again = %+v, %v; want %+v", again, err, res)
	}
	if w := e.vpp.Writes(); w != writes {
		t.Errorf("ADD again wrote %d times to VPP; want 0", w-writes)
	}
	if err := e.m.Del(ctx, req); err != nil {
		t.Fatal(err)
	}
	e.assertGone(req)
	if err := e.m.Check(ctx, req); !errors.Is(err, ErrCheckFailed) {
		t.Errorf("CHECK after DEL = %v; want ErrCheckFailed", err)
	}
}

func TestDelTwiceAndUnknownPodSucceed(t *testing.T) {
	e := newEnv(t, 24)
	ctx := context.Background()
	n := e.netns()
	req := e.request("twice", n)
	if _, err := e.m.Add(ctx, req); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := e.m.Del(ctx, req); err != nil {
			t.Fatalf("DEL %d: %v", i+1, err)
		}
	}
	e.assertGone(req)
	// Unknown pod, missing netns: success, as the CNI specification says.
	unknown := Request{ContainerID: "nosuch", Netns: "/var/run/netns/does-not-exist", IfName: "eth0", Namespace: "default", Pod: "ghost"}
	if err := e.m.Del(ctx, unknown); err != nil {
		t.Fatalf("DEL of an unknown pod: %v", err)
	}
	// DEL without a netns (the runtime lost it) after ADD: success.
	req2 := e.request("nonetns", e.netns())
	if _, err := e.m.Add(ctx, req2); err != nil {
		t.Fatal(err)
	}
	req2.Netns = ""
	if err := e.m.Del(ctx, req2); err != nil {
		t.Fatalf("DEL without netns: %v", err)
	}
	e.assertGone(req2)
}

func TestStaleDelOfAReplacedSandboxKeepsThePod(t *testing.T) {
	e := newEnv(t, 24)
	ctx := context.Background()
	old := e.request("moved", e.netns())
	if _, err := e.m.Add(ctx, old); err != nil {
		t.Fatal(err)
	}
	nu := e.request("moved", e.netns())
	res, err := e.m.Add(ctx, nu)
	if err != nil {
		t.Fatal(err)
	}
	if hostLinkExists(hostIfName(old.ContainerID)) {
		t.Error("the old sandbox's veth is left")
	}
	if err := e.m.Del(ctx, old); err != nil {
		t.Fatalf("stale DEL: %v", err)
	}
	e.assertWired(nu, res)
}

func TestAddWhoseNetnsVanishesIsReverted(t *testing.T) {
	e := newEnv(t, 24)
	ctx := context.Background()
	for _, step := range []string{"allocated", "veth", "vpp"} {
		t.Run(step, func(t *testing.T) {
			n, err := testutils.NewNS()
			if err != nil {
				t.Fatal(err)
			}
			req := e.request("vanish-"+step, n)
			e.m.afterStep = func(s string) {
				if s == step {
					_ = n.Close()
					_ = testutils.UnmountNS(n)
				}
			}
			defer func() { e.m.afterStep = nil }()
			_, err = e.m.Add(ctx, req)
			if err == nil {
				t.Fatal("ADD succeeded with its netns gone")
			}
			if e := ToCNIError(err); e.Code != cniapi.CodeNetnsGone && e.Code != cniapi.CodeVPPRefused {
				t.Errorf("CNI error %+v; want the netns named gone (or VPP refusing the vanished veth)", e)
			}
			e.assertGone(req)
		})
	}
}

func TestPoolExhaustedNamesTheSubnet(t *testing.T) {
	// A /29: 8 addresses, 4 for pods (network, gateway, NAT loopback and
	// broadcast excluded).
	e := newEnv(t, 29)
	ctx := context.Background()
	for i := range 4 {
		if _, err := e.m.Add(ctx, e.request("p"+string(rune('a'+i)), e.netns())); err != nil {
			t.Fatal(err)
		}
	}
	before := len(e.podInterfaces())
	req := e.request("one-too-many", e.netns())
	_, err := e.m.Add(ctx, req)
	if !errors.Is(err, addrplan.ErrExhausted) {
		t.Fatalf("ADD past the pool = %v; want ErrExhausted", err)
	}
	ce := ToCNIError(err)
	if ce.Code != cniapi.CodeNoAddress || ce.Msg != "no address left in "+e.plan.PodSubnet.String() {
		t.Errorf("CNI error %+v; want code %d, \"no address left in %s\"", ce, cniapi.CodeNoAddress, e.plan.PodSubnet)
	}
	if got := len(e.podInterfaces()); got != before {
		t.Errorf("VPP has %d pod interfaces; want %d (nothing half-made)", got, before)
	}
	e.assertGone(req)
}

func TestAddWhileVPPIsDownFailsSayingSo(t *testing.T) {
	e := newEnv(t, 24)
	e.conn.Close() // VPP gone: every call fails at once
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := e.request("novpp", e.netns())
	_, err := e.m.Add(ctx, req)
	if !errors.Is(err, vpp.ErrNotConnected) {
		t.Fatalf("ADD with VPP down = %v; want ErrNotConnected", err)
	}
	if ctx.Err() != nil {
		t.Fatal("ADD used up its deadline")
	}
	ce := ToCNIError(err)
	if ce.Code != cniapi.CodeTryAgainLater || !strings.Contains(ce.Msg, "VPP is not connected") {
		t.Errorf("CNI error %+v; want try-again-later saying VPP is not connected", ce)
	}
	e.assertGone(req)
}

func TestAgentRestartBetweenAddAndDel(t *testing.T) {
	e := newEnv(t, 24)
	ctx := context.Background()
	req := e.request("survivor", e.netns())
	res, err := e.m.Add(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// The agent restarts: a new allocator loads etcd, a new manager its
	// records; reconciling writes nothing to VPP.
	e.alloc = e.newAllocator()
	e.m = e.newManager()
	writes := e.vpp.Writes()
	st, err := e.m.reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.InPlace != 1 || e.vpp.Writes() != writes {
		t.Errorf("reconcile after restart: %+v, %d writes; want 1 in place, no write", st, e.vpp.Writes()-writes)
	}
	if !e.m.Ready() {
		// Ready is set by Resync; reconcile alone leaves it.
		_ = e.m.Resync(ctx, resyncEvent())
	}
	again, err := e.m.Add(ctx, req)
	if err != nil || again.IP != res.IP {
		t.Fatalf("ADD after restart = %+v, %v; want the same address %s", again, err, res.IP)
	}
	if err := e.m.Del(ctx, req); err != nil {
		t.Fatal(err)
	}
	e.assertGone(req)
}

func TestVPPRestartRecreatesPods(t *testing.T) {
	e := newEnv(t, 24)
	ctx := context.Background()
	reqs := []Request{e.request("a", e.netns()), e.request("b", e.netns())}
	var res []Result
	for _, r := range reqs {
		x, err := e.m.Add(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, x)
	}
	e.vpp.Restart()
	e.vpp.CreateTable(1) // the startup configuration's table
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for e.conn.Status().Connects < 2 {
		if wctx.Err() != nil {
			t.Fatal("no reconnection")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(e.podInterfaces()) != 0 {
		t.Fatal("the restarted simulated VPP kept the pods' interfaces")
	}
	ev := resyncEvent()
	ev.DataplaneRestarted = true
	if err := e.m.Resync(ctx, ev); err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		e.assertWired(r, res[i])
		if err := e.m.Check(ctx, r); err != nil {
			t.Errorf("CHECK after VPP restart: %v", err)
		}
	}
}

func TestMalformedRequestNamesTheField(t *testing.T) {
	e := newEnv(t, 24)
	ctx := context.Background()
	good := Request{ContainerID: "abc", Netns: "/var/run/netns/x", IfName: "eth0", Namespace: "default", Pod: "p"}
	for _, c := range []struct {
		field string
		edit  func(*Request)
	}{
		{"containerID", func(r *Request) { r.ContainerID = "" }},
		{"containerID", func(r *Request) { r.ContainerID = "a/b" }},
		{"ifName", func(r *Request) { r.IfName = "an-interface-name-too-long" }},
		{"podNamespace", func(r *Request) { r.Namespace = "" }},
		{"podName", func(r *Request) { r.Pod = "Not_A_Name" }},
		{"netns", func(r *Request) { r.Netns = "" }},
	} {
		r := good
		c.edit(&r)
		_, err := e.m.Add(ctx, r)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("ADD %+v = %v; want ErrInvalid naming %s", r, err, c.field)
		}
		if ce := ToCNIError(err); ce.Code != cniapi.CodeInvalidEnv {
			t.Errorf("CNI error %+v; want code %d", ce, cniapi.CodeInvalidEnv)
		}
	}
	if len(e.podInterfaces()) != 0 || len(e.alloc.Allocations()) != 0 {
		t.Error("a malformed request left something behind")
	}
}
