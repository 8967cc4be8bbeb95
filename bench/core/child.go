package core

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"contiv.dev/vpp/internal/etcd/embedded"
)

// A figure may run etcd, the simulated VPP and the agent each in a
// process of its own (this binary again, told its role by childRoleEnv),
// so that each one's CPU (getrusage) and live heap are its own, exactly. A
// child prints "ready ENDPOINT", then answers each line "cpu", "heap" or
// "reset" on its stdin with one JSON ChildStats line, and stops when its
// stdin closes.
const (
	childRoleEnv = "CONTIV_BENCH_CHILD"
	childDirEnv  = "CONTIV_BENCH_CHILD_DIR"  // etcd's data directory
	childFastEnv = "CONTIV_BENCH_CHILD_FAST" // "1": etcd's short timings (tests)
	roleEtcd     = "etcd"
)

// ChildStats is what a child reports: its CPU (user+sys) and, after a
// "heap" request's two collections, its live heap.
type ChildStats struct {
	CPUNS     int64  `json:"cpu_ns"`
	HeapBytes uint64 `json:"heap_bytes,omitempty"`
	// Writes and Crashes: the simulated VPP's (role vpp) VPP writes since
	// the last "reset" request, and its crashes.
	Writes  int64 `json:"writes,omitempty"`
	Crashes int64 `json:"crashes,omitempty"`
}

// A Role is what a child runs until its stdin closes.
type Role func(ctx context.Context) (*Served, error)

// Served is a child's running part: its endpoint, its own figures (nil:
// only the CPU), what a "reset" request does (nil: nothing) and how it
// stops.
type Served struct {
	Endpoint string
	Stats    func() ChildStats
	Reset    func()
	Close    func()
}

// RunChild runs this process as a child, one of roles or etcd
// (roleEtcd), when the environment names its role, and then exits;
// otherwise it returns at once. A binary that starts children (StartChild)
// calls it first thing.
func RunChild(roles map[string]Role) {
	role := os.Getenv(childRoleEnv)
	if role == "" {
		return
	}
	run, ok := roles[role]
	if role == roleEtcd {
		run, ok = etcdRole, true
	}
	err := fmt.Errorf("unknown role %q", role)
	if ok {
		err = runChild(run, os.Stdin, os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "contiv-bench %s child: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// etcdRole serves an embedded etcd (StartEtcdChild).
func etcdRole(context.Context) (*Served, error) {
	m, err := embedded.Start(embedded.Params{DataDir: os.Getenv(childDirEnv), Fast: os.Getenv(childFastEnv) == "1"})
	if err != nil {
		return nil, err
	}
	return &Served{Endpoint: "http://" + m.Endpoint(), Close: m.Close}, nil
}

// StartEtcdChild starts an embedded etcd in a child process, its data in
// dir (fast: etcd's short timings, for tests).
func StartEtcdChild(dir string, fast bool) (*Child, error) {
	f := "0"
	if fast {
		f = "1"
	}
	return StartChild(roleEtcd, childDirEnv+"="+dir, childFastEnv+"="+f)
}

func runChild(role Role, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sv, err := role(ctx)
	if err != nil {
		return err
	}
	defer sv.Close()
	if _, err := fmt.Fprintf(out, "ready %s\n", sv.Endpoint); err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if sc.Text() == "reset" && sv.Reset != nil {
			sv.Reset()
		}
		var st ChildStats
		if sv.Stats != nil {
			st = sv.Stats()
		}
		st.CPUNS = int64(CPUTime()) // before the collections a heap request makes
		if sc.Text() == "heap" {
			st.HeapBytes = LiveHeapAfterGC()
		}
		if err := enc.Encode(st); err != nil {
			return err
		}
	}
	return sc.Err()
}

// LiveHeapAfterGC is the live heap after two full collections.
func LiveHeapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	return LiveHeap()
}

// Child is a running child process.
type Child struct {
	cmd      *exec.Cmd
	in       io.WriteCloser
	out      *bufio.Scanner
	Endpoint string
}

// StartChild starts this binary again as role, with env added, and waits
// for its endpoint.
func StartChild(role string, env ...string) (*Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(append(os.Environ(), childRoleEnv+"="+role), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outR, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s child: %w", role, err)
	}
	c := &Child{cmd: cmd, in: in, out: bufio.NewScanner(outR)}
	if !c.out.Scan() {
		c.Close()
		return nil, fmt.Errorf("%s child: exited before it was ready", role)
	}
	ep, ok := strings.CutPrefix(c.out.Text(), "ready ")
	if !ok {
		c.Close()
		return nil, fmt.Errorf("%s child: unexpected first line %q", role, c.out.Text())
	}
	c.Endpoint = ep
	return c, nil
}

// stats asks the child for its figures ("cpu" or "heap").
func (c *Child) Stats(what string) (ChildStats, error) {
	var st ChildStats
	if _, err := fmt.Fprintln(c.in, what); err != nil {
		return st, err
	}
	if !c.out.Scan() {
		return st, errors.Join(errors.New("child ended"), c.out.Err())
	}
	return st, json.Unmarshal(c.out.Bytes(), &st)
}

// close stops the child (its stdin closes) and waits for it.
func (c *Child) Close() {
	_ = c.in.Close()
	done := make(chan struct{})
	go func() {
		_ = c.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}
