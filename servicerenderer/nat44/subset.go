package nat44

import (
	"cmp"
	"slices"
)

// MaxProbabilitySum is the most the probabilities of one load-balanced
// mapping may sum to. VPP 25.02 keeps their running sum in a u8 (FACTS
// §1): a sum that is a multiple of 256 crashes it on the first packet,
// and a sum past 255 skews its pick. Every mapping the agent builds sums
// to 1..MaxProbabilitySum, and Diff keeps every intermediate state of a
// change there too.
const MaxProbabilitySum = 255

// Subset says how a frontend's mapping leaves endpoints out to fit
// MaxProbabilitySum. The renderer reports it (Renderer.Subsets) for the
// frontends that do.
type Subset struct {
	// Endpoints are the frontend's usable endpoints (IPv4, distinct), Local
	// those on this node.
	Endpoints int `json:"endpoints"`
	Local     int `json:"local"`
	// Used are the endpoints the mapping holds, UsedLocal those on this
	// node.
	Used      int `json:"used"`
	UsedLocal int `json:"usedLocal"`
	// LocalWeight is the probability of each local endpoint used: the
	// configured weight, or 1 when only local endpoints are used and their
	// weights would sum past MaxProbabilitySum (all equal either way).
	LocalWeight uint8 `json:"localWeight"`
}

// LeftOut is how many endpoints the mapping leaves out.
func (s Subset) LeftOut() int { return s.Endpoints - s.Used }

// fitLocals chooses the locals of a frontend whose endpoints are loc (on
// this node, probability weight) and rem (elsewhere, probability 1), both
// sorted, so that the probabilities sum to at most MaxProbabilitySum.
// While all of them fit, all are used. Otherwise local endpoints come
// first under their weight:
//
//   - when remote endpoints exist and the local ones take less than
//     MaxProbabilitySum, every local endpoint is used with its weight and
//     the remaining units go to as many remote endpoints;
//   - else only local endpoints are used: with their weight while it fits,
//     else with probability 1 each (the weight is relative to remote
//     endpoints, and none is used), at most MaxProbabilitySum of them.
//
// Where endpoints must be chosen among more, each node takes those that
// rank highest by rendezvous hashing with its name (hrwScore): every node
// takes its own endpoints first, other nodes' choices spread over the
// rest, and one endpoint more or less changes a choice by at most one
// other endpoint. The result is sorted; subset is nil when none is left
// out.
func fitLocals(loc, rem []Local, node string, weight uint8) (_ []Local, subset *Subset) {
	s := Subset{Endpoints: len(loc) + len(rem), Local: len(loc), LocalWeight: weight}
	units := int(weight) * len(loc)
	switch {
	case units+len(rem) <= MaxProbabilitySum:
	case len(rem) > 0 && units < MaxProbabilitySum:
		rem = topByHRW(rem, MaxProbabilitySum-units, node)
	default:
		rem = nil
		if units > MaxProbabilitySum {
			loc = topByHRW(loc, MaxProbabilitySum, node)
			for i := range loc {
				loc[i].Probability = 1
			}
			s.LocalWeight = 1
		}
	}
	s.Used, s.UsedLocal = len(loc)+len(rem), len(loc)
	out := loc
	if len(rem) > 0 {
		out = append(loc, rem...)
		if len(loc) > 0 {
			out = sortLocals(out)
		}
	}
	if s.Used == s.Endpoints {
		return out, nil
	}
	sub := s // allocated here only: most frontends keep every endpoint
	return out, &sub
}

// topByHRW keeps the n locals of ls that rank highest for node (hrwScore),
// sorted; ls itself when it holds no more than n. It reuses ls.
func topByHRW(ls []Local, n int, node string) []Local {
	if len(ls) <= n {
		return ls
	}
	seed := hrwSeed(node)
	type scored struct {
		score uint64
		l     Local
	}
	sc := make([]scored, len(ls))
	for i, l := range ls {
		sc[i] = scored{hrwScore(seed, l.IP, l.Port), l}
	}
	slices.SortFunc(sc, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.score, a.score), compareLocals(a.l, b.l))
	})
	out := ls[:n]
	for i := range out {
		out[i] = sc[i].l
	}
	slices.SortFunc(out, compareLocals)
	return out
}

// FNV-1a, 64 bits.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// hrwSeed is the hash of a node's name that its scores start from.
func hrwSeed(node string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(node); i++ {
		h = (h ^ uint64(node[i])) * fnvPrime
	}
	return h
}

// hrwScore is an endpoint's rendezvous-hashing score on the node whose
// seed is given: FNV-1a of the node's name, the endpoint's address and
// port, then a 64-bit finaliser (splitmix64's) that spreads small
// differences over every bit. It is the same on every run and every
// machine, so each node's choice is deterministic. The VRF is left out:
// one endpoint has one identity on every node.
func hrwScore(seed uint64, ip IPv4, port uint16) uint64 {
	h := seed
	b := ip.Addr().As16() // the IPv4-mapped form, as when locals held a netip.Addr
	for _, c := range b {
		h = (h ^ uint64(c)) * fnvPrime
	}
	h = (h ^ uint64(port>>8)) * fnvPrime
	h = (h ^ uint64(port&0xff)) * fnvPrime
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
