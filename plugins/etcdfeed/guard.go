package etcdfeed

import (
	"context"
	"fmt"
	"sync/atomic"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// maxStreamFailures is how many times in a row the Watch stream may fail
// (a response that does not decode, a stream reset) before the feed ends
// the watch as one it cannot follow.
const maxStreamFailures = 3

// guard watches the Watch streams clientv3 opens for the feed. clientv3
// opens a new stream, and resumes its watches on it, after a stream failed
// with codes.Internal (a response gRPC could not decode, a stream reset)
// at once and without end: a response that cannot be decoded, sent again
// at every resume, would stall the watch for good, unseen. The guard
// counts the stream failures since a stream last delivered events or a
// progress notification and, at maxStreamFailures, hands the feed the
// last one (failing). Failures of a lost connection (codes.Unavailable)
// are the connection's business (monitor) and not counted.
type guard struct {
	failures atomic.Int32
	failing  chan error
}

func newGuard() *guard { return &guard{failing: make(chan error, 1)} }

// reset starts counting afresh: a new watch begins.
func (g *guard) reset() {
	g.failures.Store(0)
	select {
	case <-g.failing:
	default:
	}
}

// received notes a response of the stream.
func (g *guard) received(r *pb.WatchResponse) {
	if len(r.Events) == 0 && (r.Created || r.Canceled || r.CompactRevision != 0) {
		return // no sign that the watch advances
	}
	if g.failures.Load() != 0 {
		g.failures.Store(0)
	}
}

// failed notes a failure of the stream.
func (g *guard) failed(err error) {
	switch status.Code(err) {
	case codes.Unavailable, codes.Canceled, codes.DeadlineExceeded:
		return
	}
	n := g.failures.Add(1)
	if n < maxStreamFailures {
		return
	}
	select {
	case g.failing <- fmt.Errorf("%w: the watch stream failed %d times in a row: %w", errUnfollowable, n, err):
	default:
	}
}

// guardedClient is etcd's Watch client whose streams report to g.
type guardedClient struct {
	pb.WatchClient
	g *guard
}

// Watch opens a stream that reports to the guard.
func (c *guardedClient) Watch(ctx context.Context, opts ...grpc.CallOption) (pb.Watch_WatchClient, error) {
	ws, err := c.WatchClient.Watch(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return &guardedStream{Watch_WatchClient: ws, ctx: ctx, g: c.g}, nil
}

type guardedStream struct {
	pb.Watch_WatchClient
	ctx context.Context
	g   *guard
}

// Recv receives a response, and tells the guard how it went.
func (s *guardedStream) Recv() (*pb.WatchResponse, error) {
	r, err := s.Watch_WatchClient.Recv()
	switch {
	case err == nil:
		s.g.received(r)
	case s.ctx.Err() == nil:
		s.g.failed(err)
	}
	return r, err
}
