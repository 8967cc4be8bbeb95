package controller

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"contiv.dev/vpp/internal/etcd"
	"contiv.dev/vpp/internal/etcdtest"
)

// tamperMode is how a tampering proxy rewrites the watch responses that
// carry its poisoned key.
type tamperMode int32

const (
	tamperNone tamperMode = iota
	// tamperUnknownType gives the event type 7 (neither PUT nor DELETE).
	tamperUnknownType
	// tamperUndecodable sends bytes no protobuf decoder reads.
	tamperUndecodable
	// tamperWideType writes the event type PUT as a varint wider than 32
	// bits (protobuf reads it as the int32 it truncates to: PUT).
	tamperWideType
	// tamperRepeatedKV splits the event's KeyValue into two kv fields, the
	// key in the first and the value in the second (protobuf merges them).
	tamperRepeatedKV
)

// tamper is a gRPC proxy in front of an embedded etcd that passes every
// call's messages on as bytes, and rewrites the watch responses holding an
// event of its poisoned key as its mode says. With blockRange set it
// refuses every Range call (etcd's KV unreachable through it).
type tamper struct {
	key        []byte
	mode       atomic.Int32
	blockRange atomic.Bool
	// tampered counts the responses rewritten.
	tampered atomic.Int64

	conn *grpc.ClientConn
	srv  *grpc.Server
	ln   net.Listener
	wg   sync.WaitGroup
}

// startTamper serves a tampering proxy in front of srv; it stops when the
// test ends.
func startTamper(t *testing.T, srv *etcdtest.Server, key string) *tamper {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+strings.TrimPrefix(srv.Endpoint(), "http://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tamper{key: []byte(key), conn: conn, ln: ln}
	p.srv = grpc.NewServer(grpc.ForceServerCodecV2(frameCodec{}), grpc.UnknownServiceHandler(p.handle),
		// The agent's client pings every 10 s (internal/etcd), as etcd allows.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}))
	p.wg.Go(func() { _ = p.srv.Serve(ln) })
	t.Cleanup(func() {
		p.srv.Stop()
		p.wg.Wait()
		_ = conn.Close()
	})
	return p
}

// client is an agent's etcd client (internal/etcd.NewClient) of the proxy.
func (p *tamper) client(t *testing.T) *clientv3.Client {
	t.Helper()
	cli, err := etcd.NewClient(context.Background(), etcd.ClientParams{
		Endpoints: []string{"http://" + p.ln.Addr().String()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func (p *tamper) setMode(m tamperMode) { p.mode.Store(int32(m)) }

// handle passes one call on to etcd, message by message.
func (p *tamper) handle(_ any, ss grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(ss)
	if method == pb.KV_Range_FullMethodName && p.blockRange.Load() {
		return grpcstatus.Error(codes.Unavailable, "the test's proxy refuses Range calls")
	}
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	in, _ := metadata.FromIncomingContext(ctx)
	out := metadata.MD{}
	for _, k := range []string{"hasleader", "token"} { // what clientv3 sends
		if v := in.Get(k); len(v) > 0 {
			out.Set(k, v...)
		}
	}
	cs, err := p.conn.NewStream(metadata.NewOutgoingContext(ctx, out),
		&grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodecV2(frameCodec{}))
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		for {
			var f frame
			if err := ss.RecvMsg(&f); err != nil {
				_ = cs.CloseSend()
				return
			}
			if err := cs.SendMsg(&f); err != nil {
				return
			}
		}
	})
	for {
		var f frame
		if err := cs.RecvMsg(&f); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if method == pb.Watch_Watch_FullMethodName {
			f.b = p.rewrite(f.b)
		}
		if err := ss.SendMsg(&f); err != nil {
			return err
		}
	}
}

// rewrite is the watch response b as the mode says, when it holds an
// event of the poisoned key; else b.
func (p *tamper) rewrite(b []byte) []byte {
	mode := tamperMode(p.mode.Load())
	var r pb.WatchResponse
	if mode == tamperNone || proto.Unmarshal(b, &r) != nil {
		return b
	}
	i := slicesIndex(r.Events, func(ev *mvccpb.Event) bool { return bytes.Equal(ev.GetKv().GetKey(), p.key) })
	if i < 0 {
		return b
	}
	p.tampered.Add(1)
	switch mode {
	case tamperUnknownType:
		r.Events[i].Type = 7
		out, err := proto.Marshal(&r)
		if err != nil {
			panic(err)
		}
		return out
	case tamperUndecodable:
		return []byte{0x0a, 0x7f} // a header of 127 bytes, none sent
	}
	evs := r.Events
	r.Events = nil
	out, err := proto.Marshal(&r)
	if err != nil {
		panic(err)
	}
	for j, ev := range evs {
		var e []byte
		switch {
		case j == i && mode == tamperWideType:
			e = protowire.AppendTag(e, 1, protowire.VarintType)
			e = protowire.AppendVarint(e, uint64(ev.Type)|1<<32)
			e = appendKV(e, ev.Kv)
		case j == i && mode == tamperRepeatedKV:
			e = protowire.AppendTag(e, 1, protowire.VarintType)
			e = protowire.AppendVarint(e, uint64(ev.Type))
			e = appendKV(e, &mvccpb.KeyValue{Key: ev.Kv.Key, CreateRevision: ev.Kv.CreateRevision,
				ModRevision: ev.Kv.ModRevision, Version: ev.Kv.Version})
			e = appendKV(e, &mvccpb.KeyValue{Value: ev.Kv.Value})
		default:
			if e, err = proto.Marshal(ev); err != nil {
				panic(err)
			}
		}
		out = protowire.AppendTag(out, 11, protowire.BytesType)
		out = protowire.AppendBytes(out, e)
	}
	return out
}

// appendKV appends kv as an Event's kv field.
func appendKV(b []byte, kv *mvccpb.KeyValue) []byte {
	m, err := proto.Marshal(kv)
	if err != nil {
		panic(err)
	}
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

func slicesIndex[T any](s []T, f func(T) bool) int {
	for i, v := range s {
		if f(v) {
			return i
		}
	}
	return -1
}

// frame is one gRPC message as its bytes.
type frame struct{ b []byte }

// frameCodec passes messages on as the bytes received.
type frameCodec struct{}

func (frameCodec) Name() string { return "proto" }

func (frameCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(*frame).b)}, nil
}

func (frameCodec) Unmarshal(data mem.BufferSlice, v any) error {
	v.(*frame).b = data.Materialize()
	return nil
}
