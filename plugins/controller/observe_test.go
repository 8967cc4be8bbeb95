package controller

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"contiv.dev/vpp/kubestate"
)

// noting is an observer that writes its hooks into a call log.
type noting struct {
	name string
	log  *callLog
}

func (n noting) ApplyStarting(full bool) { n.log.add("%s:starting:%t", n.name, full) }
func (n noting) Applied(full bool, err error) {
	n.log.add("%s:applied:%t:%v", n.name, full, err != nil)
}

// TestApplyObserversSurroundEveryApply: observers are told, in order,
// before and after every apply step, with whether it was full and whether
// an applier failed.
func TestApplyObserversSurroundEveryApply(t *testing.T) {
	log := &callLog{}
	app := &applier{log: log, fail: func(n int) error {
		if n == 2 {
			return errors.New("VPP said no")
		}
		return nil
	}}
	ctl := New(Params{Handlers: []Handler{newRecorder("rec", nil)}, Appliers: []Applier{app},
		ApplyObservers: []ApplyObserver{noting{"A", log}, noting{"B", log}}})
	start(t, ctl)
	ctl.Push(&ResyncEvent{Kind: ResyncStartup, State: &Snapshot{Objects: map[kubestate.Key]kubestate.Object{}}})
	eventually(t, "ready", ctl.Ready)
	ctl.Push(&ChangeEvent{Key: nsKey("a"), New: ns("a", "1")})
	eventually(t, "the change applied (and failed)", func() bool { return len(app.calls()) >= 2 })
	want := []string{
		"A:starting:true", "B:starting:true", "apply:true", "A:applied:true:false", "B:applied:true:false",
		"A:starting:false", "B:starting:false", "apply:false", "A:applied:false:true", "B:applied:false:true",
	}
	eventually(t, "the observers told", func() bool { return len(log.get()) >= len(want) })
	if got := log.get()[:len(want)]; !slices.Equal(got, want) {
		t.Errorf("calls\n%q\nwant\n%q", got, want)
	}
}

func TestObserveReturnsTheApplyError(t *testing.T) {
	log := &callLog{}
	boom := fmt.Errorf("boom")
	if err := Observe([]ApplyObserver{noting{"A", log}}, true, func() error { return boom }); err != boom {
		t.Errorf("err %v", err)
	}
	if got := log.get(); !slices.Equal(got, []string{"A:starting:true", "A:applied:true:true"}) {
		t.Errorf("calls %q", got)
	}
}
