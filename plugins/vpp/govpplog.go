package vpp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/core"
)

// RouteGovppLogs sends the log lines of govpp (which logs with logrus,
// through package-global loggers) to log, with the attribute
// part=govpp and logrus' fields as attributes. It sets process-wide state
// without a lock: call it once, at program start, before anything uses
// govpp (cmd/contiv-agent does). govpp copies its logger into every new
// connection.
// govpp's debug lines (one per message) stay off unless DEBUG_GOVPP is
// set, as govpp itself does.
func RouteGovppLogs(log *slog.Logger) {
	l := newGovppLogger(log)
	core.SetLogger(l)
	socketclient.SetLogger(l.WithField("logger", "govpp/socketclient"))
}

// newGovppLogger is a logrus logger whose entries go to log only.
func newGovppLogger(log *slog.Logger) *logrus.Logger {
	l := logrus.New()
	l.Out = io.Discard
	l.Formatter = noFormat{}
	l.Level = logrus.InfoLevel
	if os.Getenv(core.DebugEnvVar) != "" {
		l.Level = logrus.DebugLevel
	}
	l.Hooks.Add(slogHook{log: log.With("part", "govpp")})
	l.Hooks.Add(dropHook{})
	return l
}

// noFormat skips logrus' formatting: the hook has the entry already.
type noFormat struct{}

func (noFormat) Format(*logrus.Entry) ([]byte, error) { return nil, nil }

// slogHook forwards logrus entries to slog.
type slogHook struct{ log *slog.Logger }

func (slogHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h slogHook) Fire(e *logrus.Entry) error {
	level := slogLevel(e.Level)
	if strings.HasPrefix(e.Message, staleReply) {
		level = slog.LevelDebug
	}
	ctx := context.Background()
	if !h.log.Enabled(ctx, level) {
		return nil
	}
	keys := make([]string, 0, len(e.Data))
	for k := range e.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	attrs := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		v := e.Data[k]
		if err, ok := v.(error); ok {
			v = err.Error()
		} else if s, ok := v.(fmt.Stringer); ok {
			v = s.String()
		}
		attrs = append(attrs, slog.Any(k, v))
	}
	r := slog.NewRecord(e.Time, level, e.Message, 0)
	r.AddAttrs(attrs...)
	return h.log.Handler().Handle(ctx, r)
}

// staleReply starts what govpp logs, at error level, for a reply whose
// channel is closed: after every VPP restart or reconnect, answers to the
// old connection's last requests (the agent has already given up on them
// and retries). Expected, so it is logged at debug level.
const staleReply = "Channel ID not known"

// slogLevel maps logrus' levels onto slog's.
func slogLevel(l logrus.Level) slog.Level {
	switch {
	case l <= logrus.ErrorLevel: // panic, fatal, error
		return slog.LevelError
	case l == logrus.WarnLevel:
		return slog.LevelWarn
	case l == logrus.InfoLevel:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}
