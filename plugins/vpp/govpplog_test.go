package vpp

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.fd.io/govpp/adapter/socketclient"
)

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestGovppLogsGoToSlog makes govpp's socket client log a real line (the
// server hangs up before answering sockclnt_create) and finds it in the
// slog handler, in slog's format, marked part=govpp.
func TestGovppLogsGoToSlog(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("no unix sockets: %v", err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.ReadFull(c, make([]byte, 16)) // the request's header, then hang up
			_ = c.Close()
		}
	}()
	var out syncBuffer
	RouteGovppLogs(slog.New(slog.NewTextHandler(&out, nil)))
	t.Cleanup(func() { RouteGovppLogs(slog.New(slog.DiscardHandler)) })

	sc := socketclient.NewVppClient(sock)
	if err := sc.Connect(); err == nil {
		t.Fatal("connecting to a server that hangs up succeeded")
	}
	<-served
	_ = ln.Close()
	got := out.String()
	if !strings.Contains(got, "level=INFO") || !strings.Contains(got, `msg="Read error:`) ||
		!strings.Contains(got, "part=govpp") || !strings.Contains(got, "logger=govpp/socketclient") {
		t.Errorf("govpp's log line did not reach slog as expected:\n%s", got)
	}
}

func TestGovppLogLevels(t *testing.T) {
	var out syncBuffer
	l := newGovppLogger(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.WithField("connId", 7).Warnf("probe timed out (%d. timeout)", 2)
	l.Debug("dropped: govpp debug is off without DEBUG_GOVPP")
	l.Error("boom")
	got := out.String()
	for _, want := range []string{`level=WARN msg="probe timed out (2. timeout)" part=govpp connId=7`, `level=ERROR msg=boom part=govpp`} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if os.Getenv("DEBUG_GOVPP") == "" && strings.Contains(got, "dropped") {
		t.Errorf("a debug line passed:\n%s", got)
	}
}

// TestGovppStaleReplyDemoted: the error govpp logs for a reply to a closed
// channel (every VPP restart) is debug, not error.
func TestGovppStaleReplyDemoted(t *testing.T) {
	var out syncBuffer
	l := newGovppLogger(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Errorf("Channel ID not known, ignoring the message: %T %+v", struct{}{}, struct{}{})
	got := out.String()
	if strings.Contains(got, "level=ERROR") || !strings.Contains(got, `level=DEBUG msg="Channel ID not known`) {
		t.Errorf("want the stale reply at debug level:\n%s", got)
	}
}
