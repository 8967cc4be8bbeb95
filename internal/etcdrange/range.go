package etcdrange

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// Page is one answer of etcd's KV.Range: its keys and values are slices
// of one buffer, taken from gRPC's buffer pool (or gRPC's own buffer when
// the message came in one), until Release.
type Page struct {
	*RangeResponse
	buf mem.Buffer
}

// Release gives the page's buffer back to gRPC's pool: nothing of its keys
// and values may be used after. A page not released is left to the
// garbage collector.
func (p *Page) Release() {
	if p.buf != nil {
		p.buf.Free()
		p.buf = nil
	}
}

// Range calls etcd's KV.Range over conn (a clientv3.Client's
// ActiveConnection, whose interceptors add the client's credentials) and
// decodes the response with the generated UnmarshalVTUnsafe. opts are added
// to the call's.
// bufs, when not nil, holds the page's buffer (else gRPC's pool).
func Range(ctx context.Context, conn grpc.ClientConnInterface, req *etcdserverpb.RangeRequest, bufs *Buffers, opts ...grpc.CallOption) (*Page, error) {
	p := &Page{}
	var pool mem.BufferPool = bufs
	if bufs == nil {
		pool = mem.DefaultBufferPool()
	}
	opts = append([]grpc.CallOption{grpc.StaticMethod(), grpc.ForceCodecV2(codec{pool})}, opts...)
	if err := conn.Invoke(ctx, etcdserverpb.KV_Range_FullMethodName, req, p, opts...); err != nil {
		p.Release()
		return nil, err
	}
	return p, nil
}

// codec is gRPC's proto codec but for a Page, which it decodes with
// UnmarshalVTUnsafe from the message gathered into one buffer of gRPC's
// pool (as gRPC's codec gathers it): the message arrives in several
// buffers (one per HTTP/2 frame read), which gRPC reuses after Unmarshal,
// and the generated code reads one slice.
type codec struct{ pool mem.BufferPool }

// Name is the content subtype etcd's server expects ("proto").
func (codec) Name() string { return proto.Name }

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	return encoding.GetCodecV2(proto.Name).Marshal(v)
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	p, ok := v.(*Page)
	if !ok {
		return encoding.GetCodecV2(proto.Name).Unmarshal(data, v)
	}
	p.Release()
	p.buf = data.MaterializeToBuffer(c.pool)
	p.RangeResponse = &RangeResponse{}
	return p.Decode(p.buf.ReadOnlyData())
}

// Decode decodes a RangeResponse from b, which its keys and values then
// alias: b must not change while they are in use. Each key and value is
// capped at its length, so that appending to one copies it instead of
// writing over the next field in b.
func (r *RangeResponse) Decode(b []byte) error {
	r.Reset()
	if err := r.UnmarshalVTUnsafe(b); err != nil {
		return fmt.Errorf("decode etcd's RangeResponse: %w", err)
	}
	for _, kv := range r.Kvs {
		kv.Key = kv.Key[:len(kv.Key):len(kv.Key)]
		kv.Value = kv.Value[:len(kv.Value):len(kv.Value)]
	}
	return nil
}

// Buffers keeps the buffers of a listing's pages for its next pages (a
// mem.BufferPool). A page of thousands of keys is megabytes, past the
// largest size gRPC's pool keeps (1 MiB), so gRPC would make (and zero) a
// new buffer for every page: at the W(50000) start, ~100 MB of memory
// touched for the first time, page faults that cost more than the copy.
// A listing's pages come one after another and each is released once
// decoded, so a few buffers, made with room for the larger pages that
// follow, serve all of them. Safe for concurrent use.
type Buffers struct {
	mu   sync.Mutex
	free []*[]byte
}

// keepBuffers is how many released buffers Buffers keeps: the page being
// decoded, the one read meanwhile and the one waiting between them.
const keepBuffers = 3

// Get returns a buffer of n bytes: a kept one large enough, or a new one
// with room for a page half as large again.
func (p *Buffers) Get(n int) *[]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, b := range p.free {
		if cap(*b) >= n {
			p.free = slices.Delete(p.free, i, i+1)
			*b = (*b)[:n]
			return b
		}
	}
	b := make([]byte, n, n+n/2)
	return &b
}

// Put keeps b for a later page, in place of the smallest kept buffer when
// keepBuffers are kept already.
func (p *Buffers) Put(b *[]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < keepBuffers {
		p.free = append(p.free, b)
		return
	}
	small := 0
	for i, f := range p.free {
		if cap(*f) < cap(*p.free[small]) {
			small = i
		}
	}
	if cap(*b) > cap(*p.free[small]) {
		p.free[small] = b
	}
}
