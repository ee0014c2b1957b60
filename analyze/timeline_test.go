package analyze_test

import (
	"testing"

	"github.com/umtrace/umtrace/analyze/analyzetest"
	"github.com/umtrace/umtrace/ingest/testshared"
)

// TestTimelineLanesPerProcess: a trace holding several processes gets one
// timeline lane per process; the lanes add up to the whole-trace bins,
// their faults equal GROUP BY process on the export, and only the storming
// process's lane is marked storm.
func TestTimelineLanesPerProcess(t *testing.T) {
	r, res := analyzetest.Open(t, testshared.Testdata("reproducer", "multi", "multi-process.sqlite"))
	tl := res.Timeline
	if len(tl.Lanes) != 2 || len(res.Processes) != 2 {
		t.Fatalf("%d lanes, %d processes; want 2 and 2", len(tl.Lanes), len(res.Processes))
	}
	gpu, cpu := map[int64]int64{}, map[int64]int64{}
	for _, row := range queryInts(t, r.DB(), `SELECT (globalPid >> 24) & 16777215, SUM(numberOfPageFaults) FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS GROUP BY 1`) {
		gpu[row[0]] = row[1]
	}
	for _, row := range queryInts(t, r.DB(), `SELECT (globalPid >> 24) & 16777215, COUNT(*) FROM CUDA_UM_CPU_PAGE_FAULT_EVENTS GROUP BY 1`) {
		cpu[row[0]] = row[1]
	}
	stormPids := map[int64]bool{}
	for _, e := range res.Episodes {
		stormPids[e.Pid] = true
	}
	for i, l := range tl.Lanes {
		if l.Pid != res.Processes[i].Pid || len(l.Bins) != len(tl.Bins) {
			t.Fatalf("lane %d: pid %d with %d bins; process %d, %d bins", i, l.Pid, len(l.Bins), res.Processes[i].Pid, len(tl.Bins))
		}
		var g, c int64
		storm := false
		for _, b := range l.Bins {
			g += b.GPUFaults
			c += b.CPUFaults
			storm = storm || b.Storm
		}
		if g != gpu[l.Pid] || c != cpu[l.Pid] || g == 0 {
			t.Errorf("pid %d: lane faults %d GPU %d CPU, export %d / %d", l.Pid, g, c, gpu[l.Pid], cpu[l.Pid])
		}
		if storm != stormPids[l.Pid] {
			t.Errorf("pid %d: lane storm %v, episodes on it %v", l.Pid, storm, stormPids[l.Pid])
		}
	}
	for i, b := range tl.Bins {
		var blocked, gf, cf, mig int64
		stalls, storm := 0, false
		for _, l := range tl.Lanes {
			x := l.Bins[i]
			if x.StartNs != b.StartNs {
				t.Fatalf("bin %d: lane starts at %d, trace bin at %d", i, x.StartNs, b.StartNs)
			}
			blocked, gf, cf, mig = blocked+x.BlockedNs, gf+x.GPUFaults, cf+x.CPUFaults, mig+x.DemandBytes
			stalls += x.Stalls
			storm = storm || x.Storm
		}
		if blocked != b.BlockedNs || gf != b.GPUFaults || cf != b.CPUFaults || mig != b.DemandBytes || stalls != b.Stalls || storm != b.Storm {
			t.Errorf("bin %d: lanes sum to %d ns %d/%d faults %d B %d stalls storm %v; trace bin %+v", i, blocked, gf, cf, mig, stalls, storm, b)
		}
	}
	// One process: no lanes.
	if _, one := analyzetest.Open(t, testshared.Testdata("traces", "um_pingpong_default.sqlite")); len(one.Timeline.Lanes) != 0 {
		t.Errorf("single-process trace has %d lanes", len(one.Timeline.Lanes))
	}
}
