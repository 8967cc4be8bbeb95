package sim

import (
	"net/netip"
	"path/filepath"
	"sort"
	"testing"
)

// The verdict records (testdata/records-verdicts, README.md there) were
// made by plugins/vpp's lab test on a real VPP 25.02 started with the
// lab's startup configuration (labInterfaces, tables 1 for IPv4 and
// IPv6). TestRecordsVerdicts replays each file against a simulated VPP
// with those interfaces and compares every reply field by field (but for
// recordsIgnore), the crash included.

// labInterfaces are the lab's startup interfaces, in creation order
// (indices 1..5).
var labInterfaces = []InterfaceSpec{
	{Name: "host-hvo0", MAC: mac("02:fe:0a:00:00:01"), Address: netip.MustParsePrefix("192.168.16.1/24")},
	{Name: "loop0", MAC: mac("de:ad:00:00:00:00"), VRF: 1, Address: netip.MustParsePrefix("10.1.1.1/32")},
	{Name: "host-hvc0", MAC: mac("02:fe:0a:00:00:02"), VRF: 1},
	{Name: "host-hvb0", MAC: mac("02:fe:0a:00:00:03"), VRF: 1},
	{Name: "host-hvd0", MAC: mac("02:fe:0a:00:00:04")},
}

func TestRecordsVerdicts(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "records-verdicts", "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no records in testdata/records-verdicts")
	}
	sort.Strings(files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if n := replayRecords(t, f, labInterfaces); n == 0 {
				t.Fatal("nothing compared")
			}
		})
	}
}
