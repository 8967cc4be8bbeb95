package cnat

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/bits"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	sr "contiv.dev/vpp/servicerenderer"
)

// pipeFake is a fakeVPP reached through a Pipeline: VPP runs each call
// when it arrives (Send), in order; its answer is read later (Recv).
type pipeFake struct {
	*fakeVPP
	sent int
}

func (p *pipeFake) Pipeline(context.Context) (Pipeline, error) { return &fakePipe{p: p}, nil }

type fakePipe struct {
	p       *pipeFake
	answers []answer
}

func (q *fakePipe) Send(op *Op) error {
	if !Pipelined(op) {
		q.p.t.Errorf("%s sent through the pipeline", op.Kind)
	}
	q.p.sent++
	ctx := context.Background()
	var a answer
	switch op.Kind {
	case OpDeleteTranslation:
		a.err = q.p.DeleteTranslation(ctx, op.ID)
	case OpUpdateTranslation:
		_, a.err = q.p.UpdateTranslation(ctx, op.Translation)
	case OpFeature:
		a.idx, a.err = q.p.EnableDisableFeature(ctx, op.Interface, op.Feature, op.Add)
	case OpSNATInterface:
		a.idx, a.err = q.p.AddDelSNATInterface(ctx, op.Interface, op.Table, op.Add)
	case OpRoute, OpVerdictRoute:
		a.err = q.p.AddDelFIBRoute(ctx, op.Route, op.Add)
	}
	q.answers = append(q.answers, a)
	return nil
}

type answer struct {
	idx uint32
	err error
}

func (q *fakePipe) Recv() (uint32, error) {
	if len(q.answers) == 0 {
		q.p.t.Error("Recv with nothing in flight")
		return 0, nil
	}
	a := q.answers[0]
	q.answers = q.answers[1:]
	return a.idx, a.err
}

func (q *fakePipe) Close() {}

// TestApplyPipelinesTranslations: with a Pipeliner VPP, a full apply
// sends its translation updates, its deletes by dumped id and the
// interfaces' features and tables through the pipeline, and the node-wide
// settings synchronously; VPP ends in the state
// a synchronous apply leaves, with the same failures; each apply logs one
// line counting its calls.
func TestApplyPipelinesTranslations(t *testing.T) {
	services := func() []*sr.ContivService {
		var out []*sr.ContivService
		for i := range 40 {
			s := web()
			s.ID.Name = fmt.Sprintf("web-%d", i)
			s.ClusterIPs = []netip.Addr{netip.AddrFrom4([4]byte{10, 96, 1, byte(i)})}
			s.ExternalIPs, s.Ports[0].NodePort = nil, 0
			out = append(out, s)
		}
		return out
	}
	stale := Translation{Key: key("10.96.9.9", 80, sr.TCP), Paths: []Path{path("10.1.1.11", 80)}}
	bad := key("10.96.1.7", 80, sr.TCP)
	run := func(v VPP, f *fakeVPP) (fakeState, []Failure, string) {
		f.addForeign(stale) // the renderer's (service CIDR), to delete
		f.failUpdate = map[Key]error{bad: fmt.Errorf("refused: %w", ErrInvalid)}
		var logs bytes.Buffer
		r, err := New(Params{Config: testConfig(), VPP: v, Log: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		_ = r.Resync(resyncData(services()...))
		if err := r.Apply(context.Background(), true); err != nil {
			t.Fatal(err)
		}
		return f.state(), r.Failures(), logs.String()
	}
	sf := newFake(t, allIfaces...)
	syncState, syncFailures, _ := run(sf, sf)
	pf := &pipeFake{fakeVPP: newFake(t, allIfaces...)}
	state, failures, logs := run(pf, pf.fakeVPP)
	if !reflect.DeepEqual(state, syncState) || !reflect.DeepEqual(failures, syncFailures) || len(failures) != 1 {
		t.Errorf("pipelined: %+v, failures %v\nsynchronous: %+v, failures %v", state, failures, syncState, syncFailures)
	}
	ifOps := 0
	for _, n := range allIfaces {
		ifOps += bits.OnesCount8(uint8(syncState.Features[n])) + bits.OnesCount8(uint8(syncState.Tables[n]))
	}
	// 40 updates, 1 delete by the dumped id, every route (the service
	// CIDR's drops and the ClusterIPs' verdicts).
	if want := 41 + ifOps + len(syncState.Routes); pf.sent != want {
		t.Errorf("%d calls pipelined, want %d", pf.sent, want)
	}
	line := ""
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `msg="cnat applied"`) {
			line = l
		}
	}
	for _, want := range []string{"full=true", "translationsAdded=39", "translationsRemoved=1", "invalid=1", "pipelined=true", "calls="} {
		if !strings.Contains(line, want) {
			t.Errorf("batch line %q lacks %s", line, want)
		}
	}
}
