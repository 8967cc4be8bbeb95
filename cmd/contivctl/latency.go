package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"contiv.dev/vpp/agent/syncmetrics"
)

// runLatency prints an agent's network programming latency: p50, p99 and
// the maximum over its latest observations.
func runLatency(ctx context.Context, s streams, args []string) error {
	c, of, err := newInspect(s, "latency", args)
	if err != nil {
		return err
	}
	var v syncmetrics.LatencyView
	if printed, err := c.show(ctx, s.out, of, "/v1/latency", &v); printed || err != nil {
		return err
	}
	return printLatency(s.out, v)
}

// printLatency writes the latency summary.
func printLatency(w io.Writer, v syncmetrics.LatencyView) error {
	if v.Window == 0 {
		fmt.Fprintln(w, "network programming latency: nothing observed yet (EndpointSlice changes with a trigger time, since the agent started)")
	} else {
		fmt.Fprintf(w, "network programming latency over the last %d of %d changes: p50 %s, p99 %s, max %s\n",
			v.Window, v.Observed, seconds(v.P50), seconds(v.P99), seconds(v.Max))
	}
	_, err := fmt.Fprintf(w, "not measured: %d trigger times older than the agent's start, %d already measured; %d changes waiting for an apply\n",
		v.Stale, v.Repeated, v.Pending)
	return err
}

// seconds formats a duration in seconds, rounded to what matters.
func seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}
