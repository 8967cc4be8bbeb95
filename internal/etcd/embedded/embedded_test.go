package embedded

import (
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStartRefusesBadParams: a missing data directory or a client URL
// that does not parse is refused, naming what is wrong, before any member
// starts.
func TestStartRefusesBadParams(t *testing.T) {
	for _, c := range []struct {
		p    Params
		want string
	}{
		{Params{}, "data directory is required"},
		{Params{DataDir: t.TempDir(), ClientURL: "http://[::1"}, `client URL "http://[::1"`},
	} {
		if m, err := Start(c.p); err == nil || !strings.Contains(err.Error(), c.want) {
			if m != nil {
				m.Close()
			}
			t.Errorf("Start(%+v): %v, want an error naming %q", c.p, err, c.want)
		}
	}
}

// TestStartServesAndCloses: a started member accepts connections on its
// client endpoint, and Close stops it (goleak checks that nothing of it
// is left running).
func TestStartServesAndCloses(t *testing.T) {
	m, err := Start(Params{DataDir: t.TempDir(), Fast: true, StreamDrain: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.ClientURL(), "http://127.0.0.1:") || !strings.HasPrefix(m.PeerURL(), "http://127.0.0.1:") {
		t.Errorf("URLs %s, %s: want loopback http", m.ClientURL(), m.PeerURL())
	}
	c, err := net.DialTimeout("tcp", m.Endpoint(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", m.Endpoint(), err)
	}
	c.Close()
	m.Close()
	if c, err := net.DialTimeout("tcp", m.Endpoint(), time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Close", m.Endpoint())
	}
}
