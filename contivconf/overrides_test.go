package contivconf

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// env is a fake environment.
type env map[string]string

func (e env) lookup(k string) (string, bool) { v, ok := e[k]; return v, ok }

// newFlags returns a flag set with the options registered, parsed from args.
func newFlags(t *testing.T, args ...string) *flag.FlagSet {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("config", "", "not ours")
	RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("Parse(%q): %v", args, err)
	}
	return fs
}

func TestApplyEnvEveryOption(t *testing.T) {
	e := env{
		"CONTIV_NODE_NAME":       "n1",
		"CONTIV_CLUSTER_NAME":    "prod-eu",
		"CONTIV_LOG_LEVEL":       "debug",
		"CONTIV_LOG_FORMAT":      "json",
		"CONTIV_ETCD_ENDPOINTS":  " https://a:2379, https://b:2379 ,",
		"CONTIV_ETCD_DATA_DIR":   "/d",
		"CONTIV_ETCD_CLIENT_URL": "http://127.0.0.1:1",
		"CONTIV_ETCD_CA_FILE":    "/ca",
		"CONTIV_ETCD_CERT_FILE":  "/cert",
		"CONTIV_ETCD_KEY_FILE":   "/key",
		"CONTIV_ETCD_USERNAME":   "u",
		"CONTIV_ETCD_PASSWORD":   "p",
		"CONTIV_VPP_SOCKET":      "/s.sock",
		"CONTIV_VPP_SIMULATE":    "always",
		"CONTIV_VPP_TAKE_OVER":   "true",
		"CONTIV_HTTP_ADDR":       ":1",
		"CONTIV_NODE_ID_FILE":    "/id",
		"CONTIV_RESYNC_INTERVAL": "90s",
		"CONTIV_ETCD_EMBEDDED":   "false",
		"CONTIV_UNRELATED":       "x",
	}
	c := Defaults()
	if err := c.ApplyEnv(e.lookup); err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.NodeName = "n1"
	want.ClusterName = "prod-eu"
	want.Log = LogConfig{Level: "debug", Format: "json"}
	want.Etcd.Endpoints = []string{"https://a:2379", "https://b:2379"}
	want.Etcd.Embedded = EmbeddedEtcdConfig{DataDir: "/d", ClientURL: "http://127.0.0.1:1"}
	want.Etcd.TLS = TLSConfig{CAFile: "/ca", CertFile: "/cert", KeyFile: "/key"}
	want.Etcd.Username, want.Etcd.Password = "u", "p"
	want.VPP.Socket = "/s.sock"
	want.VPP.Simulate = SimulateAlways
	want.VPP.TakeOver = true
	want.HTTP.Address = ":1"
	want.NodeSync.StateFile = "/id"
	want.Controller.ResyncInterval = Duration(90 * time.Second)
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if len(e)-1 != len(options()) {
		t.Errorf("the test sets %d variables; there are %d options", len(e)-1, len(options()))
	}
}

func TestBoolFlagWithoutValue(t *testing.T) {
	fs := newFlags(t, "--etcd-embedded", "--node-name=n3")
	c := Defaults()
	if err := c.ApplyFlags(fs); err != nil || !c.Etcd.Embedded.Enabled || c.NodeName != "n3" {
		t.Errorf("--etcd-embedded alone: enabled %v, node %q, %v", c.Etcd.Embedded.Enabled, c.NodeName, err)
	}
	fs = newFlags(t, "--etcd-embedded=false")
	c.Etcd.Embedded.Enabled = true
	if err := c.ApplyFlags(fs); err != nil || c.Etcd.Embedded.Enabled {
		t.Errorf("--etcd-embedded=false: enabled %v, %v", c.Etcd.Embedded.Enabled, err)
	}
}

func TestApplyEnvBool(t *testing.T) {
	c := Defaults()
	if err := c.ApplyEnv(env{"CONTIV_ETCD_EMBEDDED": "true"}.lookup); err != nil || !c.Etcd.Embedded.Enabled {
		t.Errorf("CONTIV_ETCD_EMBEDDED=true: enabled %v, %v", c.Etcd.Embedded.Enabled, err)
	}
	err := c.ApplyEnv(env{"CONTIV_ETCD_EMBEDDED": "sometimes"}.lookup)
	wantErrs(t, err, `etcd.embedded.enabled`, `sometimes`, `want true or false`)
}

func TestApplyEnvEmptyIsUnset(t *testing.T) {
	c := Defaults()
	if err := c.ApplyEnv(env{"CONTIV_VPP_SOCKET": "", "CONTIV_RESYNC_INTERVAL": ""}.lookup); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Defaults()) {
		t.Errorf("empty variables changed the config: %+v", c)
	}
}

func TestApplyEnvBadValue(t *testing.T) {
	c := Defaults()
	err := c.ApplyEnv(env{"CONTIV_RESYNC_INTERVAL": "often", "CONTIV_NODE_NAME": "ok"}.lookup)
	wantErrs(t, err, `controller.resyncInterval (from env CONTIV_RESYNC_INTERVAL): invalid value "often": want a duration`)
	if c.NodeName != "ok" {
		t.Errorf("a bad variable lost the good one: nodeName %q", c.NodeName)
	}
}

func TestFlags(t *testing.T) {
	fs := newFlags(t, "--config=/x.yaml", "--node-name=n2", "--etcd-endpoints=", "--vpp-simulate", "never", "-resync-interval=0")
	c := Defaults()
	c.Etcd.Endpoints = []string{"a:1"}
	if err := c.ApplyFlags(fs); err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.NodeName = "n2"
	want.VPP.Simulate = SimulateNever
	want.Controller.ResyncInterval = 0
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
}

func TestFlagsUnsetChangeNothing(t *testing.T) {
	fs := newFlags(t)
	c := Defaults()
	c.VPP.Socket = "/from/file.sock"
	if err := c.ApplyFlags(fs); err != nil {
		t.Fatal(err)
	}
	if c.VPP.Socket != "/from/file.sock" {
		t.Errorf("an unset flag's default replaced the file's value: %q", c.VPP.Socket)
	}
}

func TestFlagBadValue(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	RegisterFlags(fs)
	err := fs.Parse([]string{"--resync-interval=sometimes"})
	if err == nil || !strings.Contains(err.Error(), `invalid value "sometimes" for flag -resync-interval: want a duration`) {
		t.Errorf("Parse = %v", err)
	}
}

func TestFlagsHelp(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var out strings.Builder
	fs.SetOutput(&out)
	RegisterFlags(fs)
	fs.PrintDefaults()
	for _, opt := range options() {
		if opt.flag == "" {
			if strings.Contains(out.String(), opt.env) {
				t.Errorf("help mentions the env-only %s", opt.env)
			}
			continue
		}
		if !strings.Contains(out.String(), "-"+opt.flag) || !strings.Contains(out.String(), opt.env) {
			t.Errorf("help lacks -%s or %s", opt.flag, opt.env)
		}
	}
	for _, w := range []string{"(default /run/vpp/api.sock)", "(default 10m0s)", "(default :9999)"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("help lacks %s:\n%s", w, out.String())
		}
	}
}

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.yaml")
	yaml := "log:\n  level: warn\n  format: json\nhttp:\n  address: :1111\nvpp:\n  socket: /file.sock\netcd:\n  embedded:\n    enabled: true\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	e := env{"CONTIV_HTTP_ADDR": ":2222", "CONTIV_VPP_SOCKET": "/env.sock"}
	fs := newFlags(t, "--vpp-socket=/flag.sock")
	c, err := Resolve(Sources{File: file, Env: e.lookup, Flags: fs, Hostname: func() (string, error) { return "Host-A", nil }})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ field, got, want string }{
		{"log.level (default < file)", c.Log.Level, "warn"},
		{"http.address (file < env)", c.HTTP.Address, ":2222"},
		{"vpp.socket (env < flag)", c.VPP.Socket, "/flag.sock"},
		{"etcd.embedded.dataDir (default)", c.Etcd.Embedded.DataDir, "/var/lib/contiv/etcd"},
		{"nodeName (host name, lower case)", c.NodeName, "host-a"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %q, want %q", ch.field, ch.got, ch.want)
		}
	}
}

func TestResolve(t *testing.T) {
	t.Run("explicit name beats the host name", func(t *testing.T) {
		c, err := Resolve(Sources{Env: env{"CONTIV_NODE_NAME": "n1", "CONTIV_ETCD_ENDPOINTS": "http://10.0.0.5:2379"}.lookup, Hostname: func() (string, error) { return "h", nil }})
		if err != nil || c.NodeName != "n1" {
			t.Errorf("Resolve = %q, %v", c.NodeName, err)
		}
	})
	t.Run("node name required", func(t *testing.T) {
		_, err := Resolve(Sources{})
		wantErrs(t, err, "nodeName: required")
	})
	t.Run("host name error", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := Resolve(Sources{Hostname: func() (string, error) { return "", boom }})
		if !errors.Is(err, boom) {
			t.Errorf("Resolve = %v, want boom", err)
		}
	})
	t.Run("invalid after overrides", func(t *testing.T) {
		_, err := Resolve(Sources{Env: env{"CONTIV_NODE_NAME": "n1", "CONTIV_VPP_SIMULATE": "maybe", "CONTIV_HTTP_ADDR": "nowhere"}.lookup})
		wantErrs(t, err, `vpp.simulate: invalid value "maybe"`, `http.address: invalid value "nowhere"`)
	})
	t.Run("bad env and bad flag together", func(t *testing.T) {
		fs := newFlags(t)
		if err := fs.Set("resync-interval", "1m"); err != nil {
			t.Fatal(err)
		}
		_, err := Resolve(Sources{Env: env{"CONTIV_RESYNC_INTERVAL": "x"}.lookup, Flags: fs})
		wantErrs(t, err, "env CONTIV_RESYNC_INTERVAL")
	})
	t.Run("bad file", func(t *testing.T) {
		_, err := Resolve(Sources{File: filepath.Join(t.TempDir(), "absent.yaml")})
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Resolve = %v", err)
		}
	})
}
