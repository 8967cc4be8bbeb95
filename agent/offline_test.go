package agent

import (
	"context"
	"testing"

	"contiv.dev/vpp/agent/offline"
)

func mustRender(t testing.TB, p offline.Params) *offline.Rendered {
	t.Helper()
	r, err := offline.Render(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
