package main

import (
	"os"
	"strings"
	"testing"

	"contiv.dev/vpp/contivconf"
)

// make run's agent answers contivctl load without flags: the agent there
// runs its embedded etcd at the default client URL (make run sets neither
// --etcd-client-url nor --etcd-endpoints), and --etcd defaults to that URL.
// make run execs the built agent rather than go run, so that Ctrl-C ends
// with the agent's exit status (0), not go run's.
func TestMakeRunAnswersLoadWithoutFlags(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, recipe, ok := strings.Cut(string(b), "\nrun:\n")
	if !ok {
		t.Fatal("no run target in the Makefile")
	}
	recipe, _, _ = strings.Cut(recipe, "\n\n")
	for _, bad := range []string{"--etcd-client-url", "--etcd-endpoints", "CONTIV_ETCD", "go run", "$(GO) run"} {
		if strings.Contains(recipe, bad) {
			t.Errorf("make run uses %s:\n%s", bad, recipe)
		}
	}
	if !strings.Contains(recipe, "\texec ") {
		t.Errorf("make run does not exec the agent:\n%s", recipe)
	}
	code, _, errs := contivctl(t, "", "load", "-h")
	if code != 0 || !strings.Contains(errs, contivconf.Defaults().Etcd.Embedded.ClientURL) {
		t.Errorf("contivctl load -h (exit %d) does not default --etcd to the embedded etcd's %s:\n%s", code, contivconf.Defaults().Etcd.Embedded.ClientURL, errs)
	}
}
