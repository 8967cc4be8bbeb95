package kubestate

// The fast path's readers of the models (see fastdecode.go). Each reads
// every field of its model, interning what compact interns; a field given
// twice gives up.

func (d *decoder) endpointSlice(s *EndpointSlice) bool {
	var seen fields
	return d.object(sliceOrder, func(key string) bool {
		switch key {
		case "namespace":
			return seen.first(0) && d.istr(&s.Namespace)
		case "name":
			return seen.first(1) && d.str(&s.Name)
		case "serviceName":
			return seen.first(2) && d.str(&s.ServiceName)
		case "addressType":
			return seen.first(3) && d.istr(&s.AddressType)
		case "ports":
			return seen.first(4) && arrayOf(d, &s.Ports, d.endpointPort, &endpointPortLists)
		case "endpoints":
			return seen.first(5) && array(d, &s.Endpoints, d.endpoint)
		case "triggerTime":
			return seen.first(6) && d.time(&s.TriggerTime)
		}
		return d.other(key, sliceNames)
	})
}

func (d *decoder) endpointPort() (p EndpointPort, ok bool) {
	var seen fields
	ok = d.object(endpointPortOrder, func(key string) bool {
		switch key {
		case "name":
			return seen.first(0) && d.istr(&p.Name)
		case "protocol":
			return seen.first(1) && d.istr(&p.Protocol)
		case "port":
			return seen.first(2) && d.int32(&p.Port)
		}
		return d.other(key, endpointPortNames)
	})
	return
}

// endpoint reads an endpoint's fields and builds it (Endpoint.set): an
// address held as such keeps nothing of the value's text. One stored as
// the Writer stores most (storedEndpoint) is read without looking its
// keys up.
func (d *decoder) endpoint() (e Endpoint, ok bool) {
	if e, ok = d.storedEndpoint(); ok {
		return e, true
	}
	var f EndpointFields
	var seen fields
	var one [1]string // an endpoint's address, mostly its only one
	var addrs []string
	ok = d.object(endpointOrder, func(key string) bool {
		switch key {
		case "addresses":
			if !seen.first(0) {
				return false
			}
			var ok bool
			addrs, ok = d.strsInto(one[:0])
			return ok
		case "ready":
			return seen.first(1) && d.boolean(&f.Ready)
		case "serving":
			return seen.first(2) && d.boolean(&f.Serving)
		case "terminating":
			return seen.first(3) && d.boolean(&f.Terminating)
		case "nodeName":
			return seen.first(4) && d.str(&f.NodeName)
		case "targetKind":
			return seen.first(5) && d.str(&f.TargetKind)
		case "targetNamespace":
			return seen.first(6) && d.str(&f.TargetNamespace)
		case "targetName":
			return seen.first(7) && d.str(&f.TargetName)
		case "hintZones":
			return seen.first(8) && d.istrs(&f.HintZones)
		case "hintNodes":
			return seen.first(9) && d.istrs(&f.HintNodes)
		}
		return d.other(key, endpointNames)
	})
	if !ok {
		return e, false
	}
	e.set(&f, addrs, d.name)
	return e, true
}

// storedEndpoint reads an endpoint of one address and no hints written as
// the Writer writes it (Endpoint.appendJSON): its keys in their order,
// each once, its conditions only when true, no white space. It reads what
// endpoint's loop would read, as it would, and builds the same endpoint.
// On anything else it reads nothing (false).
func (d *decoder) storedEndpoint() (e Endpoint, ok bool) {
	start := d.i
	var f EndpointFields
	var addr [1]string
	if ok = d.lit(`{"addresses":[`); ok {
		addr[0], ok = d.plainString()
	}
	if !ok || !d.lit("]") {
		d.i = start
		return e, false
	}
	f.Ready = d.lit(`,"ready":true`)
	f.Serving = d.lit(`,"serving":true`)
	f.Terminating = d.lit(`,"terminating":true`)
	if d.lit(`,"nodeName":`) && !d.str(&f.NodeName) ||
		d.lit(`,"targetKind":`) && !d.str(&f.TargetKind) ||
		d.lit(`,"targetNamespace":`) && !d.str(&f.TargetNamespace) ||
		d.lit(`,"targetName":`) && !d.str(&f.TargetName) {
		d.i = start
		return e, false
	}
	if !d.lit("}") {
		d.i = start
		return e, false
	}
	e.set(&f, addr[:], d.name)
	return e, true
}

func (d *decoder) service(s *Service) bool {
	var seen fields
	return d.object(serviceOrder, func(key string) bool {
		switch key {
		case "namespace":
			return seen.first(0) && d.istr(&s.Namespace)
		case "name":
			return seen.first(1) && d.str(&s.Name)
		case "type":
			return seen.first(2) && d.istr(&s.Type)
		case "clusterIPs":
			return seen.first(3) && d.strs(&s.ClusterIPs)
		case "externalIPs":
			return seen.first(4) && d.strs(&s.Rare().ExternalIPs)
		case "lbIngressIPs":
			return seen.first(5) && d.strs(&s.Rare().LBIngressIPs)
		case "lbProxyIPs":
			return seen.first(6) && d.strs(&s.Rare().LBProxyIPs)
		case "ports":
			return seen.first(7) && arrayOf(d, &s.Ports, d.servicePort, &servicePortLists)
		case "healthCheckNodePort":
			return seen.first(8) && d.int32(&s.Rare().HealthCheckNodePort)
		case "loadBalancerSourceRanges":
			return seen.first(9) && d.strs(&s.Rare().LoadBalancerSourceRanges)
		case "trafficDistribution":
			return seen.first(10) && d.str(&s.Rare().TrafficDistribution)
		case "externalTrafficPolicy":
			return seen.first(11) && d.istr(&s.ExternalTrafficPolicy)
		case "internalTrafficPolicy":
			return seen.first(12) && d.istr(&s.InternalTrafficPolicy)
		case "sessionAffinity":
			return seen.first(13) && d.istr(&s.SessionAffinity)
		case "sessionAffinityTimeout":
			return seen.first(14) && d.int32(&s.Rare().SessionAffinityTimeout)
		case "proxyName":
			return seen.first(15) && d.str(&s.Rare().ProxyName)
		case "created":
			return seen.first(16) && d.time(&s.Created)
		}
		return d.other(key, serviceNames)
	})
}

func (d *decoder) servicePort() (p ServicePort, ok bool) {
	var seen fields
	ok = d.object(servicePortOrder, func(key string) bool {
		switch key {
		case "name":
			return seen.first(0) && d.istr(&p.Name)
		case "protocol":
			return seen.first(1) && d.istr(&p.Protocol)
		case "port":
			return seen.first(2) && d.int32(&p.Port)
		case "targetPort":
			return seen.first(3) && d.istr(&p.TargetPort)
		case "nodePort":
			return seen.first(4) && d.int32(&p.NodePort)
		}
		return d.other(key, servicePortNames)
	})
	return
}

func (d *decoder) pod(p *Pod) bool {
	var seen fields
	return d.object(podOrder, func(key string) bool {
		switch key {
		case "namespace":
			return seen.first(0) && d.istr(&p.Namespace)
		case "name":
			return seen.first(1) && d.str(&p.Name)
		case "nodeName":
			return seen.first(2) && d.istr(&p.NodeName)
		case "ips":
			return seen.first(3) && d.strs(&p.IPs)
		case "hostIP":
			return seen.first(4) && d.istr(&p.HostIP)
		case "hostNetwork":
			return seen.first(5) && d.boolean(&p.HostNetwork)
		}
		return d.other(key, podNames)
	})
}
