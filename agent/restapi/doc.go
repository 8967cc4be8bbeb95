// Package restapi holds the types of contiv-agent's /v1 REST views, the
// JSON that the agent serves and that contivctl and other tools decode.
// It is for the agent, which fills the views from its running parts, and
// for clients, which import it without linking the agent. The contract is
// the JSON shape: a field's name and meaning do not change under a client,
// fields are added, and each view's doc comment names the path it is
// served at.
//
// The views: /v1/status (StatusView), /v1/ipam (IPAMView), /v1/nat44
// (NAT44View), /v1/nat44/mappings (NAT44MappingsView, its NAT44Objects
// turned back into a nat44.State by NAT44Objects.State), /v1/cnat
// (CNATView) and /v1/renderer (RendererView, either renderer in one
// shape). /v1/latency is agent/syncmetrics's LatencyView; the node proxy
// health in StatusView is agent/healthcheck's ProxyStatus.
package restapi
