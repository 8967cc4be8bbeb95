package etcd

import (
	"context"
	"testing"
	"time"
)

// Every client reconnects within ReconnectMaxDelay (gRPC's default backoff
// grows to 120s) and pings its connection.
func TestClientReconnectIsBoundedAndKeptAlive(t *testing.T) {
	c := config(context.Background(), []string{"127.0.0.1:2379"}, time.Second, nil, "", "")
	b := reconnect.Backoff
	if worst := time.Duration(float64(b.MaxDelay) * (1 + b.Jitter)); worst > ReconnectMaxDelay || ReconnectMaxDelay > 2*time.Second {
		t.Errorf("reconnection backoff up to %v (jitter included), want at most %v and at most 2s", worst, ReconnectMaxDelay)
	}
	if len(c.DialOptions) == 0 {
		t.Error("the reconnection backoff is not among the dial options")
	}
	if c.DialKeepAliveTime < 5*time.Second || c.DialKeepAliveTimeout <= 0 {
		t.Errorf("keepalive %v/%v: want pings no more often than etcd's 5s minimum, with a timeout", c.DialKeepAliveTime, c.DialKeepAliveTimeout)
	}
}
