package reconcile

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"contiv.dev/vpp/servicerenderer"
)

// changes is a fake renderer's Changes, recording each change and whether the lock
// was held for it.
type changes struct {
	mu  *sync.RWMutex
	log []string
}

func (c *changes) note(s string) {
	if c.mu.TryRLock() {
		c.mu.RUnlock()
		s += " unlocked"
	}
	c.log = append(c.log, s)
}

func (c *changes) SetService(svc *servicerenderer.ContivService)    { c.note("set " + svc.ID.Name) }
func (c *changes) DeleteService(svc *servicerenderer.ContivService) { c.note("delete " + svc.ID.Name) }
func (c *changes) SetInterface(name string, role servicerenderer.InterfaceRole) {
	c.note(fmt.Sprintf("interface %s %d", name, role))
}
func (c *changes) SetNode(node servicerenderer.LocalNode) { c.note("node " + node.Name) }
func (c *changes) Reset(data *servicerenderer.ResyncData) { c.note("reset") }

// Each change is made with the renderer's lock held; nil input is an
// error naming the renderer, and changes nothing.
func TestFront(t *testing.T) {
	var mu sync.RWMutex
	c := &changes{mu: &mu}
	f := NewFront("test", &mu, Changes{SetService: c.SetService, DeleteService: c.DeleteService,
		SetInterface: c.SetInterface, SetNode: c.SetNode, Reset: c.Reset})
	a := svc("a", 0)
	for _, err := range []error{
		f.AddService(a), f.UpdateService(nil, a), f.DeleteService(a),
		f.UpdateInterface("eth0", 1), f.UpdateLocalNode(servicerenderer.LocalNode{Name: "n"}),
		f.Resync(&servicerenderer.ResyncData{}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"set a", "set a", "delete a", "interface eth0 1", "node n", "reset"}
	if !slices.Equal(c.log, want) {
		t.Errorf("changes %v, want %v (each with the lock held)", c.log, want)
	}
	if err := f.AddService(nil); err == nil || err.Error() != "test: nil service" {
		t.Errorf("AddService(nil) = %v", err)
	}
	if err := f.DeleteService(nil); err == nil || err.Error() != "test: nil service" {
		t.Errorf("DeleteService(nil) = %v", err)
	}
	if err := f.Resync(nil); err == nil || err.Error() != "test: nil resync data" {
		t.Errorf("Resync(nil) = %v", err)
	}
	if len(c.log) != len(want) {
		t.Errorf("nil input changed something: %v", c.log[len(want):])
	}
}
