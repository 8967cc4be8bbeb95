package agent

import (
	"bufio"
	"bytes"
	"io/fs"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The container's memory limit. The start's collector hold (startgc.go)
// lets the heap grow by controller.startupHeapMiB without collecting; in a
// container whose memory limit lies below that, the kernel would kill the
// agent before the runtime's soft limit made it collect. The hold's limit
// is therefore kept to a share of the cgroup's memory limit, read as the
// kernel exposes it to the process.

// cgroupShare is the share of the cgroup's memory limit the hold lets the
// Go runtime's memory reach: the rest is for what the runtime does not
// count (the binary, thread stacks of the kernel, page cache charged to
// the container) and for the collection the limit then starts.
const cgroupShare = 0.75

// cgroupMemoryLimit returns the lowest memory limit of the process's
// cgroup and of its ancestors visible to it, in bytes, and whether there
// is one. fsys is the root of the filesystem ("/" on the node) and
// selfCgroup the content of /proc/self/cgroup. Both cgroup v2 (the
// unified "0::" line, memory.max) and v1 (the "memory" controller's line,
// memory.limit_in_bytes) are read; "max" and v1's page-rounded
// "unlimited" value mean no limit.
func cgroupMemoryLimit(fsys fs.FS, selfCgroup []byte) (int64, bool) {
	limit, found := int64(math.MaxInt64), false
	sc := bufio.NewScanner(bytes.NewReader(selfCgroup))
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		id, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		ctrls, p, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		var mount, file string
		switch {
		case id == "0" && ctrls == "":
			mount, file = "sys/fs/cgroup", "memory.max"
		case slices.Contains(strings.Split(ctrls, ","), "memory"):
			mount, file = "sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		// The process's cgroup and each ancestor under the mount: a
		// parent's limit (the pod's) binds the container too.
		for dir := path.Clean("/" + p); ; dir = path.Dir(dir) {
			if l, ok := readLimit(fsys, path.Join(mount, dir, file)); ok && l < limit {
				limit, found = l, true
			}
			if dir == "/" {
				break
			}
		}
	}
	return limit, found
}

// readLimit reads one limit file; false when it is absent, unreadable or
// says there is no limit.
func readLimit(fsys fs.FS, name string) (int64, bool) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	// cgroup v1 writes "no limit" as the largest page-aligned int64.
	if err != nil || v <= 0 || v >= math.MaxInt64&^(1<<12-1) {
		return 0, false
	}
	return v, true
}

// containerMemoryCap is the most the start's hold lets the Go runtime's
// memory reach under the process's cgroup (math.MaxInt64: no limit).
func containerMemoryCap() int64 {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return math.MaxInt64
	}
	l, ok := cgroupMemoryLimit(os.DirFS("/"), self)
	if !ok {
		return math.MaxInt64
	}
	return int64(float64(l) * cgroupShare)
}
