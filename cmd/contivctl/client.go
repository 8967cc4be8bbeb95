package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// agentEnv names the environment variable giving the agent's address.
const agentEnv = "CONTIVCTL_AGENT"

// defaultAgent is the agent's address when neither --agent nor
// CONTIVCTL_AGENT gives one: the agent's default HTTP address, locally.
const defaultAgent = "http://127.0.0.1:9999"

// maxViewSize bounds an answer of the agent.
const maxViewSize = 64 << 20

// agentFlags are the flags of commands that talk to a running agent.
type agentFlags struct {
	addr    string
	timeout time.Duration
}

func (f *agentFlags) register(fs *flag.FlagSet) {
	def := defaultAgent
	if v := os.Getenv(agentEnv); v != "" {
		def = v
	}
	fs.StringVar(&f.addr, "agent", def, "the agent's HTTP address, `URL` or host:port (env "+agentEnv+")")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "bound on the request to the agent")
}

// agentClient reads the JSON views of one agent.
type agentClient struct {
	base    *url.URL
	timeout time.Duration
	http    *http.Client
}

// client checks the flags and returns a client of the agent.
func (f *agentFlags) client() (*agentClient, error) {
	addr := strings.TrimSpace(f.addr)
	if addr == "" {
		return nil, fmt.Errorf("%w: --agent is empty", errUsage)
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%w: --agent %q: want http://host:port or host:port", errUsage, f.addr)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &agentClient{base: u, timeout: f.timeout, http: &http.Client{}}, nil
}

// get fetches the view at path (e.g. "/v1/services") and returns its body.
func (c *agentClient) get(ctx context.Context, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	u := c.base.String() + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Close = true // one request per command: keep no idle connection
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("agent at %s did not answer GET %s within %s: %w", c.base, path, c.timeout, err)
		}
		return nil, fmt.Errorf("agent at %s unreachable (is contiv-agent running? set --agent or %s): %w", c.base, agentEnv, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxViewSize+1))
	if err != nil {
		return nil, fmt.Errorf("agent at %s: GET %s: reading the answer: %w", c.base, path, err)
	}
	if len(body) > maxViewSize {
		return nil, fmt.Errorf("agent at %s: GET %s: answer larger than %d bytes", c.base, path, maxViewSize)
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(body))
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			msg = e.Error // a view that does not apply (rest.Error)
		}
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("agent at %s has no view %s (is it a contiv-agent, and as new as this contivctl?): %s", c.base, path, resp.Status)
		}
		return nil, fmt.Errorf("agent at %s: GET %s: %s: %s", c.base, path, resp.Status, msg)
	}
	return body, nil
}

// view fetches the view at path and decodes it into v; it returns the raw
// body too, for -o json.
func (c *agentClient) view(ctx context.Context, path string, v any) ([]byte, error) {
	body, err := c.get(ctx, path)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("agent at %s: GET %s: not the JSON this contivctl reads: %w", c.base, path, err)
	}
	return body, nil
}

// show fetches the view at path into v and, with -o json, prints the body
// as received: printed tells the caller that nothing more is to print.
func (c *agentClient) show(ctx context.Context, w io.Writer, of outputFlag, path string, v any) (printed bool, err error) {
	body, err := c.view(ctx, path, v)
	if err != nil || !of.json() {
		return false, err
	}
	return true, writeRawJSON(w, body)
}

// The titles of the tables printed after a renderer's state.
const (
	failuresTitle  = "FAILURES (%d): not applied until the object changes or a full resync"
	conflictsTitle = "CONFLICTS (%d): frontends claimed by more than one service; the oldest wins"
)

// conflictHeader is the header of a conflictsTitle table.
var conflictHeader = []string{"FRONTEND", "WINNER", "LOSERS"}

// section writes, after a blank line, title (with the count of items in
// its %d) and a table of items, one row each; with no items, nothing.
func section[T any](w io.Writer, title string, items []T, header []string, row func(T) []string) error {
	if len(items) == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, "\n"+title+"\n", len(items)); err != nil {
		return err
	}
	t := newTable(w, header...)
	for _, x := range items {
		t.row(row(x)...)
	}
	return t.flush()
}

// The output formats of -o.
const (
	formatTable = "table"
	formatJSON  = "json"
)

// outputFlag is -o.
type outputFlag struct{ format string }

func (o *outputFlag) register(fs *flag.FlagSet) {
	fs.StringVar(&o.format, "o", formatTable, "output `format`: table or json")
}

func (o *outputFlag) check() error {
	switch o.format {
	case formatTable, formatJSON:
		return nil
	}
	return fmt.Errorf("%w: -o %q: want table or json", errUsage, o.format)
}

func (o *outputFlag) json() bool { return o.format == formatJSON }

// writeRawJSON writes JSON as received, indented.
func writeRawJSON(w io.Writer, body []byte) error {
	var b bytes.Buffer
	if err := json.Indent(&b, body, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns: cells separated by tabs, rows by newlines.
// Lines are written on flush, without trailing blanks.
type table struct {
	w   io.Writer
	buf bytes.Buffer
	tw  *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{w: w}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

// row writes one row. Every row of a table has the same number of cells
// (empty ones included), or tabwriter stops aligning the columns after it.
func (t *table) row(cells ...string) {
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	var out strings.Builder
	for line := range strings.Lines(t.buf.String()) {
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	t.buf.Reset()
	_, err := io.WriteString(t.w, out.String())
	return err
}

// orDash is s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// joinStrings joins the string forms of xs with sep.
func joinStrings[T fmt.Stringer](xs []T, sep string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = x.String()
	}
	return strings.Join(parts, sep)
}
