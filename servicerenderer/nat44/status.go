package nat44

import (
	"cmp"
	"time"

	"contiv.dev/vpp/servicerenderer"
	"contiv.dev/vpp/servicerenderer/reconcile"
)

// ObjectKind names the kinds of NAT44 objects.
type ObjectKind uint8

// The object kinds.
const (
	ObjectGlobal ObjectKind = iota
	ObjectPool
	ObjectInterface
	ObjectIdentity
	ObjectRoute
	ObjectMapping
)

// String names the kind.
func (k ObjectKind) String() string {
	switch k {
	case ObjectGlobal:
		return "global"
	case ObjectPool:
		return "pool"
	case ObjectInterface:
		return "interface"
	case ObjectIdentity:
		return "identity"
	case ObjectRoute:
		return "route"
	case ObjectMapping:
		return "mapping"
	}
	return "unknown"
}

// ObjectID identifies one NAT44 object; only the field of its Kind is set.
type ObjectID struct {
	Kind      ObjectKind
	Pool      PoolAddress
	Interface string
	Identity  IdentityKey
	Route     RouteKey
	Mapping   MappingKey
}

// String is the kind and the object's key.
func (id ObjectID) String() string {
	switch id.Kind {
	case ObjectPool:
		return "pool " + id.Pool.String()
	case ObjectInterface:
		return "interface " + id.Interface
	case ObjectIdentity:
		return "identity " + id.Identity.String()
	case ObjectRoute:
		return "route " + id.Route.String()
	case ObjectMapping:
		return "mapping " + id.Mapping.String()
	}
	return id.Kind.String()
}

func compareObjects(a, b ObjectID) int {
	if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	switch a.Kind {
	case ObjectPool:
		return comparePool(a.Pool, b.Pool)
	case ObjectInterface:
		return cmp.Compare(a.Interface, b.Interface)
	case ObjectIdentity:
		return compareIdentityKeys(a.Identity, b.Identity)
	case ObjectRoute:
		return compareRouteKeys(a.Route, b.Route)
	case ObjectMapping:
		return compareMappingKeys(a.Mapping, b.Mapping)
	}
	return 0
}

// Failure is an object VPP refused as invalid, or that a foreign object
// stands in the way of. It is not retried until the desired object changes
// or a full resync runs.
type Failure struct {
	Object ObjectID
	// Service owns the mapping (empty for other objects).
	Service servicerenderer.ServiceID
	// Op is the refused operation (empty when no call was made).
	Op     OpKind
	Reason string
}

// PendingInterface is an interface whose NAT44 features wait for VPP to
// have it (a pod's interface not yet created, say). It is not a failure:
// every full apply, and every UpdateInterface of that name, tries again.
type PendingInterface struct {
	Name string
	// Features are the features it is to get.
	Features Features
	// Since is when the renderer first found VPP without it.
	Since time.Time
}

// String is "waiting for interface NAME (features F)".
func (p PendingInterface) String() string {
	return "waiting for interface " + p.Name + " (features " + p.Features.String() + ")"
}

// Conflict is a frontend address:port/protocol claimed by more than one
// service: Winner's mapping is rendered, the Losers' are not.
type Conflict = reconcile.Conflict[MappingKey]

// Stats are cumulative counters of the apply step.
type Stats struct {
	// Applies counts Apply calls; FullApplies those with full set.
	Applies     uint64
	FullApplies uint64
	// Calls counts VPP calls issued (dumps included).
	Calls uint64
	// Invalid counts calls VPP refused as invalid; Transient the other
	// failed calls.
	Invalid   uint64
	Transient uint64
	// MappingsAdded, MappingsRemoved and MappingsUpdated count mappings by
	// what happened to them; LocalsChanged counts in-place local changes.
	MappingsAdded   uint64
	MappingsRemoved uint64
	MappingsUpdated uint64
	LocalsChanged   uint64
}
