package ksr

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"contiv.dev/vpp/kubestate"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestHTTPEndpoints(t *testing.T) {
	f := newFixture(t, service("shop", "a", "10.96.0.1", 80))
	r := f.start(Params{Identity: "ksr-0", EtcdTimeout: 300 * time.Millisecond})
	r.waitSynced(t, 1)
	h := r.r.HTTP("", r.reg).Handler()

	code, body := get(t, h, "/healthz")
	require.Equal(t, http.StatusOK, code, body)
	code, _ = get(t, h, "/readyz")
	require.Equal(t, http.StatusOK, code)
	code, body = get(t, h, "/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, m := range []string{
		`contiv_ksr_objects{resource="service"} 1`, "contiv_ksr_write_errors_total 0",
		"contiv_ksr_resyncs_total 1", "contiv_ksr_is_leader 1", `contiv_ksr_invalid_objects_total{resource="pod"} 0`,
	} {
		require.Contains(t, body, m)
	}
	code, body = get(t, h, "/v1/status")
	require.Equal(t, http.StatusOK, code)
	var st Status
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	require.Equal(t, "ksr-0", st.Identity)
	require.True(t, st.Leader && st.Synced)
	require.Equal(t, 1, st.Objects[kubestate.ResService])

	f.etcd.Stop()
	eventually(t, func() bool { c, _ := get(t, h, "/readyz"); return c == http.StatusServiceUnavailable }, "not ready without etcd")
	code, _ = get(t, h, "/healthz")
	require.Equal(t, http.StatusOK, code, "etcd down is not a reason to restart the reflector")
}

func TestServeStopsWithTheContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	f := newFixture(t)
	r := f.start(Params{})
	go func() { done <- r.r.HTTP("", nil).Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, "ok\n", string(b))
	resp, err = http.Get("http://" + ln.Addr().String() + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "no gatherer, no metrics")
	cancel()
	require.NoError(t, <-done)
	http.DefaultClient.CloseIdleConnections()
}
