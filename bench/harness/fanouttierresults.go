package harness

import (
	"context"
	"fmt"
	"strconv"
)

// FanoutTierResult is the proxy-tier figure at one K in one mode (direct:
// the agents connected to etcd; proxied: to the proxies), medians over the
// runs. etcd and each proxy run in processes of their own.
type FanoutTierResult struct {
	// Watchers is K; Agents how many of them are real agents, the others
	// lightweight watchers (watch only, no decoding).
	Watchers int `json:"watchers"`
	Agents   int `json:"agents"`
	// P50MS and P99MS are over every real agent and change: from just
	// before the put to the end of the agent's apply (its VPP calls
	// issued). LastP50MS and LastP99MS are over the changes: until the
	// last of all K had it (a real agent's apply or a lightweight
	// watcher's receipt of the watch event).
	P50MS     float64 `json:"p50_ms"`
	P99MS     float64 `json:"p99_ms"`
	LastP50MS float64 `json:"last_p50_ms"`
	LastP99MS float64 `json:"last_p99_ms"`
	// EtcdCPUUS is etcd's process CPU per change (the put, its sends, its
	// background); EtcdUnwatchedCPUUS the same with nobody watching.
	EtcdCPUUS          float64 `json:"etcd_cpu_us_per_change"`
	EtcdUnwatchedCPUUS float64 `json:"etcd_unwatched_cpu_us_per_change"`
	// EtcdHeapMiB is etcd's live heap; EtcdWatchings the watches it holds.
	EtcdHeapMiB   float64 `json:"etcd_heap_mib"`
	EtcdWatchings float64 `json:"etcd_watchings"`
	// EtcdSentKiB is what etcd sent per change to its clients (the agents,
	// or the proxies), read on their connections.
	EtcdSentKiB float64 `json:"etcd_sent_kib_per_change"`
	// ProxyCPUUS and ProxyHeapMiB are each proxy's CPU per change and live
	// heap (proxied only).
	ProxyCPUUS   []float64 `json:"proxy_cpu_us_per_change,omitempty"`
	ProxyHeapMiB []float64 `json:"proxy_heap_mib,omitempty"`
	// LightMissed counts, over the runs, the receipts of lightweight
	// watchers still missing a minute after a put.
	LightMissed int `json:"-"`
	Changes     int `json:"-"`
	Runs        int `json:"-"`
}

// FanoutTier is the proxy-tier figure: both modes, keyed by K.
type FanoutTier struct {
	N, Proxies, Runs int
	Direct, Proxied  map[string]*FanoutTierResult
	Stopped          string
}

// fanoutJSON is the "fanout" object: the in-process figure keyed by K,
// and the proxy tier's "direct" and "proxied" objects keyed by K.
func (r *Results) fanoutJSON() map[string]any {
	out := make(map[string]any, len(r.Fanout)+2)
	for k, f := range r.Fanout {
		out[k] = f
	}
	if t := r.FanoutTier; t != nil {
		out["direct"], out["proxied"] = t.Direct, t.Proxied
	}
	return out
}

// jsonView is what WriteJSON encodes: r, its "fanout" object holding the
// proxy tier's too.
func (r *Results) jsonView() any {
	if r.FanoutTier == nil {
		return r
	}
	return struct {
		*Results
		Fanout map[string]any `json:"fanout,omitempty"`
	}{r, r.fanoutJSON()}
}

// tierFigure measures the proxy-tier figure runs times into res.
func tierFigure(ctx context.Context, env *nodeEnv, o Options, res *Results) error {
	runs := min(o.Runs, 3)
	p := tierParams{n: o.FanoutSize, ks: o.FanoutKs, light: o.FanoutLight, proxies: o.FanoutProxies,
		changes: o.FanoutChanges, fast: o.FastEtcd, log: o.Log}
	var all []*tierRun
	for i := range runs {
		o.Log.Info("fan-out through a proxy tier", "run", i+1, "of", runs, "proxies", p.proxies, "ks", p.ks, "light", p.light)
		r, err := measureTier(ctx, env, p)
		if err != nil {
			return err
		}
		all = append(all, r)
	}
	t := &FanoutTier{N: o.FanoutSize, Proxies: o.FanoutProxies, Runs: runs,
		Direct: tierMedians(all, func(r *tierRun) []tierLevel { return r.direct }), Proxied: tierMedians(all, func(r *tierRun) []tierLevel { return r.proxied })}
	for _, r := range all {
		if r.stopped != "" {
			t.Stopped = r.stopped
		}
	}
	res.FanoutTier = t
	return nil
}

// tierMedians keys the levels by K, each figure the median over the runs
// that reached that K.
func tierMedians(runs []*tierRun, levels func(*tierRun) []tierLevel) map[string]*FanoutTierResult {
	byK := map[int][]tierLevel{}
	var put []float64
	for _, r := range runs {
		put = append(put, us(r.putCPU))
		for _, lv := range levels(r) {
			byK[lv.k] = append(byK[lv.k], lv)
		}
	}
	out := map[string]*FanoutTierResult{}
	for k, lvs := range byK {
		med := func(f func(lv *tierLevel) float64) float64 {
			xs := make([]float64, len(lvs))
			for i := range lvs {
				xs[i] = f(&lvs[i])
			}
			return median(xs)
		}
		r := &FanoutTierResult{
			Watchers: k, Agents: lvs[0].real, Changes: len(lvs[0].last), Runs: len(lvs),
			P50MS:              med(func(lv *tierLevel) float64 { return ms(percentile(lv.lat, 0.50)) }),
			P99MS:              med(func(lv *tierLevel) float64 { return ms(percentile(lv.lat, 0.99)) }),
			LastP50MS:          med(func(lv *tierLevel) float64 { return ms(percentile(lv.last, 0.50)) }),
			LastP99MS:          med(func(lv *tierLevel) float64 { return ms(percentile(lv.last, 0.99)) }),
			EtcdCPUUS:          med(func(lv *tierLevel) float64 { return us(lv.etcdCPU) }),
			EtcdUnwatchedCPUUS: median(put),
			EtcdHeapMiB:        med(func(lv *tierLevel) float64 { return float64(lv.etcdHeap) / (1 << 20) }),
			EtcdWatchings:      med(func(lv *tierLevel) float64 { return float64(lv.watchings) }),
			EtcdSentKiB:        med(func(lv *tierLevel) float64 { return lv.etcdTx / (1 << 10) }),
		}
		for _, lv := range lvs {
			r.LightMissed += lv.missed
		}
		for i := range lvs[0].proxyCPU {
			r.ProxyCPUUS = append(r.ProxyCPUUS, med(func(lv *tierLevel) float64 { return us(lv.proxyCPU[i]) }))
			r.ProxyHeapMiB = append(r.ProxyHeapMiB, med(func(lv *tierLevel) float64 { return float64(lv.proxyHeap[i]) / (1 << 20) }))
		}
		out[strconv.Itoa(k)] = r
	}
	return out
}

// tierRows adds the proxy tier's rows to the table.
func (r *Results) tierRows(single func(name, value, target, met string)) {
	t := r.FanoutTier
	if t == nil {
		return
	}
	for _, mode := range []struct {
		name   string
		levels map[string]*FanoutTierResult
	}{{"directly", t.Direct}, {fmt.Sprintf("through %d etcd gRPC proxies", t.Proxies), t.Proxied}} {
		for _, k := range sortedNumeric(mode.levels) {
			f := mode.levels[k]
			who := fmt.Sprintf("%d agents", f.Agents)
			if f.Watchers > f.Agents {
				who = fmt.Sprintf("%d agents and %d lightweight watchers", f.Agents, f.Watchers-f.Agents)
			}
			single(fmt.Sprintf("proxy tier, W(%d), %s %s (etcd in its own process; median of %d runs of %d changes): put to applied at each agent p50 / p99; until the last of all p50 / p99 (ms)",
				t.N, who, mode.name, f.Runs, f.Changes),
				fmt.Sprintf("%.2f / %.2f; %.2f / %.2f", f.P50MS, f.P99MS, f.LastP50MS, f.LastP99MS), "", "")
			single("… etcd CPU per change (µs; with nobody watching); sent per change (KiB); heap (MiB); watchings",
				fmt.Sprintf("%.0f (%.0f); %.1f; %.1f; %.0f", f.EtcdCPUUS, f.EtcdUnwatchedCPUUS, f.EtcdSentKiB, f.EtcdHeapMiB, f.EtcdWatchings), "", "")
			if f.LightMissed > 0 {
				single("… lightweight watchers' receipts still missing a minute after the put (all runs)", strconv.Itoa(f.LightMissed), "", "")
			}
			if len(f.ProxyCPUUS) > 0 {
				single("… each proxy's CPU per change (µs); heap (MiB)", fmtList(f.ProxyCPUUS, "%.0f")+"; "+fmtList(f.ProxyHeapMiB, "%.1f"), "", "")
			}
		}
	}
	if t.Stopped != "" {
		single("proxy tier: stopped early", t.Stopped, "", "")
	}
}
