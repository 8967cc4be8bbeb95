package addrplan

import (
	"math/big"
	"net/netip"
)

// addrAdd returns a + n, and false when the sum leaves the address family.
func addrAdd(a netip.Addr, n *big.Int) (netip.Addr, bool) {
	x := new(big.Int).SetBytes(a.AsSlice())
	x.Add(x, n)
	if x.Sign() < 0 || x.BitLen() > a.BitLen() {
		return netip.Addr{}, false
	}
	buf := make([]byte, a.BitLen()/8)
	x.FillBytes(buf)
	r, _ := netip.AddrFromSlice(buf)
	return r, true
}

// pow2 is 2^n.
func pow2(n int) *big.Int { return new(big.Int).Lsh(big.NewInt(1), uint(n)) }

// lastAddr is the highest address of p (its broadcast address for IPv4).
func lastAddr(p netip.Prefix) netip.Addr {
	hostBits := p.Addr().BitLen() - p.Bits()
	last, _ := addrAdd(p.Masked().Addr(), new(big.Int).Sub(pow2(hostBits), big.NewInt(1)))
	return last
}

// hostCount is the number of addresses of p, saturated at max.
func hostCount(p netip.Prefix, max uint64) uint64 {
	hostBits := p.Addr().BitLen() - p.Bits()
	if hostBits >= 64 {
		return max
	}
	return min(uint64(1)<<hostBits, max)
}
