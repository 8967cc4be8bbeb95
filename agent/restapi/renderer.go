package restapi

import (
	"time"

	sr "contiv.dev/vpp/servicerenderer"
)

// RendererView is the /v1/renderer view: what every service renderer
// reports, in one shape whichever runs (renderer: nat44 or cnat). The
// renderer's own objects are in /v1/nat44 and /v1/cnat.
type RendererView struct {
	// Renderer names the renderer that runs: nat44 or cnat.
	Renderer string        `json:"renderer"`
	Stats    RendererStats `json:"stats"`
	// Failures are the objects VPP refused (not retried until they change
	// or a full resync), sorted as the renderer sorts them.
	Failures []RendererFailure `json:"failures"`
	// Conflicts are the frontends more than one service claims.
	Conflicts []RendererConflict `json:"conflicts"`
	// Pending are the interfaces whose configuration waits for VPP to
	// create them; PendingTables the FIB tables routes wait for.
	Pending       []RendererPending      `json:"pending"`
	PendingTables []RendererPendingTable `json:"pendingTables"`
	Counts        RendererCounts         `json:"counts"`
}

// RendererStats are the apply step's cumulative counters.
type RendererStats struct {
	Applies     uint64 `json:"applies"`
	FullApplies uint64 `json:"fullApplies"`
	// Calls counts VPP calls (dumps included); Writes those that may
	// change VPP (null: the renderer does not count them).
	Calls  uint64  `json:"calls"`
	Writes *uint64 `json:"writes,omitempty"`
	// Invalid counts calls VPP refused as invalid; Transient the other
	// failed calls.
	Invalid   uint64 `json:"invalid"`
	Transient uint64 `json:"transient"`
}

// RendererFailure is one object VPP refused.
type RendererFailure struct {
	// Object is the object's kind and key ("mapping 10.96.0.10:80/TCP").
	Object string `json:"object"`
	// Op is the refused call ("" when none was made).
	Op    string `json:"op,omitempty"`
	Error string `json:"error"`
	// Service owns the object (null when none does, or the renderer does
	// not say).
	Service *sr.ServiceID `json:"service,omitempty"`
}

// RendererConflict is a frontend more than one service claims: Winner's
// object is rendered, the Losers' are not.
type RendererConflict struct {
	Frontend string         `json:"frontend"`
	Winner   sr.ServiceID   `json:"winner"`
	Losers   []sr.ServiceID `json:"losers"`
}

// RendererPending is an interface whose configuration waits for VPP to
// create it.
type RendererPending struct {
	Name  string    `json:"name"`
	Since time.Time `json:"since"`
	// Waits is what waits for it ("NAT44 features in,out").
	Waits string `json:"waits"`
}

// RendererPendingTable is a FIB table whose routes wait for VPP to make it.
type RendererPendingTable struct {
	VRF   uint32    `json:"vrf"`
	Since time.Time `json:"since"`
	// Routes are the routes waiting, one line each.
	Routes []string `json:"routes"`
}

// RendererCounts are the counts readiness and operators watch.
type RendererCounts struct {
	// Desired and Applied count the service objects (NAT44 mappings, cnat
	// translations) wanted and held.
	Desired int `json:"desired"`
	Applied int `json:"applied"`
	// Failures, Conflicts, Pending and PendingTables are the lengths of
	// the lists above.
	Failures      int `json:"failures"`
	Conflicts     int `json:"conflicts"`
	Pending       int `json:"pending"`
	PendingTables int `json:"pendingTables"`
	// Held counts the frontends whose objects wait for the features of
	// the node's interfaces (NAT44: features first); readiness waits for
	// it to reach 0.
	Held int `json:"held"`
}
