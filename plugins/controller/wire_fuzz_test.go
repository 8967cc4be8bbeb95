package controller

import (
	"bytes"
	"errors"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// FuzzWatchResponseParse: the watcher's decoder of the bytes gRPC received
// never panics, refuses what it cannot read with errWire, and reads every
// message etcd's own protobuf code accepts as that code does (an event
// type beyond PUT and DELETE aside: refused).
func FuzzWatchResponseParse(f *testing.F) {
	for _, m := range []*pb.WatchResponse{
		{Header: &pb.ResponseHeader{Revision: 42, ClusterId: 7}, WatchId: 5, Events: []*mvccpb.Event{
			{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte("/a"), Value: []byte("v1"), ModRevision: 41, Lease: 3},
				PrevKv: &mvccpb.KeyValue{Key: []byte("/a")}},
			{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte("/b"), ModRevision: 42}}}},
		{Header: &pb.ResponseHeader{Revision: 9}, Created: true},
		{Header: &pb.ResponseHeader{Revision: 9}, WatchId: -1},
		{WatchId: 2, Canceled: true, CompactRevision: 40, CancelReason: "compacted", Fragment: true},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// Issue 37: an event whose KeyValue comes in two kv fields (protobuf
	// merges them), and an event type written as a varint wider than 32
	// bits (protobuf reads the int32 it truncates to: PUT).
	ev := protowire.AppendTag(nil, 1, protowire.VarintType)
	ev = protowire.AppendVarint(ev, 0)
	for _, kv := range []*mvccpb.KeyValue{{Key: []byte("/a"), ModRevision: 41}, {Value: []byte("v1")}} {
		m, _ := proto.Marshal(kv)
		ev = protowire.AppendBytes(protowire.AppendTag(ev, 2, protowire.BytesType), m)
	}
	f.Add(protowire.AppendBytes(protowire.AppendTag(nil, 11, protowire.BytesType), ev))
	kv, _ := proto.Marshal(&mvccpb.KeyValue{Key: []byte("/a"), Value: []byte("v1"), ModRevision: 41})
	wide := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1<<32)
	wide = protowire.AppendBytes(protowire.AppendTag(wide, 2, protowire.BytesType), kv)
	f.Add(protowire.AppendBytes(protowire.AppendTag(nil, 11, protowire.BytesType), wide))
	f.Fuzz(func(t *testing.T, b []byte) {
		var got watchResponse
		err := got.parse(b)
		if err != nil && !errors.Is(err, errWire) {
			t.Fatalf("error %v is not errWire", err)
		}
		var want pb.WatchResponse
		if proto.Unmarshal(b, &want) != nil {
			return // etcd's code refuses it too (or reads what the watcher skips)
		}
		for _, ev := range want.Events {
			if ev.Type != mvccpb.PUT && ev.Type != mvccpb.DELETE {
				if err == nil {
					t.Fatalf("event type %d accepted", ev.Type)
				}
				return
			}
		}
		if err != nil {
			t.Fatalf("etcd's code reads %v; parse: %v", &want, err)
		}
		if got.revision != want.GetHeader().GetRevision() || got.watchID != want.WatchId || got.created != want.Created ||
			got.canceled != want.Canceled || got.compactRevision != want.CompactRevision || got.cancelReason != want.CancelReason ||
			len(got.events) != len(want.Events) {
			t.Fatalf("parsed %+v, etcd's code %v", got, &want)
		}
		for i, ev := range want.Events {
			g := got.events[i]
			if g.del != (ev.Type == mvccpb.DELETE) || !bytes.Equal(g.key, ev.GetKv().GetKey()) ||
				!bytes.Equal(g.value, ev.GetKv().GetValue()) || g.modRevision != ev.GetKv().GetModRevision() {
				t.Fatalf("event %d: parsed %+v, etcd's code %v", i, g, ev)
			}
		}
	})
}

// FuzzRangeResponseParse: the listing's decoder of a page's bytes never
// panics, refuses with errWire, and reads every message etcd's protobuf
// code accepts as that code does.
func FuzzRangeResponseParse(f *testing.F) {
	for _, m := range []*pb.RangeResponse{
		{Header: &pb.ResponseHeader{ClusterId: 7, Revision: 42}, More: true, Count: 1234, Kvs: []*mvccpb.KeyValue{
			{Key: []byte("/a"), Value: []byte("v1"), ModRevision: 41, CreateRevision: 2, Version: 9, Lease: 11},
			{Key: []byte("/b"), ModRevision: 40}}},
		{Header: &pb.ResponseHeader{Revision: 9}, Count: 0},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got rangeResponse
		err := got.parse(b)
		if err != nil && !errors.Is(err, errWire) {
			t.Fatalf("error %v is not errWire", err)
		}
		var want pb.RangeResponse
		if proto.Unmarshal(b, &want) != nil {
			return
		}
		if err != nil {
			t.Fatalf("etcd's code reads %v; parse: %v", &want, err)
		}
		if got.revision != want.GetHeader().GetRevision() || got.clusterID != want.GetHeader().GetClusterId() ||
			got.more != want.More || got.count != want.Count || len(got.kvs) != len(want.Kvs) {
			t.Fatalf("parsed %+v, etcd's code %v", got, &want)
		}
		for i, kv := range want.Kvs {
			g := got.kvs[i]
			if !bytes.Equal(g.key, kv.Key) || !bytes.Equal(g.value, kv.Value) || g.modRevision != kv.ModRevision {
				t.Fatalf("key %d: parsed %+v, etcd's code %v", i, g, kv)
			}
		}
	})
}
