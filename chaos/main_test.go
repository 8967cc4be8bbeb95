package chaos

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// enabledEnv turns the chaos tests on.
const enabledEnv = "CONTIV_CHAOS"

// needChaos skips t unless the chaos tests are enabled.
func needChaos(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("chaos tests are slow: not under -short")
	}
	if os.Getenv(enabledEnv) == "" {
		t.Skipf("chaos tests run with %s=1 (make chaos)", enabledEnv)
	}
}
