package e2e

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is one program of the system run as a process: the API server, the
// controller-manager, a reflector replica. Its output is kept (the tail is
// shown when the test fails); it is killed when the test ends, and with the
// test process (Pdeathsig).
type proc struct {
	t    testing.TB
	name string
	path string
	args []string
	env  []string
	out  *tailBuffer
	log  io.Writer // the whole output, an artifact (go test -artifacts)

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startProc(t testing.TB, name, path string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, path: path, args: args, out: &tailBuffer{max: 16 << 10}}
	p.log = artifact(t, name+".log")
	p.start()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s output tail:\n%s", p.name, p.out)
		}
	})
	return p
}

// start starts the program (again).
func (p *proc) start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	c := exec.Command(p.path, p.args...)
	c.Env = append(os.Environ(), p.env...)
	w := io.MultiWriter(p.out, p.log)
	c.Stdout, c.Stderr = w, w
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := startFromSpawner(c); err != nil {
		p.t.Fatalf("starting %s: %v", p.name, err)
	}
	done := make(chan struct{})
	go func() { p.err = c.Wait(); close(done) }()
	p.cmd, p.done = c, done
}

// spawner runs the starts of every program on one OS thread that lives as
// long as the test process. Pdeathsig fires when the thread that forked
// the child ends, not the process, and this test ends threads: each
// sandbox's netns is made on a locked thread left to die with it
// (testutils.NewNS). A program forked from such a thread was killed with
// it, silently: the controller-manager stopped in mid-run, and with it every
// EndpointSlice.
var spawner = func() chan<- func() {
	ch := make(chan func())
	go spawn(ch)
	return ch
}()

// spawn runs what ch brings on its locked thread (main_test.go tells
// goleak this goroutine never ends).
func spawn(ch <-chan func()) {
	runtime.LockOSThread() // never unlocked
	for f := range ch {
		f()
	}
}

// startFromSpawner starts c on the spawner's thread.
func startFromSpawner(c *exec.Cmd) error {
	errc := make(chan error, 1)
	spawner <- func() { errc <- c.Start() }
	return <-errc
}

// running tells whether the process has not exited.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits for the exit (SIGKILL after limit); it
// returns the exit error.
func (p *proc) stop(limit time.Duration) error { return p.signal(syscall.SIGTERM, limit) }

// kill sends SIGKILL: the program releases nothing.
func (p *proc) kill() { _ = p.signal(syscall.SIGKILL, time.Minute) }

func (p *proc) signal(sig syscall.Signal, limit time.Duration) error {
	p.mu.Lock()
	c, done := p.cmd, p.done
	p.mu.Unlock()
	select {
	case <-done:
		return p.err
	default:
	}
	_ = c.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(limit):
		_ = c.Process.Kill()
		<-done
		return errors.New(p.name + " did not exit after " + sig.String())
	}
	var ee *exec.ExitError
	if sig == syscall.SIGKILL && errors.As(p.err, &ee) {
		return nil
	}
	return p.err
}

// freePort is a loopback TCP port free at the time of the call.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Contains tells whether the kept tail holds s.
func (b *tailBuffer) Contains(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Contains(b.buf.Bytes(), []byte(s))
}

// artifact creates file name in t's artifact directory (kept with go test
// -artifacts, under -outputdir); it is closed when the test ends.
func artifact(t testing.TB, name string) io.Writer {
	t.Helper()
	f, err := os.Create(filepath.Join(t.ArtifactDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}
