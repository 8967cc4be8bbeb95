package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"contiv.dev/vpp/agent/restapi"
)

func runRenderer(ctx context.Context, s streams, args []string) error {
	c, of, err := newInspect(s, "renderer", args)
	if err != nil {
		return err
	}
	var v *restapi.RendererView
	if printed, err := c.show(ctx, s.out, of, "/v1/renderer", &v); printed || err != nil {
		return err
	}
	return printRenderer(s.out, v)
}

// rendererLine is the renderer's counters in one line: the RENDERER row
// of contivctl status and renderer.
func rendererLine(v *restapi.RendererView) string {
	if v == nil {
		return "not running yet (the agent has not built its handlers)"
	}
	st, n := v.Stats, v.Counts
	calls := strconv.FormatUint(st.Calls, 10) + " VPP calls"
	if st.Writes != nil {
		calls += fmt.Sprintf(" (%d writes)", *st.Writes)
	}
	return fmt.Sprintf("%s: %d applies (%d full), %s, %d refused as invalid, %d transient failures; "+
		"objects %d desired, %d applied; %d failures, %d conflicts, %d pending interfaces, %d pending tables",
		orDash(v.Renderer), st.Applies, st.FullApplies, calls, st.Invalid, st.Transient,
		n.Desired, n.Applied, n.Failures, n.Conflicts, n.Pending, n.PendingTables)
}

// printRenderer writes the renderer's line, then its failures, conflicts,
// pending interfaces and pending tables when there are any.
func printRenderer(w io.Writer, v *restapi.RendererView) error {
	t := newTable(w)
	t.row("RENDERER", rendererLine(v))
	if v != nil && v.Counts.Held > 0 {
		t.row("HELD", strconv.Itoa(v.Counts.Held)+" frontends wait for the features of the node's interfaces (features go first)")
	}
	if err := t.flush(); err != nil || v == nil {
		return err
	}
	err := section(w, failuresTitle, v.Failures, []string{"OBJECT", "SERVICE", "CALL", "REASON"}, func(f restapi.RendererFailure) []string {
		svc := "-"
		if f.Service != nil {
			svc = f.Service.String()
		}
		return []string{f.Object, svc, orDash(f.Op), f.Error}
	})
	if err == nil {
		err = section(w, conflictsTitle, v.Conflicts, conflictHeader, func(c restapi.RendererConflict) []string {
			return []string{c.Frontend, c.Winner.String(), joinStrings(c.Losers, ",")}
		})
	}
	if err == nil {
		err = section(w, "PENDING (%d): interfaces VPP does not have yet; tried again when VPP creates them", v.Pending,
			[]string{"INTERFACE", "SINCE", "WAITING"}, func(p restapi.RendererPending) []string {
				return []string{p.Name, p.Since.UTC().Format(time.RFC3339), orDash(p.Waits)}
			})
	}
	if err == nil {
		err = section(w, "PENDING TABLES (%d): FIB tables VPP does not have yet; their routes are added when VPP makes them", v.PendingTables,
			[]string{"VRF", "SINCE", "ROUTES WAITING"}, func(p restapi.RendererPendingTable) []string {
				return []string{strconv.FormatUint(uint64(p.VRF), 10), p.Since.UTC().Format(time.RFC3339), orDash(strings.Join(p.Routes, "; "))}
			})
	}
	return err
}
