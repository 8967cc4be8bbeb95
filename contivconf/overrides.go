package contivconf

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// An option is one setting that the environment and command-line flags can
// override.
type option struct {
	env   string // environment variable
	flag  string // command-line flag; "" for none (secrets)
	path  string // field path in the file
	usage string
	field func(*Config) any // pointer to the field: *string, *bool, *[]string, *Duration or *SimulateMode
}

// options lists the overridable settings; docs and the usage of each flag
// come from here.
func options() []option {
	return []option{
		{"CONTIV_NODE_NAME", "node-name", "nodeName", "this node's Kubernetes name (default: the host name)", func(c *Config) any { return &c.NodeName }},
		{"CONTIV_CLUSTER_NAME", "cluster-name", "clusterName", "this cluster's name in the owner mark on VPP (default kubernetes)", func(c *Config) any { return &c.ClusterName }},
		{"CONTIV_LOG_LEVEL", "log-level", "log.level", "log level: debug, info, warn or error", func(c *Config) any { return &c.Log.Level }},
		{"CONTIV_LOG_FORMAT", "log-format", "log.format", "log format: text or json", func(c *Config) any { return &c.Log.Format }},
		{"CONTIV_ETCD_ENDPOINTS", "etcd-endpoints", "etcd.endpoints", "comma-separated etcd endpoints (required unless etcd.embedded.enabled)", func(c *Config) any { return &c.Etcd.Endpoints }},
		{"CONTIV_ETCD_EMBEDDED", "etcd-embedded", "etcd.embedded.enabled", "run an embedded single-member etcd inside the agent (development: true or false)", func(c *Config) any { return &c.Etcd.Embedded.Enabled }},
		{"CONTIV_ETCD_DATA_DIR", "etcd-data-dir", "etcd.embedded.dataDir", "data directory of the embedded etcd", func(c *Config) any { return &c.Etcd.Embedded.DataDir }},
		{"CONTIV_ETCD_CLIENT_URL", "etcd-client-url", "etcd.embedded.clientURL", "client URL of the embedded etcd, http://IP:port", func(c *Config) any { return &c.Etcd.Embedded.ClientURL }},
		{"CONTIV_ETCD_CA_FILE", "etcd-ca-file", "etcd.tls.caFile", "PEM file of the CAs trusted for etcd", func(c *Config) any { return &c.Etcd.TLS.CAFile }},
		{"CONTIV_ETCD_CERT_FILE", "etcd-cert-file", "etcd.tls.certFile", "client certificate for etcd", func(c *Config) any { return &c.Etcd.TLS.CertFile }},
		{"CONTIV_ETCD_KEY_FILE", "etcd-key-file", "etcd.tls.keyFile", "key of the client certificate for etcd", func(c *Config) any { return &c.Etcd.TLS.KeyFile }},
		{"CONTIV_ETCD_USERNAME", "etcd-username", "etcd.username", "etcd user name", func(c *Config) any { return &c.Etcd.Username }},
		{"CONTIV_ETCD_PASSWORD", "", "etcd.password", "etcd password (environment only: flags show in ps)", func(c *Config) any { return &c.Etcd.Password }},
		{"CONTIV_VPP_SOCKET", "vpp-socket", "vpp.socket", "path of VPP's binary API socket", func(c *Config) any { return &c.VPP.Socket }},
		{"CONTIV_VPP_SIMULATE", "vpp-simulate", "vpp.simulate", "simulated VPP: auto (when the socket is absent), always or never", func(c *Config) any { return &c.VPP.Simulate }},
		{"CONTIV_VPP_TAKE_OVER", "vpp-take-over", "vpp.takeOver", "program VPP even when another agent marked it as its own (true or false)", func(c *Config) any { return &c.VPP.TakeOver }},
		{"CONTIV_HTTP_ADDR", "http-addr", "http.address", "listen address of REST, metrics and probes", func(c *Config) any { return &c.HTTP.Address }},
		{"CONTIV_NODE_ID_FILE", "node-id-file", "nodeSync.stateFile", "file keeping this node's ID", func(c *Config) any { return &c.NodeSync.StateFile }},
		{"CONTIV_RESYNC_INTERVAL", "resync-interval", "controller.resyncInterval", "period of the full reconcile; 0 disables it", func(c *Config) any { return &c.Controller.ResyncInterval }},
	}
}

// set parses s into the field ptr points to.
func set(ptr any, s string) error {
	switch f := ptr.(type) {
	case *string:
		*f = s
	case *SimulateMode:
		*f = SimulateMode(s)
	case *bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return errors.New("want true or false")
		}
		*f = b
	case *[]string:
		var list []string
		for e := range strings.SplitSeq(s, ",") {
			if e = strings.TrimSpace(e); e != "" {
				list = append(list, e)
			}
		}
		*f = list
	case *Duration:
		return f.Set(s)
	default:
		panic(fmt.Sprintf("contivconf: option of unsupported type %T", ptr))
	}
	return nil
}

// get formats the field ptr points to as set parses it.
func get(ptr any) string {
	switch f := ptr.(type) {
	case *string:
		return *f
	case *SimulateMode:
		return string(*f)
	case *bool:
		return strconv.FormatBool(*f)
	case *[]string:
		return strings.Join(*f, ",")
	case *Duration:
		return f.String()
	}
	return fmt.Sprint(ptr)
}

// apply sets opt's field of c from s, naming source in the error.
func (opt option) apply(c *Config, s, source string) error {
	if err := set(opt.field(c), s); err != nil {
		return &FieldError{Path: opt.path, Source: source, Value: show(s), Msg: err.Error(), Err: err}
	}
	return nil
}

// ApplyEnv overrides settings from environment variables read through
// lookup (os.LookupEnv in production). A variable that is unset or empty
// changes nothing. The variables, and the field each sets:
//
//	CONTIV_NODE_NAME        nodeName
//	CONTIV_CLUSTER_NAME     clusterName
//	CONTIV_LOG_LEVEL        log.level
//	CONTIV_LOG_FORMAT       log.format
//	CONTIV_ETCD_ENDPOINTS   etcd.endpoints (comma-separated)
//	CONTIV_ETCD_DATA_DIR    etcd.embedded.dataDir
//	CONTIV_ETCD_CLIENT_URL  etcd.embedded.clientURL
//	CONTIV_ETCD_CA_FILE     etcd.tls.caFile
//	CONTIV_ETCD_CERT_FILE   etcd.tls.certFile
//	CONTIV_ETCD_KEY_FILE    etcd.tls.keyFile
//	CONTIV_ETCD_USERNAME    etcd.username
//	CONTIV_ETCD_PASSWORD    etcd.password (no flag: flags show in ps)
//	CONTIV_VPP_SOCKET       vpp.socket
//	CONTIV_VPP_SIMULATE     vpp.simulate
//	CONTIV_VPP_TAKE_OVER    vpp.takeOver
//	CONTIV_HTTP_ADDR        http.address
//	CONTIV_NODE_ID_FILE     nodeSync.stateFile
//	CONTIV_RESYNC_INTERVAL  controller.resyncInterval (e.g. "10m")
func (c *Config) ApplyEnv(lookup func(string) (string, bool)) error {
	var errs []error
	for _, opt := range options() {
		s, ok := lookup(opt.env)
		if !ok || s == "" {
			continue
		}
		if err := opt.apply(c, s, "env "+opt.env); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// flagValue is the flag.Value of one option: it keeps the text given on
// the command line, checked when parsed, for ApplyFlags to apply.
type flagValue struct {
	opt  option
	text string
}

// String returns the flag's text.
func (v *flagValue) String() string {
	if v == nil {
		return ""
	}
	return v.text
}

// IsBoolFlag lets a boolean option be given without a value
// (--etcd-embedded means --etcd-embedded=true), as the flag package does
// for its own booleans.
func (v *flagValue) IsBoolFlag() bool {
	scratch := Defaults()
	_, ok := v.opt.field(&scratch).(*bool)
	return ok
}

// Set checks s by applying it to a scratch configuration.
func (v *flagValue) Set(s string) error {
	scratch := Defaults()
	if err := set(v.opt.field(&scratch), s); err != nil {
		return err
	}
	v.text = s
	return nil
}

// RegisterFlags defines on fs a flag for every overridable setting (the
// list of ApplyEnv, without the password): --node-name, --log-level,
// --log-format, --etcd-endpoints, --etcd-data-dir, --etcd-client-url,
// --etcd-embedded, --etcd-ca-file, --etcd-cert-file, --etcd-key-file, --etcd-username,
// --vpp-socket, --vpp-simulate, --http-addr, --node-id-file and
// --resync-interval. Their help shows the built-in defaults. After
// fs.Parse, ApplyFlags applies the flags that were given.
func RegisterFlags(fs *flag.FlagSet) {
	d := Defaults()
	for _, opt := range options() {
		if opt.flag == "" {
			continue
		}
		usage := fmt.Sprintf("%s (%s; env %s)", opt.usage, opt.path, opt.env)
		fs.Var(&flagValue{opt: opt, text: get(opt.field(&d))}, opt.flag, usage)
	}
}

// ApplyFlags overrides settings from the flags of fs that RegisterFlags
// defined and the command line set; other flags are ignored.
func (c *Config) ApplyFlags(fs *flag.FlagSet) error {
	var errs []error
	fs.Visit(func(f *flag.Flag) {
		v, ok := f.Value.(*flagValue)
		if !ok {
			return
		}
		if err := v.opt.apply(c, v.text, "flag --"+f.Name); err != nil {
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}

// Sources are the places Resolve reads configuration from; each may be
// left zero.
type Sources struct {
	// File is the path of the YAML file; empty means none.
	File string
	// Env looks up environment variables (os.LookupEnv); nil means none.
	Env func(string) (string, bool)
	// Flags is a flag set on which RegisterFlags was called, already
	// parsed; nil means none.
	Flags *flag.FlagSet
	// Hostname gives the node name when no source sets it (os.Hostname);
	// nil means none.
	Hostname func() (string, error)
}

// Resolve builds the configuration from defaults, the file, the
// environment and flags, in this order of precedence, fills in the node
// name from the host name when nothing set it, and validates the result.
// A node name is required in the end.
func Resolve(src Sources) (Config, error) {
	c := Defaults()
	if src.File != "" {
		var err error
		if c, err = Load(src.File); err != nil {
			return Config{}, err
		}
	}
	var errs []error
	if src.Env != nil {
		errs = append(errs, c.ApplyEnv(src.Env))
	}
	if src.Flags != nil {
		errs = append(errs, c.ApplyFlags(src.Flags))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	if c.NodeName == "" && src.Hostname != nil {
		h, err := src.Hostname()
		if err != nil {
			return Config{}, fmt.Errorf("config: node name from the host name: %w", err)
		}
		c.NodeName = strings.ToLower(h)
	}
	err := c.Validate()
	if c.NodeName == "" {
		err = errors.Join(err, &FieldError{Path: "nodeName", Msg: "required: set it in the file, CONTIV_NODE_NAME or --node-name"})
	}
	if err != nil {
		return Config{}, err
	}
	return c, nil
}
