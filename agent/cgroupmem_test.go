package agent

import (
	"testing"
	"testing/fstest"
)

func TestCgroupMemoryLimit(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, tc := range []struct {
		name  string
		fs    fstest.MapFS
		self  string
		want  int64
		found bool
	}{{
		name: "v2: the pod's limit binds its container",
		fs: fstest.MapFS{
			"sys/fs/cgroup/memory.max":                  file("max\n"),
			"sys/fs/cgroup/kubepods/memory.max":         file("max\n"),
			"sys/fs/cgroup/kubepods/pod1/memory.max":    file("536870912\n"),
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": file("max\n"),
		},
		self: "0::/kubepods/pod1/c1\n",
		want: 512 << 20, found: true,
	}, {
		name: "v2: the container's own limit, lower than the pod's",
		fs: fstest.MapFS{
			"sys/fs/cgroup/kubepods/pod1/memory.max":    file("536870912\n"),
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": file("268435456\n"),
		},
		self: "0::/kubepods/pod1/c1\n",
		want: 256 << 20, found: true,
	}, {
		name: "v2 in a cgroup namespace: the mount's root is the container's",
		fs:   fstest.MapFS{"sys/fs/cgroup/memory.max": file("1073741824\n")},
		self: "0::/\n",
		want: 1 << 30, found: true,
	}, {
		name: "v2 without a limit",
		fs:   fstest.MapFS{"sys/fs/cgroup/memory.max": file("max\n")},
		self: "0::/\n",
	}, {
		name: "v1: the host's path is not mounted in the container, its root is",
		fs:   fstest.MapFS{"sys/fs/cgroup/memory/memory.limit_in_bytes": file("805306368\n")},
		self: "12:pids:/kubepods/pod1/c1\n4:cpuacct,memory:/kubepods/pod1/c1\n0::/\n",
		want: 768 << 20, found: true,
	}, {
		name: "v1 without a limit (the largest page-aligned value)",
		fs:   fstest.MapFS{"sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854771712\n")},
		self: "4:memory:/\n",
	}, {
		name: "no memory controller named",
		fs:   fstest.MapFS{"sys/fs/cgroup/memory/memory.limit_in_bytes": file("805306368\n")},
		self: "3:cpu:/\n",
	}, {
		name: "a file that is not a number",
		fs:   fstest.MapFS{"sys/fs/cgroup/memory.max": file("lots\n")},
		self: "0::/\n",
	}, {
		name: "not a cgroup line",
		fs:   fstest.MapFS{"sys/fs/cgroup/memory.max": file("1073741824\n")},
		self: "garbage\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := cgroupMemoryLimit(tc.fs, []byte(tc.self))
			if found != tc.found || (found && got != tc.want) {
				t.Fatalf("limit %d (found %v), want %d (found %v)", got, found, tc.want, tc.found)
			}
		})
	}
}

// TestHoldGCStaysUnderTheContainer: the hold's soft limit is kept below
// the container's memory limit, however large the allowance: above it the
// kernel would kill the agent before the runtime collected.
func TestHoldGCStaysUnderTheContainer(t *testing.T) {
	p0, l0 := gcSettings()
	if p0 < 0 {
		t.Skip("the collector is off in this process (GOGC=off)")
	}
	maxLimit := memoryUsed() + 64<<20
	release := holdGCUnder(4096, maxLimit)
	p, l := gcSettings()
	release()
	if p >= 0 || int64(l) != maxLimit {
		t.Fatalf("held under a container cap of %d bytes: %d%%, limit %d; want off, limit %d", maxLimit, p, l, maxLimit)
	}
	if p, l := gcSettings(); p != p0 || l != l0 {
		t.Fatalf("released: %d%%, %d bytes; want %d%%, %d", p, l, p0, l0)
	}
}
