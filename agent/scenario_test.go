package agent

// Scenario tests in text: testdata/scenarios/*.txt drive the whole agent
// (real etcd, the controller, NodeSync, IPAM, the service processor, a
// renderer and the simulated VPP) through a sequence of steps and hold it
// to expected VPP state, packet traces and connection counts.
//
// One suite for both renderers: every file runs under nat44, then under
// cnat (subtests TestScenarios/FILE/nat44 and /cnat), unless its config
// step names a renderer. A step is for every renderer unless its header is
// prefixed "nat44:" or "cnat:" ("-- cnat: expect-cut 0 --"): where the two
// agree an expectation is written once; where they differ, once per
// renderer. expect reads NAT44-ED's state and runs under nat44 only,
// expect-cnat under cnat only.
//
// File format (txtar-like). Text before the first step is a free-form
// description. Each step starts with a header line "-- [RENDERER:] VERB
// ARGS --" and runs to the next header:
//
//	-- config --             (first step only) the agent's configuration
//	                         file, YAML as deploy/examples/agent.yaml; the
//	                         test's etcd, node name, directories and
//	                         backoffs are set over it
//	-- apply --              Kubernetes YAML documents, converted by
//	                         kubestate.LoadYAML and written into etcd with
//	                         kubestate.Writer (as contivctl load does)
//	-- delete --             one object a line: "KIND NAMESPACE/NAME", or
//	                         "KIND NAME" for cluster-scoped kinds (Service,
//	                         EndpointSlice, Pod, Node, Namespace)
//	-- resync --             a periodic full resync (what the controller runs
//	                         every controller.resyncInterval)
//	-- restart-agent --      stop the agent, start a new one against the
//	                         same etcd and the same simulated VPP
//	-- restart-vpp [interfaces-after DURATION] --
//	                         restart the simulated VPP: its NAT44 state is
//	                         lost; its interfaces come back at once, or
//	                         DURATION later (as VPP's startup configuration
//	                         and the CNI re-create them)
//	-- delete-interface NAME --, -- recreate-interface NAME --,
//	-- create-interface NAME [ADDRESS/LEN] --
//	                         the CNI or an operator deletes, re-creates
//	                         (same name, the index VPP gives) or creates a
//	                         VPP interface
//	-- connect NAME DST:PORT/PROTO [from SRC] [via IFACE] [count N] --
//	                         open N (default 1) connections from distinct
//	                         source ports through the simulated VPP's NAT
//	                         sessions (sim.OpenSession, or OpenCnatSession
//	                         with renderer: cnat; backends picked by
//	                         probability, seeded), kept as group NAME
//	-- expect-sessions --    per connection group, sorted: "NAME alive=A/N"
//	                         then "NAME -> IP:PORT alive=K" per backend the
//	                         group was opened to
//	-- expect-cut N --       the previous action step cut exactly N sessions
//	                         (what VPP 25.02 deletes, FACTS §3)
//	-- expect-ready --       the agent is (eventually) ready
//	-- expect-not-ready --   the agent is (eventually) not ready, and each
//	                         body line is part of one of its reasons
//	-- faults RATE --        from now on the simulated VPP fails RATE (0 to 1)
//	                         of the state-changing calls with a transient
//	                         error; healing must converge regardless, and
//	                         some call must fail before the next faults step
//	                         or the end (else the steps under it prove
//	                         nothing)
//	-- expect [KIND...] --   the simulated VPP's NAT44 dump
//	                         (sim.Snapshot().Lines()), only the lines of the
//	                         given kinds (global, pool, interface, identity,
//	                         mapping) when kinds are named
//	-- trace DST:PORT/PROTO [from SRC] [via IFACE] --
//	                         what the simulated VPP's oracle for the
//	                         renderer in use answers for one packet
//	                         (default source 192.168.56.200 arriving on the
//	                         main NIC GigabitEthernet0/8/0), in words both
//	                         renderers share: the line "translated" (nat44:
//	                         "affinity=N" after it, cnat: "maglev") then
//	                         one line per backend "-> IP:PORT p=SHARE
//	                         [src=S]" (src: the source the backend sees
//	                         when it is rewritten), or "not translated"
//	                         (cnat: "src=S" when its SNAT policy rewrites
//	                         the source), or "dropped: REASON", or (nat44)
//	                         "leaked out of IFACE source-NATed to IP"; a
//	                         backend line ends with "reply dropped" when
//	                         its reply does not make it back (sim.VPP.Trace
//	                         follows both directions) or (cnat) "dropped:
//	                         REASON" (sim.VPP.CnatTrace)
//	-- expect-cnat [KIND...] --
//	                         the simulated VPP's cnat state (renderer: cnat):
//	                         its snat line ("ip6=" only when an IPv6 SNAT
//	                         address is set), an interface line per
//	                         interface with cnat features or SNAT tables
//	                         (each feature with its count, e.g. in6=1 for
//	                         cnat-input-ip6), one translation line per
//	                         translation, one route line per drop route
//	                         ("route PREFIX vrf=N drop"); the kinds snat,
//	                         interface, translation and route select
//	                         lines, none means snat and translation
//	-- expect-reported --    what the agent reports as left out or refused:
//	                         "skipped KIND NAMESPACE/NAME [port=P] REASON[: DETAIL]"
//	                         (service processor), "conflict FRONTEND
//	                         winner=ID losers=ID,..." and "failure OBJECT
//	                         OP: REASON" (the NAT44 or cnat renderer)
//	-- expect-writes N --    the previous apply, delete or restart step made
//	                         exactly N state-changing calls to VPP (N-M: from
//	                         N to M, where timing decides; say why)
//
// Every action step (apply, delete, restart-*) is followed by a wait until
// the agent has taken in the change and the simulated VPP's state has
// stopped changing (see harness.waitQuiet); call counters are reset when
// the step starts. Expectations are then compared, after waiting for them
// to hold within a deadline. In expect and trace bodies, leading lines
// starting with "#" are comments; blank lines are ignored.
//
// go test ./agent -run TestScenarios -update rewrites the expectations
// (bodies, keeping their comments, and the counts of expect-cut and
// expect-writes) from what the agent did; a step for every renderer that
// the second renderer's run finds different is split in two qualified
// steps (comments copied: reword them). The goldens are the
// specification: read every changed line before committing.

import (
	"flag"
	"fmt"
	"hash/fnv"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"contiv.dev/vpp/contivconf"
	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
	"contiv.dev/vpp/plugins/controller"
	"contiv.dev/vpp/plugins/vpp/sim"
)

var update = flag.Bool("update", false, "rewrite the expected blocks of testdata/scenarios from the agent's results")

// Defaults of a trace step.
const (
	traceSource  = "192.168.56.200"
	traceIngress = simulatedMainNIC
	// expectLimit bounds the wait for an expectation to hold once the
	// state is quiet.
	expectLimit = 10 * time.Second
)

// step is one step of a scenario file.
type step struct {
	line int      // of the header, counted from 1
	only string   // the renderer the step is for ("nat44:" prefix), or "" for every one
	verb string   // apply, delete, restart-agent, ...
	args []string // the rest of the header
	body string   // the raw text up to the next header
	// seen is the renderer whose run last checked or rewrote the body
	// (-update: an unqualified expectation two renderers disagree on must
	// be split).
	seen string
}

// scenario is a parsed scenario file.
type scenario struct {
	preamble string
	steps    []*step
	// base is the configuration (the config step's, or the defaults);
	// renderers are those the scenario runs under, in order.
	base      contivconf.Config
	renderers []string
	// changed is set when an expectation was rewritten (-update).
	changed bool
}

var headerRE = regexp.MustCompile(`^-- (.+) --$`)

func parseScenario(text string) (*scenario, error) {
	sc := &scenario{}
	var cur *step
	var body strings.Builder
	flush := func() {
		if cur != nil {
			cur.body = body.String()
		} else {
			sc.preamble = body.String()
		}
		body.Reset()
	}
	for i, line := range strings.SplitAfter(text, "\n") {
		if m := headerRE.FindStringSubmatch(strings.TrimRight(line, "\n")); m != nil {
			flush()
			f := strings.Fields(m[1])
			cur = &step{line: i + 1}
			if r, ok := strings.CutSuffix(f[0], ":"); ok && len(f) > 1 {
				cur.only, f = r, f[1:]
			}
			cur.verb, cur.args = f[0], f[1:]
			sc.steps = append(sc.steps, cur)
			continue
		}
		body.WriteString(line)
	}
	flush()
	if len(sc.steps) == 0 {
		return nil, fmt.Errorf("no steps")
	}
	return sc, nil
}

// format writes the scenario back, header lines included.
func (sc *scenario) format() string {
	var b strings.Builder
	b.WriteString(sc.preamble)
	for _, s := range sc.steps {
		head := append([]string{s.verb}, s.args...)
		if s.only != "" {
			head = append([]string{s.only + ":"}, head...)
		}
		fmt.Fprintf(&b, "-- %s --\n", strings.Join(head, " "))
		b.WriteString(s.body)
	}
	return b.String()
}

// splitBody separates an expectation's leading comment lines from the
// expected lines (blank lines dropped).
func splitBody(body string) (comments, want []string) {
	inComments := true
	for _, l := range strings.Split(body, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case inComments && strings.HasPrefix(t, "#"):
			comments = append(comments, l)
		case t == "":
		default:
			inComments = false
			want = append(want, t)
		}
	}
	return comments, want
}

// setBody replaces an expectation's lines, keeping its comments; a blank
// line separates it from the next step.
func (s *step) setBody(lines []string) {
	comments, _ := splitBody(s.body)
	s.body = strings.Join(append(comments, lines...), "\n") + "\n\n"
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			t.Parallel()
			sc := readScenario(t, file)
			for _, rd := range sc.renderers {
				t.Run(rd, func(t *testing.T) { runScenario(t, file, sc, rd) })
			}
			if *update && sc.changed {
				if err := os.WriteFile(file, []byte(sc.format()), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s rewritten", file)
			}
		})
	}
}

// renderers are the renderers a scenario runs under when its config does
// not name one.
var renderers = []string{contivconf.RendererNAT44, contivconf.RendererCNAT}

// rendererKey finds a top-level "renderer:" in a config step.
var rendererKey = regexp.MustCompile(`(?m)^renderer:`)

// readScenario parses a scenario file and works out the renderers it runs
// under: the one its config names, else every one.
func readScenario(t *testing.T, file string) *scenario {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := parseScenario(string(text))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	sc.base = contivconf.Defaults()
	sc.renderers = renderers
	if first := sc.steps[0]; first.verb == "config" {
		if sc.base, err = contivconf.Parse([]byte(first.body)); err != nil {
			t.Fatalf("%s:%d (config): %v", file, first.line, err)
		}
		if rendererKey.MatchString(first.body) {
			sc.renderers = []string{sc.base.Renderer}
		}
	}
	for i, s := range sc.steps {
		switch {
		case s.verb == "config" && i != 0:
			t.Fatalf("%s:%d: config must be the first step", file, s.line)
		case s.only != "" && !slices.Contains(sc.renderers, s.only):
			t.Fatalf("%s:%d: %q: the scenario runs under %v only", file, s.line, s.only+":", sc.renderers)
		case s.verb == "expect" && s.only != "" && s.only != contivconf.RendererNAT44,
			s.verb == "expect-cnat" && s.only != "" && s.only != contivconf.RendererCNAT:
			t.Fatalf("%s:%d: %s is not for renderer %s", file, s.line, s.verb, s.only)
		}
	}
	return sc
}

// runScenario runs a scenario's steps under one renderer: those for every
// renderer and those qualified with its name.
func runScenario(t *testing.T, file string, sc *scenario, renderer string) {
	srv := etcdtest.Start(t)
	base := sc.base
	base.Renderer = renderer
	cfg := testConfigFrom(t, base, srv.Endpoint(), t.TempDir())
	r := &runner{t: t, file: file, sc: sc, renderer: renderer, h: newHarness(t, srv.Endpoint(), cfg)}
	defer r.h.close()
	r.h.waitQuiet()
	// Indexed: -update may insert a step after the current one.
	for r.at = 0; r.at < len(sc.steps); r.at++ {
		if s := sc.steps[r.at]; s.verb != "config" && r.runs(s) {
			r.run(s)
		}
	}
	r.endFaults()
}

// runs tells whether a step is for the renderer in use: expect reads
// NAT44's state and expect-cnat cnat's; a qualified step is for its
// renderer only.
func (r *runner) runs(s *step) bool {
	switch {
	case s.only != "":
		return s.only == r.renderer
	case s.verb == "expect":
		return r.renderer == contivconf.RendererNAT44
	case s.verb == "expect-cnat":
		return r.renderer == contivconf.RendererCNAT
	}
	return true
}

// runner runs one scenario under one renderer.
type runner struct {
	t        *testing.T
	file     string
	sc       *scenario
	at       int // the index of the step running
	renderer string
	h        *harness
	// faults is the faults step in force, if any.
	faults *step
	// cutBase is the simulated VPP's count of cut sessions when the last
	// action step started.
	cutBase uint64
	// conns are the connection groups, by name.
	conns map[string][]conn
}

// conn is one connection a connect step opened: through NAT44-ED's
// sessions, or cnat's when the agent runs the cnat renderer.
type conn struct {
	id      uint64
	backend netip.AddrPort
}

// endFaults checks that the faults step in force, if any, made some call
// fail: otherwise the steps under it proved nothing about healing.
func (r *runner) endFaults() {
	r.t.Helper()
	if r.faults == nil {
		return
	}
	n := r.h.injected.Swap(0)
	if rate, _ := oneFloat(r.faults.args); rate > 0 {
		if n == 0 {
			r.fatalf(r.faults, "no call failed while it was in force")
		}
		r.t.Logf("%s:%d: %d calls failed by injection", r.file, r.faults.line, n)
	}
	r.faults = nil
}

func (r *runner) fatalf(s *step, format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s:%d (%s): %s", r.file, s.line, s.verb, fmt.Sprintf(format, args...))
}

func (r *runner) run(s *step) {
	r.t.Helper()
	h := r.h
	noBody := func() {
		if strings.TrimSpace(s.body) != "" {
			r.fatalf(s, "takes no body")
		}
	}
	noArgs := func() {
		if len(s.args) != 0 {
			r.fatalf(s, "takes no arguments")
		}
	}
	action := func() {
		h.vpp.ResetCalls()
		r.cutBase = r.cut()
	}
	switch s.verb {
	case "apply":
		objs, err := kubestate.LoadYAML(strings.NewReader(s.body))
		if err != nil || len(objs) == 0 {
			r.fatalf(s, "YAML: %d objects, %v", len(objs), err)
		}
		ops := make([]kubestate.Op, len(objs))
		for i, o := range objs {
			ops[i] = kubestate.PutOp(o)
		}
		action()
		h.apply(ops)
		h.waitQuiet()
	case "delete":
		ops, err := parseDeletes(s.body)
		if err != nil {
			r.fatalf(s, "%v", err)
		}
		action()
		h.apply(ops)
		h.waitQuiet()
	case "resync":
		noBody()
		noArgs()
		action()
		ctl := h.agent.Controller()
		before := ctl.Status().Resyncs
		ctl.Push(&controller.ResyncEvent{Kind: controller.ResyncPeriodic})
		if !h.eventually(settleLimit, func() bool { return ctl.Status().Resyncs > before }) {
			r.fatalf(s, "the resync did not run")
		}
	case "restart-agent":
		noBody()
		noArgs()
		r.cutBase = r.cut()
		h.restartAgent()
		h.waitQuiet()
	case "restart-vpp":
		noBody()
		var o sim.RestartOptions
		switch {
		case len(s.args) == 2 && s.args[0] == "interfaces-after":
			d, err := time.ParseDuration(s.args[1])
			if err != nil {
				r.fatalf(s, "%v", err)
			}
			o.InterfacesAfter = d
		case len(s.args) != 0:
			r.fatalf(s, "want no argument or interfaces-after DURATION")
		}
		action()
		h.vpp.RestartWith(o)
		h.waitQuiet()
	case "delete-interface", "recreate-interface", "create-interface":
		noBody()
		r.interfaceStep(s)
		h.waitQuiet()
	case "connect":
		noBody()
		r.connect(s)
	case "expect-sessions":
		noArgs()
		r.expect(s, r.sessionLines)
	case "expect-cut":
		noBody()
		n, err := strconv.ParseUint(strings.Join(s.args, " "), 10, 64)
		if err != nil {
			r.fatalf(s, "want a number of sessions: %v", s.args)
		}
		got := r.cut() - r.cutBase
		if *update {
			r.rewrite(s, got != n, func(s *step) { s.args = []string{strconv.FormatUint(got, 10)} })
		} else if got != n {
			r.t.Errorf("%s:%d (%s): %d sessions cut, want %d", r.file, s.line, s.verb, got, n)
		}
	case "expect-ready":
		noArgs()
		noBody()
		if !h.eventually(expectLimit, h.agent.Ready) {
			r.fatalf(s, "not ready: %v", h.agent.notReady())
		}
	case "expect-not-ready":
		noArgs()
		_, want := splitBody(s.body)
		holds := func() bool {
			why := strings.Join(h.agent.notReady(), "\n")
			if why == "" {
				return false
			}
			for _, w := range want {
				if !strings.Contains(why, w) {
					return false
				}
			}
			return true
		}
		deadline := time.Now().Add(expectLimit)
		for !holds() {
			if time.Now().After(deadline) {
				r.fatalf(s, "reasons %q lack %q", h.agent.notReady(), want)
			}
			time.Sleep(pollEvery)
		}
	case "faults":
		noBody()
		rate, err := oneFloat(s.args)
		if err != nil || rate < 0 || rate > 1 {
			r.fatalf(s, "want one rate from 0 to 1: %v", s.args)
		}
		r.endFaults()
		fh := fnv.New64a()
		fh.Write([]byte(r.file))
		h.setFaults(rate, fh.Sum64())
		r.faults = s
	case "expect-writes":
		noBody()
		lo, hi, err := writesRange(strings.Join(s.args, " "))
		if err != nil {
			r.fatalf(s, "want a number of writes, or a range N-M: %v", s.args)
		}
		got := h.vpp.Writes()
		if *update {
			r.rewrite(s, got < lo || got > hi, func(s *step) { s.args = []string{strconv.Itoa(got)} })
		} else if got < lo || got > hi {
			// Later steps still mean something: go on.
			r.t.Errorf("%s:%d (%s): %d writes, want %s: %v", r.file, s.line, s.verb, got, strings.Join(s.args, " "), h.vpp.CallCounts())
		}
	case "expect":
		kinds := map[string]bool{}
		for _, k := range s.args {
			if !slices.Contains([]string{"global", "pool", "interface", "identity", "route", "mapping"}, k) {
				r.fatalf(s, "unknown line kind %q", k)
			}
			kinds[k] = true
		}
		r.expect(s, func() []string { return filterLines(h.lines(), kinds) })
	case "expect-cnat":
		kinds := map[string]bool{}
		for _, k := range s.args {
			if !slices.Contains([]string{"snat", "interface", "translation", "route"}, k) {
				r.fatalf(s, "unknown line kind %q", k)
			}
			kinds[k] = true
		}
		if len(kinds) == 0 {
			kinds = map[string]bool{"snat": true, "translation": true}
		}
		r.expect(s, func() []string { return filterLines(r.cnatLines(), kinds) })
	case "expect-reported":
		noArgs()
		r.expect(s, func() []string { return reported(h.agent) })
	case "trace":
		p, err := parseTrace(s.args)
		if err != nil {
			r.fatalf(s, "%v", err)
		}
		r.expect(s, func() []string {
			if r.cnatRenderer() {
				return cnatTraceLines(h.vpp.CnatTrace(p), p, h.vpp.CnatTranslations())
			}
			return traceLines(h.vpp.Trace(p), p)
		})
	default:
		r.fatalf(s, "unknown step")
	}
}

// expect holds the step's expected lines to what got returns once quiet.
func (r *runner) expect(s *step, read func() []string) {
	r.t.Helper()
	_, want := splitBody(s.body)
	// Compared as the body is read: trimmed, blank lines dropped.
	got := func() []string {
		_, lines := splitBody(strings.Join(read(), "\n"))
		return lines
	}
	if *update {
		r.h.waitQuiet()
		lines := got()
		r.rewrite(s, !slices.Equal(lines, want), func(s *step) { s.setBody(lines) })
		return
	}
	if r.h.eventually(expectLimit, func() bool { return slices.Equal(got(), want) }) {
		return
	}
	r.fatalf(s, "mismatch:\n%s", diffLines(want, got()))
}

// rewrite makes a step say what this run got (-update) when it differs:
// set rewrites a step. A step for every renderer that another renderer's
// run found right as it was is split in two: it becomes that renderer's,
// and a copy rewritten for this one follows it.
func (r *runner) rewrite(s *step, differs bool, set func(*step)) {
	r.t.Helper()
	switch {
	case !differs:
		s.seen = r.renderer
	case s.only == "" && s.seen != "" && s.seen != r.renderer:
		own := *s
		own.only = r.renderer
		set(&own)
		s.only = s.seen
		r.sc.steps = slices.Insert(r.sc.steps, r.at+1, &own)
		r.t.Logf("%s:%d (%s): %s and %s differ: split in two", r.file, s.line, s.verb, s.only, r.renderer)
	default:
		set(s)
		s.seen = r.renderer
	}
	r.sc.changed = r.sc.changed || differs
}

// parseDeletes reads "KIND NAMESPACE/NAME" lines into delete operations.
func parseDeletes(body string) ([]kubestate.Op, error) {
	kinds := map[string]kubestate.Resource{
		"Service": kubestate.ResService, "EndpointSlice": kubestate.ResEndpointSlice, "Pod": kubestate.ResPod,
		"Node": kubestate.ResNode, "Namespace": kubestate.ResNamespace,
	}
	var ops []kubestate.Op
	for l := range strings.SplitSeq(body, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		res, ok := kinds[f[0]]
		if len(f) != 2 || !ok {
			return nil, fmt.Errorf("want \"KIND NAMESPACE/NAME\" with a kind of %v: %q", slices.Sorted(maps.Keys(kinds)), l)
		}
		k := kubestate.Key{Resource: res, Name: f[1]}
		if res.Namespaced() {
			ns, name, ok := strings.Cut(f[1], "/")
			if !ok {
				return nil, fmt.Errorf("%s needs NAMESPACE/NAME: %q", f[0], l)
			}
			k.Namespace, k.Name = ns, name
		}
		ops = append(ops, kubestate.DeleteOp(k))
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("nothing to delete")
	}
	return ops, nil
}

func oneFloat(args []string) (float64, error) {
	if len(args) != 1 {
		return 0, fmt.Errorf("want one number")
	}
	return strconv.ParseFloat(args[0], 64)
}

// parseTrace reads "DST:PORT/PROTO [from SRC] [via IFACE]".
func parseTrace(args []string) (sim.Packet, error) {
	p := sim.Packet{Src: netip.MustParseAddr(traceSource), Ingress: traceIngress}
	if len(args) == 0 {
		return p, fmt.Errorf("want DST:PORT/PROTO")
	}
	dst, proto, ok := strings.Cut(args[0], "/")
	if !ok {
		return p, fmt.Errorf("%q: want DST:PORT/PROTO", args[0])
	}
	ap, err := netip.ParseAddrPort(dst)
	if err != nil {
		return p, fmt.Errorf("%q: %w", args[0], err)
	}
	p.Dst, p.DstPort = ap.Addr(), ap.Port()
	switch strings.ToUpper(proto) {
	case "TCP":
		p.Proto = sim.TCP
	case "UDP":
		p.Proto = sim.UDP
	default:
		return p, fmt.Errorf("%q: protocol TCP or UDP", args[0])
	}
	rest := args[1:]
	for len(rest) >= 2 {
		switch rest[0] {
		case "from":
			if p.Src, err = netip.ParseAddr(rest[1]); err != nil {
				return p, err
			}
		case "via":
			p.Ingress = rest[1]
		default:
			return p, fmt.Errorf("unknown %q: want [from SRC] [via IFACE]", rest[0])
		}
		rest = rest[2:]
	}
	if len(rest) != 0 {
		return p, fmt.Errorf("dangling %q", rest)
	}
	return p, nil
}

// writesRange parses expect-writes' argument: N, or N-M where the count
// depends on timing the scenario cannot fix (its comment says why).
func writesRange(arg string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(arg, "-")
	if lo, err = strconv.Atoi(a); err != nil || !isRange {
		return lo, lo, err
	}
	if hi, err = strconv.Atoi(b); err == nil && hi < lo {
		err = fmt.Errorf("empty range %s", arg)
	}
	return lo, hi, err
}
