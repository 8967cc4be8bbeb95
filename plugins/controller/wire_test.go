package controller

import (
	"errors"
	"reflect"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

// TestWatchResponseParse: a response marshalled by etcd's own protobuf
// code decodes to what the watcher reads, fields it does not read (the
// header's other fields, a previous value, a lease, the fragment flag)
// skipped; a truncated one is refused.
func TestWatchResponseParse(t *testing.T) {
	in := &pb.WatchResponse{
		Header:  &pb.ResponseHeader{ClusterId: 7, MemberId: 8, Revision: 42, RaftTerm: 3},
		WatchId: 5, Canceled: true, CompactRevision: 40, CancelReason: "compacted", Fragment: true,
		Events: []*mvccpb.Event{
			{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte("/a"), Value: []byte("v1"), ModRevision: 41, CreateRevision: 2, Version: 9, Lease: 11},
				PrevKv: &mvccpb.KeyValue{Key: []byte("/a"), Value: []byte("v0")}},
			{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte("/b"), ModRevision: 42}},
		},
	}
	b, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var got watchResponse
	if err := got.parse(b); err != nil {
		t.Fatal(err)
	}
	got.buf = nil
	want := watchResponse{revision: 42, watchID: 5, canceled: true, compactRevision: 40, cancelReason: "compacted",
		events: []watchEvent{{key: []byte("/a"), value: []byte("v1"), modRevision: 41}, {del: true, key: []byte("/b"), modRevision: 42}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed %+v, want %+v", got, want)
	}

	created, _ := proto.Marshal(&pb.WatchResponse{Header: &pb.ResponseHeader{Revision: 9}, WatchId: 0, Created: true})
	if err := got.parse(created); err != nil || !got.created || got.watchID != 0 || len(got.events) != 0 || got.progress() {
		t.Errorf("created: %+v (%v)", got, err)
	}
	progress, _ := proto.Marshal(&pb.WatchResponse{Header: &pb.ResponseHeader{Revision: 9}, WatchId: -1})
	if err := got.parse(progress); err != nil || got.watchID != -1 || !got.progress() {
		t.Errorf("progress notification: %+v (%v)", got, err)
	}
	if err := got.parse(b[:len(b)-3]); !errors.Is(err, errWire) {
		t.Errorf("truncated: %v, want %v", err, errWire)
	}
}

// TestRangeResponseParse: a listing's page marshalled by etcd's protobuf
// code decodes to what the listing reads (the header's revision and
// cluster, each key's key, value and revision, more, count), the rest
// skipped; a truncated one is refused.
func TestRangeResponseParse(t *testing.T) {
	in := &pb.RangeResponse{
		Header: &pb.ResponseHeader{ClusterId: 7, MemberId: 8, Revision: 42, RaftTerm: 3},
		Kvs: []*mvccpb.KeyValue{
			{Key: []byte("/a"), Value: []byte("v1"), ModRevision: 41, CreateRevision: 2, Version: 9, Lease: 11},
			{Key: []byte("/b"), Value: []byte("v2"), ModRevision: 40},
		},
		More: true, Count: 1234,
	}
	b, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var got rangeResponse
	if err := got.parse(b); err != nil {
		t.Fatal(err)
	}
	got.buf = nil
	want := rangeResponse{revision: 42, clusterID: 7, more: true, count: 1234,
		kvs: []rangeKV{{key: []byte("/a"), value: []byte("v1"), modRevision: 41}, {key: []byte("/b"), value: []byte("v2"), modRevision: 40}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed %+v, want %+v", got, want)
	}
	if err := got.parse(b[:len(b)/2]); !errors.Is(err, errWire) {
		t.Errorf("truncated: %v, want %v", err, errWire)
	}
}

// TestPageSize: pages grow with what remains, from listPageSize up to
// maxListPage.
func TestPageSize(t *testing.T) {
	for _, c := range []struct{ remaining, want int64 }{
		{0, listPageSize}, {500, listPageSize}, {8 * listPageSize, listPageSize}, {8*listPageSize + 80, listPageSize + 10},
		{8 * maxListPage, maxListPage}, {1 << 40, maxListPage},
	} {
		if got := pageSize(c.remaining); got != c.want {
			t.Errorf("pageSize(%d) = %d, want %d", c.remaining, got, c.want)
		}
	}
}
