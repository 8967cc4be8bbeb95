package pods

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"contiv.dev/vpp/addrplan"
	"contiv.dev/vpp/plugins/pods/cniapi"
	"contiv.dev/vpp/plugins/vpp"
)

// maxRequest bounds a request body; maxGCRequest GC's, which lists every
// attachment of the node (~100 bytes each).
const (
	maxRequest   = 64 << 10
	maxGCRequest = 16 << 20
)

// ServerParams configures the CNI socket.
type ServerParams struct {
	// Socket is the unix socket's path (default cniapi.DefaultSocket).
	Socket string
	// Submit runs one operation (Submit over the controller, or the
	// Manager's methods directly in tests).
	Submit func(ctx context.Context, op Op, req Request) (Result, error)
	// Status tells whether the agent can wire pods now.
	Status func() cniapi.Status
	// Stale lists the DELs of CNI GC: the pods wired for sandboxes not
	// among the valid attachments (Manager.Stale); nil answers GC with
	// nothing removed.
	Stale func(valid []cniapi.Attachment) []Request
	// Deadline bounds one operation (default DefaultDeadline).
	Deadline time.Duration
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
}

// Server serves the CNI plugin's requests on a unix socket.
type Server struct {
	p   ServerParams
	log *slog.Logger
}

// NewServer returns the server; Run serves.
func NewServer(p ServerParams) *Server {
	if p.Socket == "" {
		p.Socket = cniapi.DefaultSocket
	}
	if p.Deadline <= 0 {
		p.Deadline = DefaultDeadline
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{p: p, log: p.Logger}
}

// Handler serves the versioned paths.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for path, op := range map[string]Op{cniapi.PathAdd: OpAdd, cniapi.PathDel: OpDel, cniapi.PathCheck: OpCheck} {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) { s.serveOp(w, r, op) })
	}
	mux.HandleFunc("POST "+cniapi.PathGC, s.serveGC)
	mux.HandleFunc("GET "+cniapi.PathStatus, func(w http.ResponseWriter, _ *http.Request) {
		st := s.p.Status()
		code := http.StatusOK
		if !st.Ready {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, st)
	})
	return mux
}

func (s *Server) serveOp(w http.ResponseWriter, r *http.Request, op Op) {
	var req Request
	if !decodeRequest(w, r, maxRequest, &req) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.p.Deadline)
	defer cancel()
	start := time.Now()
	res, err := s.p.Submit(ctx, op, req)
	s.log.Debug("cni", "op", op, "pod", req.Namespace+"/"+req.Pod, "container", req.ContainerID, "took", time.Since(start), "err", err)
	if err != nil {
		e := ToCNIError(err)
		writeJSON(w, http.StatusUnprocessableEntity, e)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// decodeRequest reads r's JSON body (at most limit bytes, no unknown
// field) into v; it answers a CNI decode error and returns false when it
// cannot.
func decodeRequest(w http.ResponseWriter, r *http.Request, limit int64, v any) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit))
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		err = dec.Decode(v)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, &cniapi.Error{Code: cniapi.CodeDecode, Msg: "the agent could not decode the request", Details: err.Error()})
		return false
	}
	return true
}

// serveGC runs CNI GC: a DEL, with its own deadline, for each pod wired
// for a sandbox the runtime no longer uses. It goes on past a failed DEL;
// the answer names every pod removed, or the first failure (GC is retried
// by the runtime, and DEL is idempotent).
func (s *Server) serveGC(w http.ResponseWriter, r *http.Request) {
	var req cniapi.GCRequest
	if !decodeRequest(w, r, maxGCRequest, &req) {
		return
	}
	var stale []Request
	if s.p.Stale != nil {
		stale = s.p.Stale(req.Valid)
	}
	res := cniapi.GCResult{Removed: []string{}}
	var errs []error
	for _, del := range stale {
		ctx, cancel := context.WithTimeout(r.Context(), s.p.Deadline)
		_, err := s.p.Submit(ctx, OpDel, del)
		cancel()
		name := del.Namespace + "/" + del.Pod
		if err != nil {
			errs = append(errs, fmt.Errorf("pod %s (sandbox %s): %w", name, del.ContainerID, err))
			continue
		}
		res.Removed = append(res.Removed, name)
	}
	s.log.Info("cni gc", "valid", len(req.Valid), "stale", len(stale), "removed", res.Removed, "failed", len(errs))
	if len(errs) > 0 {
		e := ToCNIError(errs[0])
		e.Details = fmt.Sprintf("%d of %d stale pods not removed: %v", len(errs), len(stale), errors.Join(errs...))
		writeJSON(w, http.StatusUnprocessableEntity, e)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// ToCNIError maps an operation's error onto a CNI error: its code and a
// message saying what to do, the full error in details.
func ToCNIError(err error) *cniapi.Error {
	e := &cniapi.Error{Details: err.Error()}
	var ex *exhausted
	switch {
	case errors.As(err, &ex):
		e.Code, e.Msg = cniapi.CodeNoAddress, fmt.Sprintf("no address left in %s", ex.subnet)
	case errors.Is(err, ErrInvalid):
		e.Code, e.Msg = cniapi.CodeInvalidEnv, "invalid request"
	case errors.Is(err, vpp.ErrNotConnected):
		e.Code, e.Msg = cniapi.CodeTryAgainLater, "VPP is not connected (the agent cannot program it now)"
	case errors.Is(err, vpp.ErrPodRefused):
		e.Code, e.Msg = cniapi.CodeVPPRefused, "VPP refused the interface: "+err.Error()
	case errors.Is(err, ErrNetnsGone):
		e.Code, e.Msg = cniapi.CodeNetnsGone, "the pod's network namespace is gone"
	case errors.Is(err, ErrCheckFailed):
		e.Code, e.Msg = cniapi.CodeCheckFailed, "the pod's network is not as ADD left it"
	case errors.Is(err, ErrNotReady), errors.Is(err, context.DeadlineExceeded):
		e.Code, e.Msg = cniapi.CodeTryAgainLater, "agent not ready"
	default:
		e.Code, e.Msg = cniapi.CodeInternal, "the agent failed"
	}
	return e
}

// exhausted names the subnet of an ErrExhausted.
type exhausted struct {
	subnet string
	err    error
}

func (e *exhausted) Error() string { return e.err.Error() }
func (e *exhausted) Unwrap() error { return e.err }

// withSubnet wraps addrplan.ErrExhausted with the subnet it is about.
func withSubnet(err error, subnet fmt.Stringer) error {
	if errors.Is(err, addrplan.ErrExhausted) {
		return &exhausted{subnet: subnet.String(), err: err}
	}
	return err
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Run serves until ctx ends, then removes the socket. A stale socket file
// (an agent that died) is replaced.
func (s *Server) Run(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Dir(s.p.Socket), 0o755); err != nil {
		return fmt.Errorf("cni socket: %w", err)
	}
	if err := os.Remove(s.p.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cni socket: %w", err)
	}
	ln, err := net.Listen("unix", s.p.Socket)
	if err != nil {
		return fmt.Errorf("cni socket: %w", err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("cni socket listening", "socket", s.p.Socket)
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-errc
		_ = os.Remove(s.p.Socket)
		return nil
	case err := <-errc:
		return fmt.Errorf("cni socket: %w", err)
	}
}
