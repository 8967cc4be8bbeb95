package restapi

import "contiv.dev/vpp/servicerenderer/cnat"

// CNATView is the /v1/cnat view: the translations desired and applied,
// and the node configuration (null with renderer nat44).
type CNATView struct {
	Desired     []*cnat.Translation     `json:"desired"`
	Applied     []*cnat.Translation     `json:"applied"`
	DesiredNode *cnat.Node              `json:"desiredNode"`
	AppliedNode *cnat.Node              `json:"appliedNode"`
	Failures    []cnat.Failure          `json:"failures"`
	Conflicts   []cnat.Conflict         `json:"conflicts"`
	Pending     []cnat.PendingInterface `json:"pending"`
	Stats       cnat.Stats              `json:"stats"`
}
