package kubestate

import "slices"

// Equal tells whether s and o hold the same value: every field the same
// (an empty slice the same as none, times the same instant). It is what
// the controller tells a no-op put with, for the kinds most often changed;
// a comparison of its own costs ~0.1 µs, reflect.DeepEqual's ~5 µs.
func (s *EndpointSlice) Equal(o *EndpointSlice) bool {
	return s.Namespace == o.Namespace && s.Name == o.Name &&
		s.ServiceName == o.ServiceName && s.AddressType == o.AddressType &&
		slices.Equal(s.Ports, o.Ports) &&
		endpointsEqual(s.Endpoints, o.Endpoints) && s.TriggerTime.Equal(o.TriggerTime)
}

func endpointsEqual(a, b []Endpoint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].equal(&b[i]) {
			return false
		}
	}
	return true
}

// Equal tells whether s and o hold the same value, as EndpointSlice's.
func (s *Service) Equal(o *Service) bool {
	r, q := s.rareOrZero(), o.rareOrZero()
	return s.Namespace == o.Namespace && s.Name == o.Name && s.Type == o.Type &&
		slices.Equal(s.ClusterIPs, o.ClusterIPs) && slices.Equal(r.ExternalIPs, q.ExternalIPs) &&
		slices.Equal(r.LBIngressIPs, q.LBIngressIPs) && slices.Equal(r.LBProxyIPs, q.LBProxyIPs) &&
		slices.Equal(s.Ports, o.Ports) && r.HealthCheckNodePort == q.HealthCheckNodePort &&
		slices.Equal(r.LoadBalancerSourceRanges, q.LoadBalancerSourceRanges) &&
		r.TrafficDistribution == q.TrafficDistribution &&
		s.ExternalTrafficPolicy == o.ExternalTrafficPolicy && s.InternalTrafficPolicy == o.InternalTrafficPolicy &&
		s.SessionAffinity == o.SessionAffinity && r.SessionAffinityTimeout == q.SessionAffinityTimeout &&
		r.ProxyName == q.ProxyName &&
		s.Created.Equal(o.Created)
}
