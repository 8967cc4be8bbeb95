package etcdrange

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"pgregory.net/rapid"

	"contiv.dev/vpp/internal/etcdtest"
)

// same tells how got (decoded here) differs from want (etcd's own type,
// decoded by protobuf-go), "" when it does not: every field, and whether a
// key or value is nil (absent) or empty.
func same(got *RangeResponse, want *etcdserverpb.RangeResponse) string {
	gh, wh := got.GetHeader(), want.GetHeader()
	if (gh == nil) != (wh == nil) || gh.GetClusterId() != wh.GetClusterId() || gh.GetMemberId() != wh.GetMemberId() ||
		gh.GetRevision() != wh.GetRevision() || gh.GetRaftTerm() != wh.GetRaftTerm() {
		return fmt.Sprintf("header %v, want %v", gh, wh)
	}
	if got.More != want.More || got.Count != want.Count || len(got.Kvs) != len(want.Kvs) {
		return fmt.Sprintf("more %v, count %d, %d keys; want %v, %d, %d", got.More, got.Count, len(got.Kvs), want.More, want.Count, len(want.Kvs))
	}
	for i, g := range got.Kvs {
		w := want.Kvs[i]
		if !sameBytes(g.Key, w.Key) || !sameBytes(g.Value, w.Value) || g.CreateRevision != w.CreateRevision ||
			g.ModRevision != w.ModRevision || g.Version != w.Version || g.Lease != w.Lease {
			return fmt.Sprintf("key %d: %s, want %s", i, brief(g.Key, g.Value, g.CreateRevision, g.ModRevision, g.Version, g.Lease),
				brief(w.Key, w.Value, w.CreateRevision, w.ModRevision, w.Version, w.Lease))
		}
	}
	return ""
}

// brief shows a key-value pair with at most 40 bytes of its key and value.
func brief(key, value []byte, create, mod, version, lease int64) string {
	cut := func(b []byte) string {
		if len(b) > 40 {
			return fmt.Sprintf("%q… (%d bytes)", b[:40], len(b))
		}
		return fmt.Sprintf("%q (nil %v)", b, b == nil)
	}
	return fmt.Sprintf("{%s: %s, revisions %d/%d, version %d, lease %d}", cut(key), cut(value), create, mod, version, lease)
}

func sameBytes(a, b []byte) bool { return bytes.Equal(a, b) && (a == nil) == (b == nil) }

// failer is what decodeBoth needs of a testing.TB or a rapid.T.
type failer interface {
	Helper()
	Fatal(...any)
	Fatalf(string, ...any)
}

// decodeBoth decodes b with etcd's type and with RangeResponse.Decode, and
// fails t when one fails or they differ.
func decodeBoth(t failer, b []byte) {
	t.Helper()
	want := &etcdserverpb.RangeResponse{}
	if err := proto.Unmarshal(b, want); err != nil {
		t.Fatalf("etcd's decode: %v", err)
	}
	got := &RangeResponse{}
	if err := got.Decode(b); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if d := same(got, want); d != "" {
		t.Fatal(d)
	}
}

// responses are RangeResponses as etcd answers a paged listing: an empty
// page, a first page with more to come, a last page, a count-only answer,
// large and empty values, bytes that are not UTF-8.
func responses() map[string]*etcdserverpb.RangeResponse {
	hdr := &etcdserverpb.ResponseHeader{ClusterId: 14841639068965178418, MemberId: 10276657743932975437, Revision: 123456, RaftTerm: 7}
	kv := func(k, v string, mod int64) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte(k), Value: []byte(v), CreateRevision: mod - 3, ModRevision: mod, Version: 4, Lease: 0}
	}
	return map[string]*etcdserverpb.RangeResponse{
		"empty page":  {Header: hdr},
		"no header":   {Kvs: []*mvccpb.KeyValue{kv("/a", "1", 9)}},
		"first page":  {Header: hdr, Kvs: []*mvccpb.KeyValue{kv("/k8s/svc/a", `{"a":1}`, 10), kv("/k8s/svc/b", `{"b":2}`, 99)}, More: true, Count: 5000},
		"last page":   {Header: hdr, Kvs: []*mvccpb.KeyValue{kv("/k8s/svc/z", `{}`, 12)}, Count: 1},
		"count only":  {Header: hdr, Count: 1 << 40},
		"large value": {Header: hdr, Kvs: []*mvccpb.KeyValue{kv("/big", strings.Repeat("x", 3<<20), 1<<40), kv("/next", "y", 2)}, More: true, Count: 3},
		"empty value": {Header: hdr, Kvs: []*mvccpb.KeyValue{{Key: []byte("/e"), Value: []byte{}, ModRevision: 3, Lease: -1}}},
		"binary":      {Header: hdr, Kvs: []*mvccpb.KeyValue{kv("/\xff\x00k", "\x80\xc0\x00", 5)}},
	}
}

// TestDecodeAsEtcd: etcd's responses, marshalled by etcd's type, decode
// here as protobuf-go decodes them into etcd's type.
func TestDecodeAsEtcd(t *testing.T) {
	for name, r := range responses() {
		t.Run(name, func(t *testing.T) {
			b, err := proto.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			decodeBoth(t, b)
		})
	}
}

// TestDecodeAsEtcdProperty: the same for arbitrary responses.
func TestDecodeAsEtcdProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := &etcdserverpb.RangeResponse{More: rapid.Bool().Draw(t, "more"), Count: rapid.Int64().Draw(t, "count")}
		if rapid.Bool().Draw(t, "header") {
			r.Header = &etcdserverpb.ResponseHeader{ClusterId: rapid.Uint64().Draw(t, "cluster"),
				MemberId: rapid.Uint64().Draw(t, "member"), Revision: rapid.Int64().Draw(t, "rev"), RaftTerm: rapid.Uint64().Draw(t, "term")}
		}
		for i := range rapid.IntRange(0, 20).Draw(t, "n") {
			r.Kvs = append(r.Kvs, &mvccpb.KeyValue{
				Key: rapid.SliceOf(rapid.Byte()).Draw(t, fmt.Sprint("key", i)), Value: rapid.SliceOf(rapid.Byte()).Draw(t, fmt.Sprint("value", i)),
				CreateRevision: rapid.Int64().Draw(t, "create"), ModRevision: rapid.Int64().Draw(t, "mod"),
				Version: rapid.Int64().Draw(t, "version"), Lease: rapid.Int64().Draw(t, "lease"),
			})
		}
		b, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		decodeBoth(t, b)
	})
}

// FuzzDecode: on any bytes that both decode, this decode agrees with
// etcd's type's; what etcd's type decodes, marshalled again without the
// fields it did not know, decodes here alike. Malformed bytes may be
// refused by one and not the other (etcd's server, marshalling its own
// types, sends none): a known field with the wrong wire type is an error
// here, an unknown field to protobuf-go; an unknown group that does not
// end as protobuf-go requires is skipped here.
func FuzzDecode(f *testing.F) {
	for _, r := range responses() {
		b, err := proto.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) < 1<<16 {
			f.Add(b)
		}
	}
	f.Add([]byte{0x12, 0x05, 0x0a, 0x01}) // a key cut short
	f.Fuzz(func(t *testing.T, b []byte) {
		want := &etcdserverpb.RangeResponse{}
		werr := proto.Unmarshal(b, want)
		got := &RangeResponse{}
		if err := got.Decode(b); err == nil && werr == nil {
			if d := same(got, want); d != "" {
				t.Fatal(d)
			}
		}
		if werr == nil {
			dropUnknown(want.ProtoReflect())
			b2, err := proto.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			decodeBoth(t, b2)
		}
	})
}

// dropUnknown forgets the fields m and its messages did not know.
func dropUnknown(m protoreflect.Message) {
	m.SetUnknown(nil)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := range v.List().Len() {
				dropUnknown(v.List().Get(i).Message())
			}
		case fd.Message() != nil && !fd.IsMap():
			dropUnknown(v.Message())
		}
		return true
	})
}

// TestDecodeCapsSlices: appending to a decoded key does not write over the
// value that follows it in the buffer.
func TestDecodeCapsSlices(t *testing.T) {
	b, err := proto.Marshal(&etcdserverpb.RangeResponse{Kvs: []*mvccpb.KeyValue{{Key: []byte("/k"), Value: []byte("vvvv")}, {Key: []byte("/l")}}})
	if err != nil {
		t.Fatal(err)
	}
	r := &RangeResponse{}
	if err := r.Decode(b); err != nil {
		t.Fatal(err)
	}
	_ = append(r.Kvs[0].Key, "XXXXXXXX"...)
	_ = append(r.Kvs[0].Value, "XXXXXXXX"...)
	if string(r.Kvs[0].Value) != "vvvv" || string(r.Kvs[1].Key) != "/l" {
		t.Errorf("after appends: value %q, next key %q", r.Kvs[0].Value, r.Kvs[1].Key)
	}
}

// TestRangeAsClientGet: Range over a client's connection answers as the
// client's Get of the same range at the same revision, page by page: a
// first page, the next ones, the last, an empty range, large values.
func TestRangeAsClientGet(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 25 {
		v := fmt.Sprintf(`{"i":%d}`, i)
		if i%10 == 3 {
			v = strings.Repeat("v", 1<<20) // 1 MiB
		}
		if _, err := cli.Put(ctx, fmt.Sprintf("/p/%03d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, "/p/empty", ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key, end string
		limit    int64
	}{{"/p/", "/p0", 10}, {"/p/010", "/p0", 10}, {"/p/020", "/p0", 10}, {"/q/", "/q0", 10}, {"/p/", "/p0", 0}} {
		rev := int64(0)
		if c.key != "/p/" {
			rev = 20 // an older revision
		}
		got, err := Range(ctx, cli.ActiveConnection(), &etcdserverpb.RangeRequest{Key: []byte(c.key), RangeEnd: []byte(c.end), Limit: c.limit, Revision: rev}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := cli.Get(ctx, c.key, clientv3.WithRange(c.end), clientv3.WithLimit(c.limit), clientv3.WithRev(rev))
		if err != nil {
			t.Fatal(err)
		}
		if d := same(got.RangeResponse, (*etcdserverpb.RangeResponse)(want)); d != "" {
			t.Errorf("%s..%s limit %d: %s", c.key, c.end, c.limit, d)
		}
		got.Release()
		got.Release() // a second time: nothing
	}
	// An error is etcd's: a revision compacted or not yet written.
	_, err := Range(ctx, cli.ActiveConnection(), &etcdserverpb.RangeRequest{Key: []byte("/p/"), Revision: 1 << 40}, nil)
	if got, want := clientv3.ContextError(ctx, err), clientv3.ContextError(ctx, func() error {
		_, err := cli.Get(ctx, "/p/", clientv3.WithRev(1<<40))
		return err
	}()); got == nil || got.Error() != want.Error() {
		t.Errorf("Range at a future revision: %v, Get's %v", got, want)
	}
}

// TestBuffersReusePageBuffers: a released page's buffer serves the next
// page that fits in it (made with room for a page half as large again);
// at most keepBuffers are kept, the largest.
func TestBuffersReusePageBuffers(t *testing.T) {
	var p Buffers
	a := p.Get(1000)
	if len(*a) != 1000 || cap(*a) != 1500 {
		t.Fatalf("a new buffer: len %d cap %d, want 1000 and 1500", len(*a), cap(*a))
	}
	p.Put(a)
	if b := p.Get(1400); &(*b)[0] != &(*a)[0] || len(*b) != 1400 {
		t.Errorf("a page of 1400 bytes did not get the kept buffer of 1500")
	} else {
		p.Put(b)
	}
	if c := p.Get(2000); cap(*c) < 2000 || &(*c)[0] == &(*a)[0] {
		t.Errorf("a page larger than every kept buffer: cap %d", cap(*c))
	}
	for _, n := range []int{10, 20, 30, 40} {
		b := make([]byte, n)
		p.Put(&b)
	}
	var caps []int
	for _, b := range p.free {
		caps = append(caps, cap(*b))
	}
	slices.Sort(caps)
	if !slices.Equal(caps, []int{30, 40, 1500}) {
		t.Errorf("kept %v, want the 3 largest [30 40 1500]", caps)
	}
}
