package noderegistry

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"contiv.dev/vpp/internal/etcdtest"
	"contiv.dev/vpp/kubestate"
)

func readRecord(t *testing.T, cli *clientv3.Client, name string) (*kubestate.VppNode, int64) {
	t.Helper()
	resp, err := cli.Get(context.Background(), recordKey(name))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("record of %s: %v %v", name, resp, err)
	}
	rec, err := decodeRecord(name, resp.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return rec, resp.Kvs[0].ModRevision
}

func TestPublishWritesOnlyChanges(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	ctx := t.Context()
	id := mustClaim(t, params(cli, "a"))
	addrs := Addresses{
		VppIPs:  []netip.Prefix{netip.MustParsePrefix("192.168.16.1/24"), netip.MustParsePrefix("10.0.0.1/8")},
		MgmtIPs: []netip.Addr{netip.MustParseAddr("172.16.0.5")},
	}
	wrote, err := Publish(ctx, cli, "a", id, addrs)
	if err != nil || !wrote {
		t.Fatalf("first publish: %v %v", wrote, err)
	}
	rec, rev := readRecord(t, cli, "a")
	if rec.ID != id || !slices.Equal(rec.VppIPs, []string{"10.0.0.1/8", "192.168.16.1/24"}) || !slices.Equal(rec.MgmtIPs, []string{"172.16.0.5"}) {
		t.Fatalf("record %+v", rec)
	}
	// The same addresses in another order, with a duplicate: no write.
	same := Addresses{
		VppIPs:  []netip.Prefix{addrs.VppIPs[1], addrs.VppIPs[0], addrs.VppIPs[1]},
		MgmtIPs: addrs.MgmtIPs,
	}
	wrote, err = Publish(ctx, cli, "a", id, same)
	if err != nil || wrote {
		t.Fatalf("second publish: wrote=%v %v", wrote, err)
	}
	if _, rev2 := readRecord(t, cli, "a"); rev2 != rev {
		t.Fatalf("the record was rewritten: revision %d → %d", rev, rev2)
	}
	wrote, err = Publish(ctx, cli, "a", id, Addresses{VppIPs: addrs.VppIPs[:1]})
	if err != nil || !wrote {
		t.Fatalf("changed publish: %v %v", wrote, err)
	}
	if rec, _ := readRecord(t, cli, "a"); len(rec.MgmtIPs) != 0 || len(rec.VppIPs) != 1 {
		t.Fatalf("record %+v", rec)
	}
	// A restart keeps the published addresses.
	if again := mustClaim(t, params(cli, "a")); again != id {
		t.Fatalf("claim again: %d", again)
	}
	if rec, _ := readRecord(t, cli, "a"); len(rec.VppIPs) != 1 {
		t.Fatalf("claiming again lost the addresses: %+v", rec)
	}

	if err := Release(ctx, cli, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(ctx, cli, "a", id, addrs); !errors.Is(err, ErrReleased) {
		t.Fatalf("publish after release: %v, want ErrReleased", err)
	}
	if resp, _ := cli.Get(ctx, recordKey("a")); len(resp.Kvs) != 0 {
		t.Fatal("publishing after release recreated the record")
	}
}
