package kubestate

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// listPageSize is how many keys one range request of a listing returns.
const listPageSize = 500

// Listing is the stored state of one or more resources at one revision.
type Listing struct {
	// Revision is the etcd revision the listing was read at: a watch for
	// what follows starts at Revision+1.
	Revision int64
	// Objects holds every decoded object by key.
	Objects map[Key]Object
	// Bad lists the values that could not be decoded (or keys that could
	// not be parsed); they are left out of Objects.
	Bad []BadValue
}

// BadValue is a stored value that was skipped.
type BadValue struct {
	// Key is the etcd key.
	Key string
	// Err says what is wrong (errors.Is ErrTooLarge for oversized values).
	Err error
}

// List reads every stored object of resource res at the current revision.
// Undecodable values are reported in Bad, not as an error.
func List(ctx context.Context, kv clientv3.KV, res Resource) (*Listing, error) {
	if _, err := New(res); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	l := &Listing{Objects: make(map[Key]Object)}
	rev, err := listPrefix(ctx, kv, res.KeyPrefix(), 0, l.add)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", res, err)
	}
	l.Revision = rev
	return l, nil
}

// ListAll reads every resource of Resources at one revision: a consistent
// snapshot of the cluster state. Keys under Prefix that belong to no
// resource (NodeSync ID claims, IPAM records) are not read.
func ListAll(ctx context.Context, kv clientv3.KV) (*Listing, error) {
	l := &Listing{Objects: make(map[Key]Object)}
	for _, r := range Resources {
		rev, err := listPrefix(ctx, kv, r.KeyPrefix(), l.Revision, l.add)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", r, err)
		}
		l.Revision = rev
	}
	return l, nil
}

func (l *Listing) add(key string, value []byte) {
	k, err := ParseKey(key)
	if err == nil {
		var o Object
		if o, err = Decode(k, value); err == nil {
			l.Objects[k] = o
			return
		}
	}
	l.Bad = append(l.Bad, BadValue{Key: key, Err: err})
}

// listPrefix calls fn for every key under prefix, in key order, reading page
// by page at revision rev (0: the current one). It returns the revision read.
func listPrefix(ctx context.Context, kv clientv3.KV, prefix string, rev int64, fn func(key string, value []byte)) (int64, error) {
	end := clientv3.GetPrefixRangeEnd(prefix)
	from := prefix
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(listPageSize)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := kv.Get(ctx, from, opts...)
		if err != nil {
			return 0, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, item := range resp.Kvs {
			fn(string(item.Key), item.Value)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return rev, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}
