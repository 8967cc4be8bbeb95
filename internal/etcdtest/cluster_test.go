package etcdtest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcd"
)

// memberClient is a client of member i alone.
func memberClient(t *testing.T, c *Cluster, i int) *clientv3.Client {
	t.Helper()
	cli, err := etcd.NewClient(context.Background(), etcd.ClientParams{Endpoints: []string{c.Endpoint(i)}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// put writes k=v through cli, retrying while the cluster elects a leader.
func put(t *testing.T, cli *clientv3.Client, k, v string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := cli.Put(ctx, k, v)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("put %s: %v", k, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// get reads k through member i alone (a linearizable read: the member must
// be part of a quorum and caught up).
func get(t *testing.T, c *Cluster, i int, k string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := memberClient(t, c, i).Get(ctx, k)
	if err != nil {
		t.Fatalf("member %d: get %s: %v", i, k, err)
	}
	if len(resp.Kvs) != 1 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// A three-member cluster survives its leader killed and a follower stopped;
// restarted members rejoin and serve what was written while they were down.
func TestClusterKillStopStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three etcd members")
	}
	c := StartCluster(t, ClusterParams{})
	if c.Size() != 3 || len(c.Endpoints()) != 3 {
		t.Fatalf("size %d, endpoints %v", c.Size(), c.Endpoints())
	}
	cli := c.Client()
	put(t, cli, "/k", "0")

	lead := c.WaitLeader(30 * time.Second)
	c.Kill(lead)
	if c.Running(lead) {
		t.Fatalf("member %d still runs", lead)
	}
	// The killed member's address refuses clients.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err := memberClient(t, c, lead).Get(ctx, "/k")
	cancel()
	if err == nil {
		t.Fatalf("killed member %d answered", lead)
	}
	put(t, cli, "/k", "1")
	if l := c.WaitLeader(30 * time.Second); l == lead {
		t.Fatalf("killed member %d still leads", lead)
	}
	c.Start(lead)
	if got := get(t, c, lead, "/k"); got != "1" {
		t.Fatalf("restarted member %d reads %q, want 1", lead, got)
	}

	follower := (c.WaitLeader(30*time.Second) + 1) % c.Size()
	c.Stop(follower)
	put(t, cli, "/k", "2")
	c.Start(follower)
	for i := range c.Size() {
		if got := get(t, c, i, "/k"); got != "2" {
			t.Errorf("member %d reads %q, want 2", i, got)
		}
	}
	// Every member answers for itself.
	for i := range c.Size() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := cli.Status(ctx, c.Endpoint(i))
		cancel()
		if err != nil || st.Leader == 0 {
			t.Errorf("member %d status %v, %v", i, st, err)
		}
	}
}
