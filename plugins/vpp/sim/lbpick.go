package sim

// How VPP 25.02 picks the local of a load-balanced mapping for a new
// session (FACTS.md §1 "Why"; nat44_ed.c, read for this model): each local
// holds its probability and a cumulative prefix, both u8, recomputed in
// the locals' pool order whenever the mapping or its locals change, so the
// running sum wraps at 256. A first packet draws rand = 1 + random % the
// last local's prefix (a division by zero, SIGFPE, when the sum is a
// multiple of 256), then binary-searches the prefixes for the first one
// not below rand. While the sum stays within 1..255 the prefixes rise and
// the pick follows the probabilities; past 255 they wrap, and only the
// first (sum mod 256) units are ever drawn, whichever locals the search
// then lands on.
//
// ASSUMPTION: one worker (as recorded), so every local is a candidate;
// random_u32 is modelled by the seeded session RNG. The model sends all
// sessions of 257 locals of probability 1 to the first local; the record
// has 294 of 300 there (the other 6 are not explained by the pick).

// lbPrefixes are the locals' cumulative probabilities as VPP keeps them:
// in pool order, each a u8.
func lbPrefixes(locals []local) []uint8 {
	out := make([]uint8, len(locals))
	var sum uint8
	for i, l := range locals {
		sum += l.prob // wraps at 256, as VPP's u8 does
		out[i] = sum
	}
	return out
}

// lbDraws is the number of values rand can take: the last prefix (the sum
// of the probabilities modulo 256). 0 means VPP divides by zero on the
// first packet.
func lbDraws(prefixes []uint8) uint32 {
	if len(prefixes) == 0 {
		return 0
	}
	return uint32(prefixes[len(prefixes)-1])
}

// lbSearch is the local VPP picks for rand (1 ≤ rand ≤ lbDraws): the
// binary search over the prefixes, which finds the first local whose
// prefix is not below rand only while the prefixes rise.
func lbSearch(prefixes []uint8, rand uint32) int {
	lo, hi := 0, len(prefixes)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if rand > uint32(prefixes[mid]) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// lbShares is, per local (pool order), the share of new sessions VPP
// gives it: how many of the draws 1..lbDraws the search lands on it,
// divided by the draws. nil when the mapping crashes VPP instead.
func lbShares(locals []local) []float64 {
	p := lbPrefixes(locals)
	n := lbDraws(p)
	if n == 0 {
		return nil
	}
	shares := make([]float64, len(locals))
	for r := uint32(1); r <= n; r++ {
		shares[lbSearch(p, r)]++
	}
	for i := range shares {
		shares[i] /= float64(n)
	}
	return shares
}

// lbSum is the true sum of a mapping's probabilities (no wrap).
func lbSum(m *staticMapping) int {
	s := 0
	for _, l := range m.locals {
		s += int(l.prob)
	}
	return s
}

// crashesOnPacket tells whether the first packet to m kills VPP 25.02: a
// load-balanced mapping whose probabilities sum to a multiple of 256 (all
// 0 included).
func crashesOnPacket(m *staticMapping) bool {
	return m != nil && m.lb && lbDraws(lbPrefixes(m.locals)) == 0
}

// probeLBLocked is Options.Traffic's packet to the load-balanced mapping
// on key after a call changed it: a mapping VPP 25.02 would crash on
// crashes the simulated VPP (true), one whose pick it would skew is
// counted. Called with mu held.
func (v *VPP) probeLBLocked(key o2iKey) bool {
	if !v.traffic {
		return false
	}
	m := v.nat.statics[key]
	if m == nil || !m.lb {
		return false
	}
	if crashesOnPacket(m) {
		v.crashLocked(lbSumCrashReason)
		return true
	}
	if lbSum(m) > 255 {
		v.skews++
	}
	return false
}

// Skews counts the calls after which, with Options.Traffic, a
// load-balanced mapping's probabilities summed to more than 255: VPP 25.02
// then skews its pick (lbpick.go).
func (v *VPP) Skews() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.skews
}
