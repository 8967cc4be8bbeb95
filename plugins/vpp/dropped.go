package vpp

import (
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/core"
)

// replyHandOver is how long govpp's socket reader waits for a channel's
// reader to take a reply once the channel's buffer is full, instead of
// govpp's 100 ms: past it, govpp drops the reply. Waiting slows every
// reply of the connection meanwhile (one reader serves them all), which
// is backpressure; a dropped reply is a lost object. Set at package
// initialisation, before any connection exists (govpp reads it when it
// makes a channel).
const replyHandOver = 2 * time.Second

// ErrRepliesDropped is a dump's error when govpp dropped a reply while it
// ran: what it returned may miss objects VPP holds, so it is not used.
var ErrRepliesDropped = errors.New("govpp dropped a reply during the dump (its reader stalled past " + replyHandOver.String() + " with its buffer full): the dump is incomplete")

// droppedReplies counts the replies govpp dropped in this process. govpp
// tells of a drop only to its logger; dropHook, on every logger this
// package gives govpp, counts them. A dump that sees the count move fails
// (a drop on another channel meanwhile fails it too: retrying is safe).
var droppedReplies atomic.Uint64

// dropMessages start what govpp v0.13.0 logs when it drops a reply
// (core/request_handler.go). ASSUMPTION: govpp keeps these words;
// TestStalledDumpFailsOrIsWhole fails if it stops telling.
var dropMessages = []string{"unable to send control ping", "unable to send reply"}

// dropHook counts govpp's dropped replies.
type dropHook struct{}

func (dropHook) Levels() []logrus.Level { return logrus.AllLevels }

func (dropHook) Fire(e *logrus.Entry) error {
	for _, m := range dropMessages {
		if strings.HasPrefix(e.Message, m) {
			droppedReplies.Add(1)
		}
	}
	return nil
}

func init() {
	core.ReplyChannelTimeout = replyHandOver
	// govpp's own default logger (text to stderr), with the hook.
	l := logrus.New()
	l.Formatter = &logrus.TextFormatter{EnvironmentOverrideColors: true}
	if govppDebug(os.Getenv(core.DebugEnvVar)) {
		l.Level = logrus.DebugLevel
	}
	l.Hooks.Add(dropHook{})
	core.SetLogger(l)
}

// govppDebug tells whether DEBUG_GOVPP turns govpp's core debug lines on,
// as govpp reads it ("core" among its ';' or ',' separated options).
func govppDebug(v string) bool {
	for _, opt := range strings.FieldsFunc(v, func(c rune) bool { return c == ';' || c == ',' }) {
		if strings.SplitN(opt, "=", 2)[0] == "core" {
			return true
		}
	}
	return false
}
