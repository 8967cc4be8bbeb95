package packettrace

import (
	"context"
	"fmt"
	"log/slog"

	"go.fd.io/govpp/api"

	"contiv.dev/vpp/plugins/vpp"
	"contiv.dev/vpp/plugins/vpp/sim"
)

// traceIngress names the interface made for a packet given no ingress.
const traceIngress = "trace-ingress"

// connected runs load against a fresh simulated VPP holding the interfaces
// and the IPv4 tables given (as its startup configuration makes them), through a govpp connection and the interface cache the ports
// need; the connection is closed when load returns.
func connected(ctx context.Context, ifaces []sim.InterfaceSpec, tables []uint32, extra []api.Message,
	load func(*vpp.Conn, *vpp.Interfaces) error) (*sim.VPP, error) {
	v := sim.New(sim.Options{})
	for _, t := range tables {
		v.CreateTable(t)
	}
	for _, s := range ifaces {
		if _, err := v.CreateInterface(s); err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
	}
	conn := vpp.New(vpp.Config{Adapter: v, ExtraMessages: extra})
	conn.Start(ctx)
	defer conn.Close()
	if err := conn.WaitConnected(ctx); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if err := load(conn, vpp.NewInterfaces(conn, nil)); err != nil {
		return nil, fmt.Errorf("trace: loading the state into the simulated VPP: %w", err)
	}
	return v, nil
}

// discard is the ports' logger: loading a state is no news.
var discard = slog.New(slog.DiscardHandler)
