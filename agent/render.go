package agent

import (
	"context"

	"contiv.dev/vpp/agent/offline"
)

// The offline render lives in package offline; these names keep its
// callers (contivctl, e2e, chaos) working until they import it.

// ErrUnknownNode is offline.ErrUnknownNode.
var ErrUnknownNode = offline.ErrUnknownNode

// RenderParams are offline.Params.
type RenderParams = offline.Params

// Rendered is offline.Rendered.
type Rendered = offline.Rendered

// CNATRendered is offline.CNATRendered.
type CNATRendered = offline.CNATRendered

// Render is offline.Render.
func Render(ctx context.Context, p RenderParams) (*Rendered, error) { return offline.Render(ctx, p) }
