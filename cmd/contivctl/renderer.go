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
	c, of, err := newInspect(s, "renderer", "[--agent URL] [-o table|json]", args, nil)
	if err != nil {
		return err
	}
	var v *restapi.RendererView
	body, err := c.view(ctx, "/v1/renderer", &v)
	if err != nil {
		return err
	}
	if of.json() {
		return writeRawJSON(s.out, body)
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
	if len(v.Failures) > 0 {
		fmt.Fprintf(w, "\nFAILURES (%d): not applied until the object changes or a full resync\n", len(v.Failures))
		t := newTable(w, "OBJECT", "SERVICE", "CALL", "REASON")
		for _, f := range v.Failures {
			svc := "-"
			if f.Service != nil {
				svc = f.Service.String()
			}
			t.row(f.Object, svc, orDash(f.Op), f.Error)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(v.Conflicts) > 0 {
		fmt.Fprintf(w, "\nCONFLICTS (%d): frontends claimed by more than one service; the oldest wins\n", len(v.Conflicts))
		t := newTable(w, "FRONTEND", "WINNER", "LOSERS")
		for _, c := range v.Conflicts {
			t.row(c.Frontend, c.Winner.String(), joinStrings(c.Losers, ","))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(v.Pending) > 0 {
		fmt.Fprintf(w, "\nPENDING (%d): interfaces VPP does not have yet; tried again when VPP creates them\n", len(v.Pending))
		t := newTable(w, "INTERFACE", "SINCE", "WAITING")
		for _, p := range v.Pending {
			t.row(p.Name, p.Since.UTC().Format(time.RFC3339), orDash(p.Waits))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(v.PendingTables) > 0 {
		fmt.Fprintf(w, "\nPENDING TABLES (%d): FIB tables VPP does not have yet; their routes are added when VPP makes them\n", len(v.PendingTables))
		t := newTable(w, "VRF", "SINCE", "ROUTES WAITING")
		for _, p := range v.PendingTables {
			t.row(strconv.FormatUint(uint64(p.VRF), 10), p.Since.UTC().Format(time.RFC3339), orDash(strings.Join(p.Routes, "; ")))
		}
		return t.flush()
	}
	return nil
}
