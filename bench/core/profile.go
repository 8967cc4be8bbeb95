package core

import (
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

// StartCPUProfile starts a CPU profile written to path; stop ends it
// (once) and closes the file.
func StartCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return sync.OnceFunc(func() { pprof.StopCPUProfile(); f.Close() }), nil
}

// CPUProfile writes a CPU profile of work to path.
func CPUProfile(path string, work func() error) error {
	stop, err := StartCPUProfile(path)
	if err != nil {
		return err
	}
	defer stop()
	return work()
}

// ProfileFor writes a CPU profile to path of step run again and again for
// d; n is how many times it ran.
func ProfileFor(path string, d time.Duration, step func() error) (n int, err error) {
	err = CPUProfile(path, func() error {
		for end := time.Now().Add(d); time.Now().Before(end); n++ {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// WriteHeapProfile writes the heap profile to path after two full
// collections (the profile lags one cycle, hence two).
func WriteHeapProfile(path string) error {
	runtime.GC()
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
