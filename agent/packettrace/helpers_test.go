package packettrace_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"contiv.dev/vpp/agent/offline"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustRender(t testing.TB, p offline.Params) *offline.Rendered {
	t.Helper()
	r, err := offline.Render(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
