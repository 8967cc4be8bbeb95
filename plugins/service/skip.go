package service

import (
	"cmp"
	"fmt"
	"log/slog"

	"contiv.dev/vpp/kubestate"
	sr "contiv.dev/vpp/servicerenderer"
)

// Reason tells why the processor left something out.
type Reason uint8

// The reasons. The first three are by design (the service is not for this
// proxy); the others are unsupported or invalid input.
const (
	// ReasonHeadless: a service with clusterIP None.
	ReasonHeadless Reason = iota + 1
	// ReasonExternalName: a service of type ExternalName.
	ReasonExternalName
	// ReasonOtherProxy: a service labelled service.kubernetes.io/service-proxy-name.
	ReasonOtherProxy
	// ReasonSCTP: an SCTP port; NAT44-ED cannot translate SCTP.
	ReasonSCTP
	// ReasonUnknownProtocol: a port whose protocol is not TCP, UDP or SCTP.
	ReasonUnknownProtocol
	// ReasonInvalidPort: a port number 0 or above 65535.
	ReasonInvalidPort
	// ReasonDuplicatePort: a port name, or protocol and number, used twice.
	ReasonDuplicatePort
	// ReasonInvalidIP: a cluster, external or LoadBalancer IP that does not parse.
	ReasonInvalidIP
	// ReasonInvalidValue: an unknown type, policy or affinity value.
	ReasonInvalidValue
	// ReasonNoFrontend: no usable cluster, external or LoadBalancer IP.
	ReasonNoFrontend
	// ReasonNoPorts: no usable port.
	ReasonNoPorts
	// ReasonInvalidSlice: an EndpointSlice with an unknown address type.
	ReasonInvalidSlice
	// ReasonInvalidEndpoint: an endpoint without a usable address.
	ReasonInvalidEndpoint
	// ReasonIPModeProxy: a LoadBalancer ingress IP with ipMode Proxy; the
	// load balancer delivers its traffic to node or pod addresses, so the
	// IP is no frontend (by design, as in kube-proxy).
	ReasonIPModeProxy
	// ReasonSourceRangesNotEnforced: spec.loadBalancerSourceRanges, which
	// the cnat renderer cannot enforce (cnat translates before VPP's input
	// ACL; Config.SourceRangesEnforced is unset). The service is rendered;
	// traffic from every source reaches it.
	ReasonSourceRangesNotEnforced
)

// String names the reason in logs, REST and metrics.
func (r Reason) String() string {
	switch r {
	case ReasonHeadless:
		return "headless"
	case ReasonExternalName:
		return "external-name"
	case ReasonOtherProxy:
		return "other-proxy"
	case ReasonSCTP:
		return "sctp-unsupported"
	case ReasonUnknownProtocol:
		return "unknown-protocol"
	case ReasonInvalidPort:
		return "invalid-port"
	case ReasonDuplicatePort:
		return "duplicate-port"
	case ReasonInvalidIP:
		return "invalid-ip"
	case ReasonInvalidValue:
		return "invalid-value"
	case ReasonNoFrontend:
		return "no-frontend"
	case ReasonNoPorts:
		return "no-ports"
	case ReasonInvalidSlice:
		return "invalid-slice"
	case ReasonInvalidEndpoint:
		return "invalid-endpoint"
	case ReasonIPModeProxy:
		return "ipmode-proxy"
	case ReasonSourceRangesNotEnforced:
		return "source-ranges-not-enforced"
	}
	return "unknown"
}

// MarshalText makes a reason print as its name in JSON (REST).
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a reason's name (clients of the REST views).
func (r *Reason) UnmarshalText(b []byte) error {
	for x := ReasonHeadless; x <= ReasonSourceRangesNotEnforced; x++ {
		if x.String() == string(b) {
			*r = x
			return nil
		}
	}
	return fmt.Errorf("unknown skip reason %q", b)
}

// Ignored tells whether the reason is by design rather than a problem.
func (r Reason) Ignored() bool {
	return r >= ReasonHeadless && r <= ReasonOtherProxy || r == ReasonIPModeProxy
}

// logMessage is the log message of a skip for r: a service whose source
// ranges are not enforced is still programmed, so its log line must not say
// that anything was skipped.
func (r Reason) logMessage() string {
	if r == ReasonSourceRangesNotEnforced {
		return "service programmed without its loadBalancerSourceRanges"
	}
	return "service input skipped"
}

// level is the log level of a skip for r.
func (r Reason) level() slog.Level {
	if r.Ignored() {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// Skip is one thing the processor left out, and why. When Port is empty the
// skip concerns the whole object, or one of its addresses (see Detail).
type Skip struct {
	// Service is the service the skip belongs to.
	Service sr.ServiceID
	// Object is the object at fault: the Service or one of its EndpointSlices.
	Object kubestate.Key
	// Port names the port left out, if one was.
	Port string
	// Reason tells why.
	Reason Reason
	// Detail names the offending value.
	Detail string
}

func compareSkips(a, b Skip) int {
	return cmp.Or(
		cmp.Compare(a.Service.Namespace, b.Service.Namespace),
		cmp.Compare(a.Service.Name, b.Service.Name),
		compareKeys(a.Object, b.Object),
		cmp.Compare(a.Port, b.Port),
		cmp.Compare(a.Reason, b.Reason),
		cmp.Compare(a.Detail, b.Detail),
	)
}
