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

func (e *Endpoint) equal(o *Endpoint) bool {
	return slices.Equal(e.Addresses, o.Addresses) &&
		e.Ready == o.Ready && e.Serving == o.Serving && e.Terminating == o.Terminating &&
		e.NodeName == o.NodeName && e.TargetKind == o.TargetKind &&
		e.TargetNamespace == o.TargetNamespace && e.TargetName == o.TargetName &&
		slices.Equal(e.ZoneHints(), o.ZoneHints()) && slices.Equal(e.NodeHints(), o.NodeHints())
}

// Equal tells whether s and o hold the same value, as EndpointSlice's.
func (s *Service) Equal(o *Service) bool {
	return s.Namespace == o.Namespace && s.Name == o.Name && s.Type == o.Type &&
		slices.Equal(s.ClusterIPs, o.ClusterIPs) && slices.Equal(s.ExternalIPs, o.ExternalIPs) &&
		slices.Equal(s.LBIngressIPs, o.LBIngressIPs) && slices.Equal(s.LBProxyIPs, o.LBProxyIPs) &&
		slices.Equal(s.Ports, o.Ports) && s.HealthCheckNodePort == o.HealthCheckNodePort &&
		slices.Equal(s.LoadBalancerSourceRanges, o.LoadBalancerSourceRanges) &&
		s.TrafficDistribution == o.TrafficDistribution &&
		s.ExternalTrafficPolicy == o.ExternalTrafficPolicy && s.InternalTrafficPolicy == o.InternalTrafficPolicy &&
		s.SessionAffinity == o.SessionAffinity && s.SessionAffinityTimeout == o.SessionAffinityTimeout &&
		s.ProxyName == o.ProxyName &&
		s.Created.Equal(o.Created)
}
