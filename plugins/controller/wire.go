package controller

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// watchResponse is what the watcher reads of an etcdserverpb.WatchResponse
// (rpc.proto), decoded by rawCodec straight from the bytes gRPC received:
// no mvccpb.Event, KeyValue or ResponseHeader is made, and the events' keys
// and values are slices of buf, the one copy of the message.
type watchResponse struct {
	revision        int64 // the header's
	watchID         int64
	created         bool
	canceled        bool
	compactRevision int64
	cancelReason    string
	events          []watchEvent
	// buf holds the message; a new one for each (the watcher keeps the
	// newest put's key and value, slices of it).
	buf []byte
}

// watchEvent is one event of a watchResponse.
type watchEvent struct {
	del         bool
	key, value  []byte
	modRevision int64
}

// progress tells whether r is a progress notification: every change up to
// its header's revision has been sent.
func (r *watchResponse) progress() bool {
	return len(r.events) == 0 && !r.canceled && !r.created && r.compactRevision == 0 && r.revision != 0
}

// rawCodec is the codec of the Watch stream and of a listing's pages:
// requests are marshalled as protobuf's codec does; a response received
// into a *watchResponse or a *rangeResponse is decoded by its parse.
type rawCodec struct{ proto encoding.CodecV2 }

var theRawCodec = rawCodec{proto: encoding.GetCodecV2("proto")}

func (c rawCodec) Name() string { return "proto" }

func (c rawCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	switch r := v.(type) {
	case *watchResponse:
		return r.parse(data.Materialize())
	case *rangeResponse:
		// Into r's buffer when it is large enough: a listing hands its
		// pages' responses back once decoded (listPrefix).
		b := r.buf
		if n := data.Len(); cap(b) >= n {
			b = b[:n]
			data.CopyTo(b)
		} else {
			b = data.Materialize()
		}
		return r.parse(b)
	}
	return c.proto.Unmarshal(data, v)
}

// Field numbers of rpc.proto and kv.proto.
const (
	respHeader          = 1
	respWatchID         = 2
	respCreated         = 3
	respCanceled        = 4
	respCompactRevision = 5
	respCancelReason    = 6
	respEvents          = 11

	headerClusterID = 1
	headerRevision  = 3

	eventType = 1
	eventKv   = 2
	eventPut  = 0
	eventDel  = 1

	kvKey         = 1
	kvModRevision = 3
	kvValue       = 5

	rangeHeader = 1
	rangeKvs    = 2
	rangeMore   = 3
	rangeCount  = 4
)

var errWire = errors.New("malformed watch or range response")

// parse decodes a WatchResponse's wire form, b, into r (reusing its events'
// array); fields the watcher does not read are skipped.
func (r *watchResponse) parse(b []byte) error {
	*r = watchResponse{events: r.events[:0], buf: b}
	return fields(b, func(num protowire.Number, typ protowire.Type, v uint64, sub []byte) error {
		switch {
		case num == respHeader && typ == protowire.BytesType:
			return fields(sub, func(num protowire.Number, typ protowire.Type, v uint64, _ []byte) error {
				if num == headerRevision && typ == protowire.VarintType {
					r.revision = int64(v)
				}
				return nil
			})
		case num == respWatchID && typ == protowire.VarintType:
			r.watchID = int64(v)
		case num == respCreated && typ == protowire.VarintType:
			r.created = v != 0
		case num == respCanceled && typ == protowire.VarintType:
			r.canceled = v != 0
		case num == respCompactRevision && typ == protowire.VarintType:
			r.compactRevision = int64(v)
		case num == respCancelReason && typ == protowire.BytesType:
			r.cancelReason = string(sub)
		case num == respEvents && typ == protowire.BytesType:
			ev, err := parseEvent(sub)
			if err != nil {
				return err
			}
			r.events = append(r.events, ev)
		}
		return nil
	})
}

func parseEvent(b []byte) (watchEvent, error) {
	var ev watchEvent
	var typ uint64
	err := fields(b, func(num protowire.Number, t protowire.Type, v uint64, sub []byte) error {
		switch {
		case num == eventType && t == protowire.VarintType:
			typ = v
		case num == eventKv && t == protowire.BytesType:
			kv, err := parseKV(sub)
			ev.key, ev.value, ev.modRevision = kv.key, kv.value, kv.modRevision
			return err
		}
		return nil
	})
	switch {
	case err != nil:
		return ev, err
	case typ != eventPut && typ != eventDel:
		return ev, fmt.Errorf("%w: event type %d", errWire, typ)
	}
	ev.del = typ == eventDel
	return ev, nil
}

// fields calls f with each field of the message b: its number and type,
// the value of a varint, the bytes of a length-delimited field. Fixed-width
// and group fields are skipped.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, v uint64, sub []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %w", errWire, protowire.ParseError(n))
		}
		b = b[n:]
		var v uint64
		var sub []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			sub, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %w", errWire, num, protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.VarintType && typ != protowire.BytesType {
			continue
		}
		if err := f(num, typ, v, sub); err != nil {
			return err
		}
	}
	return nil
}

// rangeResponse is what a listing reads of an etcdserverpb.RangeResponse,
// decoded as watchResponse is: the keys and values are slices of buf, the
// one copy of the message (a page of a listing), and no KeyValue is made.
// A listing receives its next pages into the buffers of pages it decoded:
// nothing decoded from a page may keep a slice of it.
type rangeResponse struct {
	revision  int64 // the header's
	clusterID uint64
	kvs       []rangeKV
	more      bool
	count     int64
	buf       []byte
}

// rangeKV is one key of a rangeResponse.
type rangeKV struct {
	key, value  []byte
	modRevision int64
}

// parse decodes a RangeResponse's wire form, b, into r.
func (r *rangeResponse) parse(b []byte) error {
	*r = rangeResponse{kvs: r.kvs[:0], buf: b}
	return fields(b, func(num protowire.Number, typ protowire.Type, v uint64, sub []byte) error {
		switch {
		case num == rangeHeader && typ == protowire.BytesType:
			return fields(sub, func(num protowire.Number, typ protowire.Type, v uint64, _ []byte) error {
				switch {
				case num == headerRevision && typ == protowire.VarintType:
					r.revision = int64(v)
				case num == headerClusterID && typ == protowire.VarintType:
					r.clusterID = v
				}
				return nil
			})
		case num == rangeKvs && typ == protowire.BytesType:
			kv, err := parseKV(sub)
			if err != nil {
				return err
			}
			r.kvs = append(r.kvs, kv)
		case num == rangeMore && typ == protowire.VarintType:
			r.more = v != 0
		case num == rangeCount && typ == protowire.VarintType:
			r.count = int64(v)
		}
		return nil
	})
}

// parseKV decodes a KeyValue's wire form: its key, value and revision.
func parseKV(b []byte) (rangeKV, error) {
	var kv rangeKV
	err := fields(b, func(num protowire.Number, t protowire.Type, v uint64, sub []byte) error {
		switch {
		case num == kvKey && t == protowire.BytesType:
			kv.key = sub
		case num == kvModRevision && t == protowire.VarintType:
			kv.modRevision = int64(v)
		case num == kvValue && t == protowire.BytesType:
			kv.value = sub
		}
		return nil
	})
	return kv, err
}
