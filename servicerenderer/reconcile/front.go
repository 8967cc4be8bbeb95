package reconcile

import (
	"errors"
	"sync"

	"contiv.dev/vpp/servicerenderer"
)

// Changes is a renderer's side of Front: each function records one change
// in the desired state, at a cost proportional to that change. They are
// called on the loop goroutine with the renderer's lock held, never with
// a nil service or snapshot.
type Changes struct {
	SetService    func(svc *servicerenderer.ContivService)
	DeleteService func(svc *servicerenderer.ContivService)
	SetInterface  func(name string, role servicerenderer.InterfaceRole)
	SetNode       func(node servicerenderer.LocalNode)
	Reset         func(data *servicerenderer.ResyncData)
}

// Front implements the change methods of servicerenderer.Renderer over a
// renderer's Changes: each takes the renderer's lock (the loop, their only
// caller, writes under it; readers take snapshots under it). A renderer
// embeds it.
type Front struct {
	mu                        sync.Locker
	c                         Changes
	errNilService, errNilData error
}

// NewFront makes the Front of the renderer named name (its errors say it)
// with lock mu, the renderer's.
func NewFront(name string, mu sync.Locker, c Changes) Front {
	return Front{mu: mu, c: c, errNilService: errors.New(name + ": nil service"),
		errNilData: errors.New(name + ": nil resync data")}
}

// AddService implements servicerenderer.Renderer.
func (f Front) AddService(svc *servicerenderer.ContivService) error {
	if svc == nil {
		return f.errNilService
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.c.SetService(svc)
	return nil
}

// UpdateService implements servicerenderer.Renderer: the service is
// matched with what it had by ID.
func (f Front) UpdateService(_, svc *servicerenderer.ContivService) error { return f.AddService(svc) }

// DeleteService implements servicerenderer.Renderer.
func (f Front) DeleteService(svc *servicerenderer.ContivService) error {
	if svc == nil {
		return f.errNilService
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.c.DeleteService(svc)
	return nil
}

// UpdateInterface implements servicerenderer.Renderer.
func (f Front) UpdateInterface(name string, role servicerenderer.InterfaceRole) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.c.SetInterface(name, role)
	return nil
}

// UpdateLocalNode implements servicerenderer.Renderer.
func (f Front) UpdateLocalNode(node servicerenderer.LocalNode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.c.SetNode(node)
	return nil
}

// Resync implements servicerenderer.Renderer: the desired state is rebuilt
// from the snapshot; the next apply is full.
func (f Front) Resync(data *servicerenderer.ResyncData) error {
	if data == nil {
		return f.errNilData
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.c.Reset(data)
	return nil
}
