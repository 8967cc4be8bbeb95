package vpp

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/core"

	"contiv.dev/vpp/internal/vppcorpus"
	"contiv.dev/vpp/plugins/vpp/sim"
	"contiv.dev/vpp/servicerenderer/nat44"
)

// TestRecorderWritesTheCorpusFormat records a connection to the simulated
// VPP and reads the file back as the corpus replay does: every request
// with its replies, a dump's details followed by its control_ping's reply
// in one record, retvals with their text, the connection's start and end.
func TestRecorderWritesTheCorpusFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	rec, err := OpenRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	v := sim.New(sim.Options{})
	defer v.Close()
	if _, err := v.CreateInterface(sim.InterfaceSpec{Name: "host-eth1", Tag: "default/a"}); err != nil {
		t.Fatal(err)
	}
	conn := New(Config{Adapter: v, Record: rec, HealthInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	conn.Start(ctx)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := conn.WaitConnected(wctx); err != nil {
		t.Fatal(err)
	}
	ifaces := NewInterfaces(conn, nil)
	nat := NewNAT44(conn, ifaces, nil)
	if err := ifaces.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := nat.SetGlobal(ctx, nat44.Global{SessionLimit: 1000}); err != nil {
		t.Fatal(err)
	}
	// Enabling again: VPP answers -170.
	if err := conn.invoke(ctx, &nat44_ed.Nat44EdPluginEnableDisable{Enable: true}, &nat44_ed.Nat44EdPluginEnableDisableReply{}); err == nil {
		t.Fatal("enabling twice: no error")
	}
	if _, err := nat.Dump(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	conn.Close()
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}

	recs, err := vppcorpus.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 3 || !strings.HasPrefix(recs[0].Note, "recorder opened") || recs[1].Note != "connect" || recs[len(recs)-1].Note != "disconnect" {
		t.Fatalf("want the opening note, connect first and disconnect last; got %d records, first %+v", len(recs), recs[0])
	}
	var dumps, enables, ifDump int
	for i, r := range recs {
		if r.Step != i+1 {
			t.Errorf("record %d has step %d", i, r.Step)
		}
		if r.Request == nil {
			continue
		}
		if r.Error != "" {
			t.Errorf("%s: error %s", r.Request.Name, r.Error)
		}
		if len(r.Replies) == 0 {
			t.Errorf("%s: no replies", r.Request.Name)
			continue
		}
		last := r.Replies[len(r.Replies)-1].Name
		switch {
		case strings.HasSuffix(r.Request.Name, "_dump"):
			dumps++
			if last != "control_ping_reply" {
				t.Errorf("%s ends with %s, want control_ping_reply", r.Request.Name, last)
			}
			for _, m := range r.Replies[:len(r.Replies)-1] {
				if !strings.HasSuffix(m.Name, "_details") {
					t.Errorf("%s: reply %s before the ping's", r.Request.Name, m.Name)
				}
			}
			if r.Request.Name == "sw_interface_dump" {
				ifDump++
				if !strings.Contains(string(r.Replies[1].Fields), `"tag":"default/a"`) {
					t.Errorf("sw_interface_dump's second details: %s", r.Replies[1].Fields)
				}
			}
		case r.Request.Name == "nat44_ed_plugin_enable_disable":
			enables++
			var f struct {
				Retval int    `json:"retval"`
				Text   string `json:"retval_text"`
			}
			line := recordLine(t, path, i)
			if err := json.Unmarshal(line.Replies[0], &f); err != nil {
				t.Fatal(err)
			}
			if enables == 2 && (f.Retval != -170 || f.Text == "") {
				t.Errorf("second enable recorded %+v, want retval -170 with its text", f)
			}
			if enables == 1 && (f.Retval != 0 || !strings.Contains(string(line.Replies[0]), `"retval":0`)) {
				t.Errorf("first enable recorded %s, want retval 0 written", line.Replies[0])
			}
		default:
			if !strings.HasSuffix(last, "_reply") {
				t.Errorf("%s ends with %s", r.Request.Name, last)
			}
		}
	}
	if dumps == 0 || enables != 2 || ifDump == 0 {
		t.Errorf("recorded %d dumps (%d of interfaces) and %d enables, want some, some and 2", dumps, ifDump, enables)
	}
}

// recordLine is line i of a record file with its replies kept raw.
func recordLine(t *testing.T, path string, i int) struct{ Replies []json.RawMessage } {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Replies []json.RawMessage }
	if err := json.Unmarshal([]byte(strings.Split(string(b), "\n")[i]), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRecorderDoesNotWaitForeverOnADumpWithoutPing: a dump never followed
// by its control_ping is written without its end once maxUnanswered later
// calls wait behind it, so the rest of the record is not held back.
func TestRecorderDoesNotWaitForeverOnADumpWithoutPing(t *testing.T) {
	var buf lockedBuffer
	rec := NewRecorder(&buf)
	v := sim.New(sim.Options{})
	defer v.Close()
	conn, err := core.Connect(rec.Wrap(v))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Disconnect()
	ctx := context.Background()
	s, err := conn.NewStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendMsg(&interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecvMsg(); err != nil { // local0's details
		t.Fatal(err)
	}
	_ = s.Close()
	for range maxUnanswered + 1 {
		if err := conn.Invoke(ctx, &memclnt.ControlPing{}, &memclnt.ControlPingReply{}); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) < 3 || !strings.Contains(lines[1], `"sw_interface_dump"`) || !strings.Contains(lines[1], "no answer recorded") {
		t.Fatalf("%d lines; the dump's: %.300s", len(lines), lines[min(1, len(lines)-1)])
	}
	if len(lines) < maxUnanswered {
		t.Errorf("%d lines written, want the pings behind the dump written too", len(lines))
	}
}

// lockedBuffer is a bytes.Buffer safe for the recorder's writes and the
// test's read.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
