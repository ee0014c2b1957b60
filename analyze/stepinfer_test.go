package analyze_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/ingest/ingesttest"
)

// Scenarios of steps inferred from a trace's periodic structure (issue
// 27): no NVTX range marks iterations, so the iterations are taken from a
// mark that recurs once per iteration, and only when its period is clear.

// loop adds n iterations of process 100 from start, each period long: a
// kernel launch, a 3 ms kernel, then the host waits for it with sync
// (whose return ends the iteration's GPU wait) and works on its own until
// the next iteration. jitter[i], when given, is added to iteration i's
// length.
func loop(tr *ingesttest.Trace, sync string, start, period int64, n int, jitter []int64) {
	t := start
	for i := range n {
		tr.Call(100, 1, "cudaLaunchKernel", t, t+ms/100)
		tr.Kernel(100, 0, 7, "gemm_kernel", t+ms/10, t+3*ms)
		tr.Call(100, 1, sync, t+ms/2, t+3*ms+ms/20)
		t += period
		if i < len(jitter) {
			t += jitter[i]
		}
	}
}

// TestInferStepsFromHostSync: a loop with no NVTX marks that ends each of
// its 12 iterations in cudaStreamSynchronize (as `loss.item()` or a host
// read of a result does), every 20 ms give or take 0.3 ms: 11 steps
// between the 12 returns, inferred, each 20 ms.
func TestInferStepsFromHostSync(t *testing.T) {
	tr := ingesttest.New("loop.sqlite")
	tr.Call(100, 1, "cudaMalloc", 0, 5*ms) // start-up
	loop(tr, "cudaStreamSynchronize", 10*ms, 20*ms, 12, []int64{300_000, -200_000, 100_000, 0, -300_000, 200_000})
	st := analyzeScenario(t, tr).Steps
	if st.Source != "inferred" || st.Count != 11 || st.Range != "" {
		t.Fatalf("steps %q x%d from %q, want 11 inferred", st.Range, st.Count, st.Source)
	}
	if st.Confidence != "medium" || !strings.Contains(st.Evidence, "12 cudaStreamSynchronize returns recur every 20") {
		t.Errorf("confidence %q, evidence %q", st.Confidence, st.Evidence)
	}
	if d := st.Duration.Median; d < 19.5e6 || d > 20.5e6 {
		t.Errorf("median step %.0f ns, want 20 ms", d)
	}
	if r := st.Rows[0]; r.Name != "iteration 0 (inferred)" || r.StartNs != 10*ms+3*ms+ms/20 {
		t.Errorf("first step %+v", r)
	}
}

// TestInferStepsTwoSyncsPerIteration: each iteration syncs twice (after
// its kernel, and after prefetching the results back to the host), 4 ms
// then 16 ms apart: the iterations are the 20 ms pattern, not the syncs.
func TestInferStepsTwoSyncsPerIteration(t *testing.T) {
	tr := ingesttest.New("twosync.sqlite")
	for i := range int64(10) {
		t0 := i * 20 * ms
		tr.Call(100, 1, "cudaLaunchKernel", t0, t0+ms/100)
		tr.Kernel(100, 0, 7, "gemm_kernel", t0+ms/10, t0+3*ms)
		tr.Call(100, 1, "cudaStreamSynchronize", t0+ms, t0+3*ms)
		tr.Call(100, 1, "cudaStreamSynchronize", t0+5*ms, t0+7*ms)
	}
	st := analyzeScenario(t, tr).Steps
	if st.Source != "inferred" || st.Count != 9 || st.Confidence != "low" || !strings.Contains(st.Evidence, "2 per iteration") {
		t.Fatalf("steps x%d from %q (%s: %s), want 9 of 2 syncs each", st.Count, st.Source, st.Confidence, st.Evidence)
	}
	if d := st.Duration.Median; d != 20e6 {
		t.Errorf("median step %.0f ns, want 20 ms", d)
	}
	if st.Rows[0].StartNs != 3*ms {
		t.Errorf("first step starts at %d, want the first kernel's sync return (3 ms)", st.Rows[0].StartNs)
	}
}

// TestInferStepsFromNCCL: a data-parallel rank's iterations each end in
// two NCCL all-reduces (gradient buckets) and no host sync at all: the
// collective groups, every 25 ms, are the iterations.
func TestInferStepsFromNCCL(t *testing.T) {
	const nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
	tr := ingesttest.New("ddp.sqlite")
	for i := range int64(8) {
		t0 := i * 25 * ms
		tr.Call(100, 1, "cudaLaunchKernel", t0, t0+ms/100)
		tr.Kernel(100, 0, 7, "gemm_kernel", t0+ms/10, t0+15*ms)
		tr.Kernel(100, 0, 8, nccl, t0+15*ms, t0+17*ms)
		tr.Kernel(100, 0, 8, nccl, t0+18*ms, t0+20*ms)
	}
	st := analyzeScenario(t, tr).Steps
	if st.Source != "inferred" || st.Count != 7 || !strings.Contains(st.Evidence, "NCCL collective kernels, 2 per iteration recur every 25") {
		t.Fatalf("steps x%d from %q: %s", st.Count, st.Source, st.Evidence)
	}
}

// TestInferStepsFromNCCLRanges: a rank traced without its kernels' names
// but with PyTorch's NVTX ranges around each collective ("nccl:all_reduce",
// an op range, never a step itself): one every 30 ms, the iterations.
func TestInferStepsFromNCCLRanges(t *testing.T) {
	tr := ingesttest.New("ncclnvtx.sqlite")
	for i := range int64(9) {
		t0 := i * 30 * ms
		tr.Call(100, 1, "cudaLaunchKernel", t0, t0+ms/100)
		tr.Kernel(100, 0, 7, "gemm_kernel", t0+ms/10, t0+20*ms)
		tr.NVTXRange(100, 1, "nccl:all_reduce", t0+20*ms, t0+ms/5+20*ms)
	}
	st := analyzeScenario(t, tr).Steps
	if st.Source != "inferred" || st.Count != 8 || !strings.Contains(st.Evidence, "9 NCCL NVTX ranges recur every 30") {
		t.Fatalf("steps x%d from %q: %s", st.Count, st.Source, st.Evidence)
	}
}

// TestInferStepsFromGraphLaunches: a loop replaying one CUDA graph every
// 10 ms (the host never waits): its launches are the iterations.
func TestInferStepsFromGraphLaunches(t *testing.T) {
	tr := ingesttest.New("graph.sqlite")
	for i := range int64(7) {
		t0 := i * 10 * ms
		tr.Call(100, 1, "cudaGraphLaunch", t0, t0+ms/50)
		tr.Kernel(100, 0, 7, "gemm_kernel", t0+ms/10, t0+8*ms)
	}
	st := analyzeScenario(t, tr).Steps
	if st.Source != "inferred" || st.Count != 6 || !strings.Contains(st.Evidence, "7 CUDA graph launches recur every 10") {
		t.Fatalf("steps x%d from %q: %s", st.Count, st.Source, st.Evidence)
	}
}

// TestNoStepsFromAperiodicSyncs: syncs at irregular moments (an
// application that waits when it needs a result) are noise, not
// iterations: no steps, and the source says what to record.
func TestNoStepsFromAperiodicSyncs(t *testing.T) {
	tr := ingesttest.New("irregular.sqlite")
	t0 := int64(0)
	for _, gap := range []int64{7, 31, 12, 55, 9, 23, 41, 5, 18, 37, 14, 29, 61, 8, 26} {
		t0 += gap * ms
		tr.Call(100, 1, "cudaLaunchKernel", t0, t0+ms/100)
		tr.Kernel(100, 0, 7, "gemm_kernel", t0+ms/10, t0+2*ms)
		tr.Call(100, 1, "cudaDeviceSynchronize", t0+ms, t0+2*ms)
	}
	st := analyzeScenario(t, tr).Steps
	if st.Count != 0 || st.Source == "inferred" {
		t.Fatalf("steps x%d from %q (%s), want none", st.Count, st.Source, st.Evidence)
	}
	if !strings.Contains(st.Source, "recurs with a clear period") || !strings.Contains(st.Source, "--step-range") {
		t.Errorf("source %q should say no period is clear and what to record", st.Source)
	}
}

// TestNoStepsFromTooFewOrUncovered: a clear period needs at least five
// iterations, every one of them (but the first) near the period, and
// iterations that cover most of the process: four periodic syncs, ten
// periodic syncs in the first 5% of a process whose GPU then works for
// another second, or ten periodic syncs and then one a second later, are
// no steps.
func TestNoStepsFromTooFewOrUncovered(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		tail int64
		sync bool
	}{{"four", 5, 0, false}, {"brief", 10, 1000 * ms, false}, {"pause", 10, 1000 * ms, true}} {
		t.Run(tc.name, func(t *testing.T) {
			tr := ingesttest.New(tc.name + ".sqlite")
			loop(tr, "cudaDeviceSynchronize", 0, 5*ms, tc.n, nil)
			if tc.tail > 0 {
				tr.Kernel(100, 0, 7, "long_kernel", 60*ms, 60*ms+tc.tail)
				if tc.sync {
					tr.Call(100, 1, "cudaDeviceSynchronize", 60*ms, 60*ms+tc.tail)
				}
			}
			if st := analyzeScenario(t, tr).Steps; st.Count != 0 {
				t.Errorf("%d steps from %q: %s", st.Count, st.Source, st.Evidence)
			}
		})
	}
}

// TestNamedStepsBeforeInferred: an NVTX range named like an iteration
// wins over any periodic mark.
func TestNamedStepsBeforeInferred(t *testing.T) {
	tr := ingesttest.New("named.sqlite")
	loop(tr, "cudaStreamSynchronize", 0, 20*ms, 10, nil)
	for i := range int64(10) {
		tr.NVTXRange(100, 1, fmt.Sprintf("step %d", i), i*20*ms, (i+1)*20*ms)
	}
	if st := analyzeScenario(t, tr).Steps; st.Source != "detected" || st.Range != "step N" || st.Count != 10 {
		t.Errorf("steps %q x%d from %q", st.Range, st.Count, st.Source)
	}
}

// TestInferStepsPerProcess: one file of two processes without NVTX, each
// with its own loop (20 ms and 30 ms iterations ending in a sync, and one
// of the graph launches every 30 ms): each process's analysis infers its
// own iterations, and the whole file's holds both processes' steps.
func TestInferStepsPerProcess(t *testing.T) {
	tr := ingesttest.New("two.sqlite")
	for i := range int64(10) {
		t0 := i * 20 * ms
		tr.Call(100, 1, "cudaLaunchKernel", t0, t0+ms/100)
		tr.Kernel(100, 0, 7, "gemm_kernel", t0+ms/10, t0+3*ms)
		tr.Call(100, 1, "cudaDeviceSynchronize", t0+ms, t0+3*ms)
	}
	for i := range int64(7) {
		t0 := i * 30 * ms
		tr.Call(200, 1, "cudaGraphLaunch", t0, t0+ms/50)
		tr.Kernel(200, 1, 7, "gemm_kernel", t0+ms/10, t0+8*ms)
	}
	opts := analyze.DefaultOptions()
	opts.SplitProcesses = true
	f, err := analyze.AnalyzeFile(tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Processes) != 2 {
		t.Fatalf("%d processes", len(f.Processes))
	}
	for k, want := range []struct {
		n    int
		mark string
	}{{9, "cudaDeviceSynchronize returns recur every 20"}, {6, "CUDA graph launches recur every 30"}} {
		st := f.Processes[k].Steps
		if st.Source != "inferred" || st.Count != want.n || !strings.Contains(st.Evidence, want.mark) {
			t.Errorf("pid %d: %d steps from %q: %s", f.Pids[k], st.Count, st.Source, st.Evidence)
		}
	}
	if st := f.Whole.Steps; st.Count != 15 || !strings.Contains(st.Evidence, "pid 100") || !strings.Contains(st.Evidence, "pid 200") {
		t.Errorf("whole file: %d steps: %s", st.Count, st.Evidence)
	}
}
