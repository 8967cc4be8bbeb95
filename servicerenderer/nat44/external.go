package nat44

import (
	"net/netip"
	"slices"
)

// extRef counts one more (delta 1) or one fewer (-1) frontend with a
// desired mapping on external IP ip; the IP's source-NAT objects are
// wanted from the first to the last.
func (r *Renderer) extRef(ip netip.Addr, delta int) {
	pool, id, ok := ExternalIPObjects(&r.cfg, ip)
	if !ok {
		return
	}
	n := r.extRefs[ip] + delta
	if n > 0 {
		r.extRefs[ip] = n
	} else {
		delete(r.extRefs, ip)
	}
	switch {
	case n == 1 && delta > 0:
		i, found := slices.BinarySearchFunc(r.desired.Pool, pool, comparePool)
		if !found {
			r.desired.Pool = slices.Insert(r.desired.Pool, i, pool)
		}
		r.desired.Identities[id.IdentityKey] = id
	case n == 0:
		if i, found := slices.BinarySearchFunc(r.desired.Pool, pool, comparePool); found {
			r.desired.Pool = slices.Delete(r.desired.Pool, i, i+1)
		}
		delete(r.desired.Identities, id.IdentityKey)
	default:
		return
	}
	if r.dirtyExt == nil {
		r.dirtyExt = map[netip.Addr]struct{}{}
	}
	r.dirtyExt[ip] = struct{}{}
	r.failures.Delete(ObjectID{Kind: ObjectPool, Pool: pool})
	r.failures.Delete(ObjectID{Kind: ObjectIdentity, Identity: id.IdentityKey})
}

// diffExternal appends the operations on the source-NAT objects of
// external IP ip.
func (r *Renderer) diffExternal(ops []Op, ip netip.Addr) []Op {
	_, id, ok := ExternalIPObjects(&r.cfg, ip)
	if !ok {
		return ops
	}
	// Pools are sorted by IP first: ip's addresses are one run.
	ofIP := func(ps []PoolAddress) []PoolAddress {
		i, _ := slices.BinarySearchFunc(ps, ip, func(p PoolAddress, ip netip.Addr) int { return p.IP.Compare(ip) })
		j := i
		for j < len(ps) && ps[j].IP == ip {
			j++
		}
		return ps[i:j]
	}
	ops = diffPool(ops, ofIP(r.desired.Pool), ofIP(r.applied.Pool))
	ops, blocked := diffIdentity(ops, r.desired.Identities[id.IdentityKey], r.applied.Identities[id.IdentityKey], r.owned)
	if blocked {
		r.blocked(ObjectID{Kind: ObjectIdentity, Identity: id.IdentityKey}, r.applied.Identities[id.IdentityKey].Tag)
	}
	return ops
}
