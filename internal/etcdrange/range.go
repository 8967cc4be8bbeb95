package etcdrange

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// Range calls etcd's KV.Range over conn (a clientv3.Client's
// ActiveConnection, whose interceptors add the client's credentials) and
// decodes the response into a RangeResponse whose keys and values alias one
// buffer of their own: they stay valid as long as they are referenced. opts
// are added to the call's.
func Range(ctx context.Context, conn grpc.ClientConnInterface, req *etcdserverpb.RangeRequest, opts ...grpc.CallOption) (*RangeResponse, error) {
	resp := &RangeResponse{}
	opts = append([]grpc.CallOption{grpc.StaticMethod(), grpc.ForceCodecV2(codec{})}, opts...)
	if err := conn.Invoke(ctx, etcdserverpb.KV_Range_FullMethodName, req, resp, opts...); err != nil {
		return nil, err
	}
	return resp, nil
}

// codec is gRPC's proto codec but for a RangeResponse, which it decodes with
// UnmarshalVTUnsafe from one copy of the message. The copy is needed: the
// message arrives in several buffers (one per HTTP/2 frame read), which
// gRPC reuses after Unmarshal, and the generated code reads one slice.
type codec struct{}

// Name is the content subtype etcd's server expects ("proto").
func (codec) Name() string { return proto.Name }

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	return encoding.GetCodecV2(proto.Name).Marshal(v)
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	r, ok := v.(*RangeResponse)
	if !ok {
		return encoding.GetCodecV2(proto.Name).Unmarshal(data, v)
	}
	return r.Decode(data.Materialize())
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
