package e2e

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// klog's flush daemon lives as long as the process.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		// The thread every program is started from (proc_test.go).
		goleak.IgnoreAnyFunction("contiv.dev/vpp/e2e.spawn"),
	)
}
