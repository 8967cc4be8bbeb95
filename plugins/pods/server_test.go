package pods

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/pods/cniapi"
)

// loop runs a controller whose only handler is e's manager, as the agent
// runs it, and serves the CNI socket over it; it returns the socket's
// client.
func (e *env) loop(deadline time.Duration) *http.Client {
	t := e.t
	var h controller.Handler = e.m
	if e.loopBusy != nil {
		h = timedHandler{e.m, e.loopBusy, e.addBatches}
	}
	ctl := controller.New(controller.Params{Handlers: []controller.Handler{h}, ApplyObservers: []controller.ApplyObserver{e.m}, BatchHold: -1})
	e.m.SetEvents(ctl)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = ctl.Run(ctx) })
	ctl.Push(&controller.ResyncEvent{Kind: controller.ResyncStartup, State: &controller.Snapshot{Objects: nil}})
	sock := filepath.Join(t.TempDir(), "cni.sock")
	srv := NewServer(ServerParams{
		Socket:   sock,
		Deadline: deadline,
		Submit:   func(ctx context.Context, op Op, req Request) (Result, error) { return e.m.Submit(ctx, ctl, op, req) },
		Status: func() cniapi.Status {
			return cniapi.Status{Ready: ctl.Ready() && e.m.Ready(), Kind: string(e.m.Kind())}
		},
	})
	wg.Go(func() {
		if err := srv.Run(ctx); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		for {
			conn, err := d.DialContext(ctx, "unix", sock)
			if err == nil || ctx.Err() != nil {
				return conn, err
			}
			time.Sleep(5 * time.Millisecond)
		}
	}}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// timedHandler is the manager, the time its Update takes added up.
type timedHandler struct {
	*Manager
	busy    *atomic.Int64
	batches *atomic.Int64 // the ADD batches the loop took in
}

func (h timedHandler) Update(ctx context.Context, ev controller.Event) error {
	if _, ok := ev.(*addBatch); ok && h.batches != nil {
		h.batches.Add(1)
	}
	start := time.Now()
	defer func() { h.busy.Add(int64(time.Since(start))) }()
	return h.Manager.Update(ctx, ev)
}

// call posts one request; it returns the result or the CNI error.
func call(c *http.Client, path string, req any) (Result, *cniapi.Error, error) {
	b, _ := json.Marshal(req)
	resp, err := c.Post("http://agent"+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return Result{}, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e cniapi.Error
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			return Result{}, nil, err
		}
		return Result{}, &e, nil
	}
	var r Result
	return r, nil, json.NewDecoder(resp.Body).Decode(&r)
}

func TestConcurrentAddsOf100PodsThroughTheSocket(t *testing.T) {
	e := newEnv(t, 24)
	c := e.loop(time.Minute)
	const n = 100
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = e.request(fmt.Sprintf("pod-%03d", i), e.netns())
	}
	res := make([]Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Go(func() {
			r, ce, err := call(c, cniapi.PathAdd, reqs[i])
			if ce != nil {
				err = ce
			}
			res[i], errs[i] = r, err
		})
	}
	wg.Wait()
	seen := map[netip.Prefix]string{}
	for i, r := range res {
		if errs[i] != nil {
			t.Fatalf("ADD %s: %v", reqs[i].Pod, errs[i])
		}
		if other, dup := seen[r.IP]; dup {
			t.Fatalf("%s and %s both got %s", other, reqs[i].Pod, r.IP)
		}
		seen[r.IP] = reqs[i].Pod
		e.assertWired(reqs[i], r)
	}
	if got := len(e.podInterfaces()); got != n {
		t.Errorf("VPP has %d pod interfaces; want %d", got, n)
	}
	// CHECK and DEL of them all, concurrently too.
	for i := range reqs {
		wg.Go(func() {
			if _, ce, err := call(c, cniapi.PathCheck, reqs[i]); err != nil || ce != nil {
				t.Errorf("CHECK %s: %v %v", reqs[i].Pod, err, ce)
			}
			if _, ce, err := call(c, cniapi.PathDel, reqs[i]); err != nil || ce != nil {
				t.Errorf("DEL %s: %v %v", reqs[i].Pod, err, ce)
			}
		})
	}
	wg.Wait()
	for _, r := range reqs {
		e.assertGone(r)
	}
}

func TestSocketAnswersCNIErrors(t *testing.T) {
	e := newEnv(t, 24)
	c := e.loop(time.Minute)
	// A malformed body: a CNI decode error.
	_, ce, err := call(c, cniapi.PathAdd, map[string]any{"containerID": 5})
	if err != nil || ce == nil || ce.Code != cniapi.CodeDecode {
		t.Errorf("malformed body: %v %+v; want code %d", err, ce, cniapi.CodeDecode)
	}
	// An unknown field: refused, named.
	_, ce, err = call(c, cniapi.PathAdd, map[string]any{"containerID": "x", "podNamspace": "default"})
	if err != nil || ce == nil || ce.Code != cniapi.CodeDecode || !bytes.Contains([]byte(ce.Details), []byte("podNamspace")) {
		t.Errorf("unknown field: %v %+v; want code %d naming podNamspace", err, ce, cniapi.CodeDecode)
	}
	// A missing pod name: named.
	_, ce, err = call(c, cniapi.PathAdd, Request{ContainerID: "x", Netns: "/x", IfName: "eth0", Namespace: "default"})
	if err != nil || ce == nil || ce.Code != cniapi.CodeInvalidEnv || !bytes.Contains([]byte(ce.Details), []byte("K8S_POD_NAME")) {
		t.Errorf("missing pod: %v %+v; want code %d naming K8S_POD_NAME", err, ce, cniapi.CodeInvalidEnv)
	}
	// Ready once the loop applied its first resync (the requests above
	// were refused before reaching it: nothing waited for it).
	var st cniapi.Status
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		resp, err := c.Get("http://agent" + cniapi.PathStatus)
		if err != nil {
			t.Fatal(err)
		}
		st = cniapi.Status{}
		_ = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if st.Ready || time.Now().After(deadline) {
			break
		}
	}
	if !st.Ready || st.Kind != "af_packet" {
		t.Errorf("status %+v; want ready, af_packet", st)
	}
}

func TestAddWithVPPDownFailsWithinTheDeadlineThroughTheSocket(t *testing.T) {
	e := newEnv(t, 24)
	// A deadline far above the answer's time (ms), so that a loaded machine
	// cannot turn "VPP is not connected" into the deadline's answer.
	c := e.loop(15 * time.Second)
	// The loop's startup resync reads VPP's pods: VPP goes away only once it
	// is in, as on a running node (before it, the agent is not ready and an
	// ADD waits for the deadline: "agent not ready").
	deadline := time.Now().Add(10 * time.Second)
	for !e.m.Ready() || !statusReady(t, c) {
		if time.Now().After(deadline) {
			t.Fatal("the pod manager's loop did not become ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.conn.Close()
	req := e.request("late", e.netns())
	_, ce, err := call(c, cniapi.PathAdd, req)
	// Within the deadline, and saying why (not the deadline's "agent not
	// ready").
	if err != nil || ce == nil || ce.Code != cniapi.CodeTryAgainLater || !strings.Contains(ce.Msg, "VPP is not connected") {
		t.Fatalf("ADD with VPP down: %v %+v; want code %d saying VPP is not connected", err, ce, cniapi.CodeTryAgainLater)
	}
	e.assertGone(req)
}

// statusReady asks the socket's STATUS.
func statusReady(t *testing.T, c *http.Client) bool {
	t.Helper()
	resp, err := c.Get("http://agent" + cniapi.PathStatus)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var st cniapi.Status
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return st.Ready
}
