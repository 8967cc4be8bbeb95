package harness

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

// The large figure runs etcd, the simulated VPP and the agent each in a
// process of its own (this binary again, told its role by childRoleEnv),
// so that each one's CPU (getrusage) and live heap are its own, exactly. A
// child prints "ready ENDPOINT", then answers each line "cpu", "heap" or
// "reset" on its stdin with one JSON childStats line, and stops when its
// stdin closes.
const (
	childRoleEnv = "CONTIV_BENCH_CHILD"
	childDirEnv  = "CONTIV_BENCH_CHILD_DIR"  // etcd's data directory
	childFastEnv = "CONTIV_BENCH_CHILD_FAST" // "1": etcd's short timings (tests)
	RoleEtcd     = "etcd"
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

// RunChild runs this process as a child of the large figure when
// the environment names its role, and then exits; otherwise it returns at
// once. A binary that runs Run (contiv-bench, this package's tests) calls
// it first thing.
func RunChild() {
	role := os.Getenv(childRoleEnv)
	if role == "" {
		return
	}
	if err := runChild(role, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "contiv-bench %s child: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runChild(role string, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		endpoint string
		stats    func() ChildStats
		reset    = func() {}
	)
	switch role {
	case RoleEtcd:
		m, err := embedded.Start(embedded.Params{DataDir: os.Getenv(childDirEnv), Fast: os.Getenv(childFastEnv) == "1"})
		if err != nil {
			return err
		}
		defer m.Close()
		endpoint = "http://" + m.Endpoint()
		stats = func() ChildStats { return ChildStats{} }
	case roleVPP:
		ep, st, rs, closeVPP, err := runVPPChild(os.Getenv(childVPPEnv))
		if err != nil {
			return err
		}
		defer closeVPP()
		endpoint, stats, reset = ep, st, rs
	case roleAgent:
		res, closeAgent, err := runAgentChild(ctx, os.Getenv(childAgentEnv))
		if err != nil {
			return err
		}
		defer closeAgent()
		endpoint, stats = res, func() ChildStats { return ChildStats{} }
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	if _, err := fmt.Fprintf(out, "ready %s\n", endpoint); err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if sc.Text() == "reset" {
			reset()
		}
		st := stats()
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
