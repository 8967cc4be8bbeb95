package e2evpp

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// VPP's main heap in the suite. VPP's default main heap is 1 GiB of
// 4 KiB pages, each faulted in when first used: in this project's 2-CPU
// paravirtualized VM a page fault is dear, and W(10000)'s first
// programming spent ~40 % of VPP's time in them (docs/real-vpp.md). So
// each VPP gets a main heap of mainHeapMB on 2 MiB huge pages (`memory {
// main-heap-page-size default-hugepage }`: reserved at start,
// as a production node runs VPP), and the suite reserves the huge pages
// it needs (as VPP's packages reserve theirs at install) unless
// $E2EVPP_MAIN_HEAP is "4k": VPP's default heap then. Where the kernel
// has no huge pages or will not reserve them, the suite runs on VPP's
// default heap too and says why (the heap changes timings, not results);
// E2EVPP_MAIN_HEAP=huge makes that an error.
const (
	mainHeapEnv = "E2EVPP_MAIN_HEAP"
	mainHeapMB  = 512
	// heapVPPs is how many VPPs at once the reservation holds: a cluster's
	// two, and one more for a restarted VPP whose predecessor is still
	// exiting.
	heapVPPs = 3
	// hugeOtherMB is what else a VPP takes of huge pages: its buffer
	// pool (16 384 buffers, ~38 MiB; VPP raises vm.nr_hugepages for it
	// itself, but not for its heap, so the heap must not find the pages
	// taken by another VPP's buffers).
	hugeOtherMB = 64

	nrHugepages = "/proc/sys/vm/nr_hugepages"
)

// mainHeap sets env.heap (the VPP startup configuration's memory
// section, "" for VPP's default) and env.heapNote, reserving huge pages
// when too few are free; it says what it did.
func mainHeap() error {
	env.heapNote = "VPP's default main heap (4 KiB pages)"
	switch v := os.Getenv(mainHeapEnv); v {
	case "4k":
		return nil
	case "huge":
		return hugeHeap()
	case "":
		if err := hugeHeap(); err != nil {
			env.heapNote += ": " + err.Error()
		}
		return nil
	default:
		return fmt.Errorf("%s=%q: want huge or 4k (unset: huge where the kernel gives the pages)", mainHeapEnv, v)
	}
}

// hugeHeap reserves the huge pages for heapVPPs main heaps and sets
// env.heap to use them.
func hugeHeap() error {
	m, err := meminfo()
	if err != nil {
		return err
	}
	pageKB := m["Hugepagesize"]
	if pageKB == 0 {
		return fmt.Errorf("no huge pages on this kernel (/proc/meminfo has no Hugepagesize)")
	}
	need := heapVPPs * (mainHeapMB + hugeOtherMB) * 1024 / pageKB
	if free := m["HugePages_Free"]; free < need {
		before := m["HugePages_Total"]
		total := before + need - free
		if err := os.WriteFile(nrHugepages, []byte(strconv.Itoa(total)), 0); err != nil {
			return fmt.Errorf("reserving huge pages for VPP's main heap: %w", err)
		}
		env.restoreHeap = func() {
			if err := os.WriteFile(nrHugepages, []byte(strconv.Itoa(before)), 0); err != nil {
				fmt.Printf("e2evpp: vm.nr_hugepages left at %d: %v\n", total, err)
			}
		}
		if m, err = meminfo(); err != nil {
			return err
		}
		if m["HugePages_Free"] < need {
			return fmt.Errorf("%d huge pages of %d kB free after asking for %d in all; VPP's main heaps need %d",
				m["HugePages_Free"], pageKB, total, need)
		}
		fmt.Printf("e2evpp: vm.nr_hugepages raised to %d for VPP's main heaps (%d free were %d), until the suite ends\n", m["HugePages_Total"], need, free)
	}
	env.heap = fmt.Sprintf("memory { main-heap-size %dM main-heap-page-size default-hugepage }\n", mainHeapMB)
	env.heapNote = fmt.Sprintf("VPP's main heap %d MiB on %d kB huge pages", mainHeapMB, pageKB)
	return nil
}

// meminfo reads /proc/meminfo's numbers (kB or counts) by name.
func meminfo() (map[string]int, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if f := strings.Fields(rest); ok && len(f) > 0 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				m[name] = n
			}
		}
	}
	return m, sc.Err()
}
