package etcdtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"google.golang.org/grpc"

	"contiv.dev/vpp/internal/etcd"
	"contiv.dev/vpp/internal/etcd/embedded"
)

// ClusterParams configures StartCluster. Zero values take the defaults.
type ClusterParams struct {
	// Members is the number of members; default 3.
	Members int
	// TickMs and ElectionMs are etcd's heartbeat interval and election
	// timeout; defaults 25 and 250, short yet tolerant of a loaded
	// machine (the race detector on two cores).
	TickMs, ElectionMs uint
	// StartTimeout bounds how long a member (or the first start of the
	// cluster) may take to be ready; default 60s.
	StartTimeout time.Duration
}

// Cluster is a multi-member embedded etcd on loopback, started for one test
// and stopped when it ends. Each member's clients and peers reach it
// through proxies on fixed addresses: a killed member's connections are cut
// at once, as when a process dies, and none outlives the cluster (etcd can
// leave a peer connection open after a member's Close: the proxies end it).
// Its methods must be called from one goroutine (the test's).
type Cluster struct {
	t       testing.TB
	p       ClusterParams
	initial string
	members []*member
}

// member is one etcd member: its addresses, data and the running server.
type member struct {
	name   string
	dir    string
	client url.URL // the member's own client listener
	peer   url.URL // the member's own peer listener
	// proxy and peerProxy forward to them; peerURL is peerProxy's URL,
	// which the member advertises.
	proxy, peerProxy *proxy
	peerURL          url.URL

	mu   sync.Mutex // guards e and grpc; Leader reads e from any goroutine
	e    *embed.Etcd
	grpc []*grpc.Server // e's client servers, stopped before e (streamDrain)
}

// StartCluster starts a cluster of p.Members members and waits until it
// has a leader and every member serves.
func StartCluster(t testing.TB, p ClusterParams) *Cluster {
	t.Helper()
	if p.Members == 0 {
		p.Members = 3
	}
	if p.TickMs == 0 {
		p.TickMs = 25
	}
	if p.ElectionMs == 0 {
		p.ElectionMs = 250
	}
	if p.StartTimeout == 0 {
		p.StartTimeout = 60 * time.Second
	}
	ports, err := freePorts(4 * p.Members)
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	c := &Cluster{t: t, p: p}
	t.Cleanup(c.close)
	var initial []string
	for i := range p.Members {
		m := &member{
			name:    "m" + strconv.Itoa(i),
			dir:     t.TempDir(),
			client:  url.URL{Scheme: "http", Host: loopback(ports[4*i])},
			peer:    url.URL{Scheme: "http", Host: loopback(ports[4*i+1])},
			peerURL: url.URL{Scheme: "http", Host: loopback(ports[4*i+3])},
		}
		if m.proxy, err = newProxy(loopback(ports[4*i+2]), m.client.Host); err != nil {
			t.Fatalf("etcdtest: member %s: proxy: %v", m.name, err)
		}
		if m.peerProxy, err = newProxy(m.peerURL.Host, m.peer.Host); err != nil {
			t.Fatalf("etcdtest: member %s: peer proxy: %v", m.name, err)
		}
		c.members = append(c.members, m)
		initial = append(initial, m.name+"="+m.peerURL.String())
	}
	c.initial = strings.Join(initial, ",")
	// The members of a new cluster wait for each other: start them together.
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i := range c.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.start(i)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("etcdtest: member %d: %v", i, err)
		}
	}
	return c
}

// loopback is the loopback address with port.
func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// freePorts picks n distinct free loopback ports below the usual ephemeral
// range (32768 and up), so that no outgoing connection takes a stopped
// member's port before it starts again.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			return nil, fmt.Errorf("no %d free ports found", n)
		}
		port := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", loopback(port))
		if err != nil {
			continue
		}
		lns = append(lns, ln)
		ports = append(ports, port)
	}
	return ports, nil
}

// start starts member i on its addresses and data and waits until it
// serves (which for a restarted member means it has rejoined).
func (c *Cluster) start(i int) error {
	m := c.members[i]
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.LogLevel = "fatal"
	cfg.Logger = "zap"
	cfg.LogOutputs = []string{"stderr"}
	cfg.TickMs = c.p.TickMs
	cfg.ElectionMs = c.p.ElectionMs
	cfg.ListenClientUrls = []url.URL{m.client}
	cfg.AdvertiseClientUrls = []url.URL{m.client}
	cfg.ListenPeerUrls = []url.URL{m.peer}
	cfg.AdvertisePeerUrls = []url.URL{m.peerURL}
	cfg.InitialCluster = c.initial
	cfg.InitialClusterToken = "etcdtest"
	cfg.ClusterState = embed.ClusterStateFlagNew // ignored once the data exists
	m.mu.Lock()
	m.grpc = nil
	m.mu.Unlock()
	cfg.ServiceRegister = func(s *grpc.Server) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.grpc = append(m.grpc, s)
	}
	m.peerProxy.setUp(true)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("start: %w", err)
	case <-time.After(c.p.StartTimeout):
		e.Close()
		return fmt.Errorf("not ready after %s", c.p.StartTimeout)
	}
	m.mu.Lock()
	m.e = e
	m.mu.Unlock()
	m.proxy.setUp(true)
	return nil
}

// Size is the number of members.
func (c *Cluster) Size() int { return len(c.members) }

// Endpoint is the client URL of member i (its proxy).
func (c *Cluster) Endpoint(i int) string { return "http://" + c.members[i].proxy.ln.Addr().String() }

// Endpoints are the client URLs of every member.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.members))
	for i := range c.members {
		out[i] = c.Endpoint(i)
	}
	return out
}

// Client returns a new client of every member, closed when the test ends.
func (c *Cluster) Client() *clientv3.Client {
	c.t.Helper()
	cli, err := etcd.NewClient(context.Background(), etcd.ClientParams{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		c.t.Fatalf("etcdtest: %v", err)
	}
	c.t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Running tells whether member i runs.
func (c *Cluster) Running(i int) bool {
	m := c.members[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.e != nil
}

// Leader is the index of the member every running member follows, or -1
// while they do not agree or follow a member that is down. It may be
// called from any goroutine.
func (c *Cluster) Leader() int {
	var lead uint64
	for _, m := range c.members {
		m.mu.Lock()
		if m.e != nil {
			l := m.e.Server.Lead()
			if l == 0 || (lead != 0 && l != lead) {
				m.mu.Unlock()
				return -1
			}
			lead = l
		}
		m.mu.Unlock()
	}
	for i, m := range c.members {
		m.mu.Lock()
		ok := m.e != nil && uint64(m.e.Server.MemberID()) == lead
		m.mu.Unlock()
		if ok {
			return i
		}
	}
	return -1
}

// WaitLeader waits until the running members agree on a running leader and
// returns its index; it fails the test after limit.
func (c *Cluster) WaitLeader(limit time.Duration) int {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if l := c.Leader(); l >= 0 {
			return l
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("etcdtest: no leader after %v", limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill stops member i abruptly, as a killed process: its client and peer
// connections are cut, and a leader does not hand its leadership over.
// Its data stays for Start.
func (c *Cluster) Kill(i int) { c.stop(i, true) }

// Stop stops member i gracefully: a leader first hands its leadership to
// another member. Then its connections are cut. Its data stays for Start.
func (c *Cluster) Stop(i int) { c.stop(i, false) }

func (c *Cluster) stop(i int, hard bool) {
	m := c.members[i]
	m.mu.Lock()
	e, servers := m.e, m.grpc
	m.e = nil
	m.mu.Unlock()
	if e == nil {
		return
	}
	if hard {
		m.proxy.setUp(false)
		m.peerProxy.setUp(false)
		// Raft stops here; Close then skips the leadership transfer, as
		// the server's context is done.
		e.Server.HardStop()
	}
	embedded.StopGRPC(servers, streamDrain)
	e.Close()
	m.proxy.setUp(false)
	m.peerProxy.setUp(false)
}

// Start starts the stopped member i again on its addresses and data and
// waits until it has rejoined the cluster.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	if c.Running(i) {
		return
	}
	if err := c.start(i); err != nil {
		c.t.Fatalf("etcdtest: member %d: %v", i, err)
	}
}

// close kills every member (at once: a graceful stop of each in turn
// would wait for leadership transfers) and stops the proxies.
func (c *Cluster) close() {
	for i := range c.members {
		c.Kill(i)
	}
	for _, m := range c.members {
		m.proxy.close()
		m.peerProxy.close()
	}
}
