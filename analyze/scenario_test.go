package analyze_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/ingesttest"
)

// Scenarios: short traces written as rows (ingest/ingesttest), each
// checking one behaviour of the analysis without SQLite.

const ms = int64(1_000_000)

// training adds steps of process pid: an NVTX "train_step" range of
// 20 ms each from start, a kernel launch at the step's start, a 4 ms
// kernel, and a cudaDeviceSynchronize waiting for it (1 ms, calm). Steps
// listed in storm instead wait 8 ms, three times, while GPU page faults
// and fault-driven migrations of the process are under way.
func training(tr *ingesttest.Trace, pid, dev, start int64, steps int, storm map[int]bool) {
	const tid = 1
	for s := range steps {
		t0 := start + int64(s)*20*ms
		tr.NVTXRange(pid, tid, fmt.Sprintf("train_step %d", s), t0, t0+20*ms)
		tr.Call(pid, tid, "cudaLaunchKernel", t0, t0+ms/100)
		tr.Kernel(pid, dev, 7, "gemm_kernel", t0+ms/10, t0+4*ms)
		if !storm[s] {
			tr.Call(pid, tid, "cudaDeviceSynchronize", t0+3*ms, t0+4*ms)
			continue
		}
		for k := range int64(3) {
			c0 := t0 + 1*ms + k*6*ms
			tr.Call(pid, tid, "cudaDeviceSynchronize", c0, c0+5*ms)
			addr := uint64(0x7f00_0000_0000) + uint64(s*3+int(k))<<21
			tr.GPUFault(pid, dev, c0, c0+5*ms, addr, 64)
			tr.Migrate(pid, dev, c0+ms/10, c0+5*ms, 2<<20, addr)
		}
	}
}

func analyzeScenario(t *testing.T, tr *ingesttest.Trace) *analyze.Result {
	t.Helper()
	res, err := analyze.Analyze(tr, analyze.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestScenarioStorm: three steps whose syncs wait on page faults make one
// storm episode of their nine stalls, in those steps, after seven calm
// steps whose 1 ms syncs set the baseline: each 5 ms stall is 4 ms over it.
func TestScenarioStorm(t *testing.T) {
	tr := ingesttest.New("storm.sqlite")
	training(tr, 100, 0, 0, 10, map[int]bool{6: true, 7: true, 8: true})
	res := analyzeScenario(t, tr)
	if res.Verdict != analyze.VerdictStorm || len(res.Episodes) != 1 || len(res.Isolated) != 0 {
		t.Fatalf("%s (%s), %d episodes, %d isolated stalls; want one storm episode", res.Verdict, res.Reason, len(res.Episodes), len(res.Isolated))
	}
	e := res.Episodes[0]
	if e.StartNs != 120*ms || e.EndNs != 180*ms || e.FirstStep != 6 || e.LastStep != 8 {
		t.Errorf("episode %d..%d ns, steps %d..%d; want 120..180 ms, steps 6..8", e.StartNs, e.EndNs, e.FirstStep, e.LastStep)
	}
	if e.Stalls != 9 || e.StalledNs != 45*ms || e.ExcessNs != 36*ms || e.GPUFaults != 9*64 || e.Pid != 100 {
		t.Errorf("episode %d stalls, %d ns stalled, %d ns excess, %d faults, pid %d; want 9, 45 ms, 36 ms, 576, 100", e.Stalls, e.StalledNs, e.ExcessNs, e.GPUFaults, e.Pid)
	}
	h := res.Headline
	if h.HostBlocking != 16 || h.StormTimeNs != 60*ms || h.StormShare != 0.3 || h.MigratedBytes != 9*2<<20 {
		t.Errorf("headline %+v; want 16 syncs, 60 ms of storm (0.3 of the span), 18 MiB migrated", h)
	}
	if res.Steps.Count != 10 {
		t.Errorf("%d steps, want the 10 train_step ranges", res.Steps.Count)
	}
}

// TestScenarioHealthy: the same training without faults has no storm, and
// says why: there is no unified-memory activity at all.
func TestScenarioHealthy(t *testing.T) {
	tr := ingesttest.New("healthy.sqlite")
	training(tr, 100, 0, 0, 10, nil)
	res := analyzeScenario(t, tr)
	if res.Verdict != analyze.VerdictNoStorm || len(res.Episodes) != 0 || res.Headline.BlockedNs != 10*ms {
		t.Errorf("%s (%s), %d episodes, %d ns blocked; want no storm, 10 ms blocked", res.Verdict, res.Reason, len(res.Episodes), res.Headline.BlockedNs)
	}
	if !strings.Contains(res.Reason, "no unified-memory activity") {
		t.Errorf("reason %q does not say there is no UM activity", res.Reason)
	}
}

// TestScenarioTwoProcesses: a file of two processes, one storming, is
// read once (every table scanned once) for the whole file's analysis,
// each process's own, and the job's collectives; each process's analysis
// holds its rows only, and its host-blocking samples come with it.
func TestScenarioTwoProcesses(t *testing.T) {
	tr := ingesttest.New("two.sqlite")
	training(tr, 100, 0, 0, 10, map[int]bool{2: true, 3: true, 4: true})
	training(tr, 200, 1, 5*ms, 10, nil)
	opts := analyze.DefaultOptions()
	opts.SplitProcesses, opts.SyncSamples = true, true
	f, err := analyze.AnalyzeFile(tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Pids, []int64{100, 200}) || len(f.Processes) != 2 || f.Name != "two.sqlite" {
		t.Fatalf("file %s: pids %v, %d process analyses", f.Name, f.Pids, len(f.Processes))
	}
	if f.Whole.Verdict != analyze.VerdictStorm || f.Whole.Trace.Processes != 2 || len(f.Whole.Processes) != 2 {
		t.Errorf("whole file: %s, %d processes", f.Whole.Verdict, f.Whole.Trace.Processes)
	}
	for i, want := range []string{analyze.VerdictStorm, analyze.VerdictNoStorm} {
		p := f.Processes[i]
		if p.Verdict != want || p.Trace.Processes != 1 || p.Headline.HostBlocking != []int{16, 10}[i] {
			t.Errorf("pid %d: %s, %d processes, %d syncs; want %s, 1, %d", f.Pids[i], p.Verdict, p.Trace.Processes, p.Headline.HostBlocking, want, []int{16, 10}[i])
		}
	}
	if n := len(f.Sync["cudaDeviceSynchronize"]); n != 26 {
		t.Errorf("%d sync samples, want the file's 26", n)
	}
	for _, tb := range []*ingest.Table{ingest.API, ingest.Kernel, ingest.Memcpy, ingest.GPUFault, ingest.NVTX} {
		if n := tr.Scans(tb); n != 1 {
			t.Errorf("table %s scanned %d times, want once", tb.Name, n)
		}
	}
}
