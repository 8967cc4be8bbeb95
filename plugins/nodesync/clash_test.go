package nodesync

import (
	"context"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/plugins/controller"
)

// logRecorder is a slog.Handler that keeps "LEVEL message" of every record.
type logRecorder struct {
	mu   sync.Mutex
	recs []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Level.String()+" "+rec.Message)
	return nil
}

// matching returns the records holding s.
func (r *logRecorder) matching(s string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.recs {
		if strings.Contains(rec, s) {
			out = append(out, rec)
		}
	}
	return out
}

// TestAddressClashWarned (issue 37): node-2, started before node-1 had
// its record, takes node ID 1, and the address plan gives its VPP the
// address that is node-1's Kubernetes InternalIP. NodeSync says so, once,
// in the log and in WriteStatus, and again when the clash is gone.
func TestAddressClashWarned(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	logs := &logRecorder{}
	h, err := New(Params{Client: cli, NodeName: "node-2", StateFile: filepath.Join(t.TempDir(), "id"), Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	ctl := controller.New(controller.Params{Client: cli, Handlers: []controller.Handler{h}, Logger: slog.New(slog.DiscardHandler)})
	h.SetEvents(ctl)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ctl.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	eventually(t, "controller ready", ctl.Ready)
	if id := h.ID(); id != 1 {
		t.Fatalf("node-2 took ID %d; the test needs 1", id)
	}
	// IPAM's plan for ID 1 (ipam.nodeInterconnectCIDR 192.168.16.0/24).
	if err := h.PublishVppIPs(ctx, []netip.Prefix{netip.MustParsePrefix("192.168.16.1/24")}); err != nil {
		t.Fatal(err)
	}
	if c := h.WriteStatus().Clashes; len(c) != 0 {
		t.Fatalf("clashes with no other node: %v", c)
	}

	putNode(t, cli, "node-1", internalIP("192.168.16.1"))
	want := []string{"this node's VPP address 192.168.16.1 (node ID 1) is node node-1's address"}
	eventually(t, "the clash found", func() bool { return slices.Equal(h.WriteStatus().Clashes, want) })
	// Published again (every IPAM resync does): still one warning.
	if err := h.PublishVppIPs(ctx, []netip.Prefix{netip.MustParsePrefix("192.168.16.1/24")}); err != nil {
		t.Fatal(err)
	}
	putNode(t, cli, "node-3", internalIP("192.168.56.103"))
	eventually(t, "node-3 taken in", func() bool {
		h.mu.RLock()
		defer h.mu.RUnlock()
		_, ok := h.table.K8sMgmtIPs("node-3")
		return ok
	})
	if got := logs.matching("is another node's address"); len(got) != 1 || !strings.HasPrefix(got[0], "WARN") {
		t.Errorf("warnings of the clash: %q; want one", got)
	}

	putNode(t, cli, "node-1", internalIP("192.168.56.101"))
	eventually(t, "the clash gone", func() bool { return len(h.WriteStatus().Clashes) == 0 })
	if got := logs.matching("clash with no other node's address any more"); len(got) != 1 {
		t.Errorf("the clash's end logged %q; want once", got)
	}
}
