package service

import (
	"maps"
	"slices"

	sr "contiv.dev/vpp/servicerenderer"
)

// Services returns the rendered services, sorted by ID. They must not be
// modified.
func (p *Processor) Services() []*sr.ContivService {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]*sr.ContivService, 0, len(p.services))
	for _, e := range p.services {
		if e.out != nil {
			out = append(out, e.out)
		}
	}
	slices.SortFunc(out, func(a, b *sr.ContivService) int { return compareIDs(a.ID, b.ID) })
	return out
}

// Skipped returns what is currently left out of the rendered services, and
// why, sorted by service.
func (p *Processor) Skipped() []Skip {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []Skip
	for _, e := range p.services {
		out = append(out, e.skips()...)
	}
	slices.SortFunc(out, compareSkips)
	return out
}

// SkipCounts returns how many skips of each reason there currently are.
func (p *Processor) SkipCounts() map[Reason]int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	m := map[Reason]int{}
	for _, e := range p.services {
		for _, s := range e.skips() {
			m[s.Reason]++
		}
	}
	return m
}

// Interfaces returns every interface with a role.
func (p *Processor) Interfaces() map[string]sr.InterfaceRole {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return maps.Clone(p.roles)
}
