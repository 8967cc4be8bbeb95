// Package etcdrange reads one page of an etcd range (KV.Range) with its
// response decoded by generated code that aliases the received bytes: the
// keys and values of a page are slices of one buffer, not an allocation
// each, as etcd's own protobuf-go types make them.
//
// range.proto declares the part of etcd's RangeResponse the listing reads,
// with etcd's field numbers (go.etcd.io/etcd/api/v3: etcdserverpb/rpc.proto
// and mvccpb/kv.proto); range.pb.go and range_vtproto.pb.go are generated
// from it by protoc-gen-go and planetscale's protoc-gen-go-vtproto (its
// unmarshal_unsafe feature) and committed, so that a build needs no protoc.
// To regenerate, with protoc (Debian: protobuf-compiler) on PATH:
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install github.com/planetscale/vtprotobuf/cmd/protoc-gen-go-vtproto@v0.6.1-0.20240319094008-0393e58bdf10
//	go generate ./internal/etcdrange/
//
// The request stays etcd's own etcdserverpb.RangeRequest, marshalled by
// gRPC's proto codec.
package etcdrange

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-vtproto_out=. --go-vtproto_opt=paths=source_relative,features=unmarshal_unsafe range.proto
