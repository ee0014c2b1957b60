package multirank_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/multirank"
	"github.com/umtrace/umtrace/ingest/ingesttest"
)

const ms = int64(1_000_000)

// TestScenarioStraggler: one file, two ranks (processes on their own
// GPU) meeting at an NCCL all-reduce at the end of every 20 ms step. In
// steps 6-8 pid 100 stalls on page faults and reaches the all-reduce at
// 17 ms instead of 8 ms: pid 200 waits 9 ms each time, and the job charges
// those waits to pid 100's storm (rank 0: ranks name nothing, so they are
// numbered by pid).
func TestScenarioStraggler(t *testing.T) {
	tr := ingesttest.New("job.sqlite")
	tr.Info().SessionStartUTCNs = 1_700_000_000_000_000_000
	const nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
	for s := range int64(10) {
		t0 := s * 20 * ms
		storm := s >= 6 && s <= 8
		arrive := map[int64]int64{100: t0 + 8*ms, 200: t0 + 8*ms}
		if storm {
			arrive[100] = t0 + 17*ms
		}
		end := max(arrive[100], arrive[200]) + ms
		for _, pid := range []int64{100, 200} {
			dev := pid/100 - 1
			tr.NVTXRange(pid, 1, fmt.Sprintf("train_step %d", s), t0, t0+20*ms)
			tr.Call(pid, 1, "cudaLaunchKernel", t0, t0+ms/100)
			tr.Kernel(pid, dev, 7, "gemm_kernel", t0+ms/10, t0+4*ms)
			tr.Kernel(pid, dev, 8, nccl, arrive[pid], end)
			if !(storm && pid == 100) {
				tr.Call(pid, 1, "cudaDeviceSynchronize", t0+3*ms, t0+4*ms)
				continue
			}
			for k := range int64(3) {
				c0 := t0 + 1*ms + k*5*ms
				addr := uint64(0x7f00_0000_0000) + uint64(s*3+k)<<21
				tr.Call(pid, 1, "cudaDeviceSynchronize", c0, c0+5*ms)
				tr.GPUFault(pid, dev, c0, c0+5*ms, addr, 64)
				tr.Migrate(pid, dev, c0+ms/10, c0+5*ms, 2<<20, addr)
			}
		}
	}
	opts := analyze.DefaultOptions()
	opts.SplitProcesses = true
	f, err := analyze.AnalyzeFile(tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	jr, err := multirank.Analyze([]*analyze.File{f})
	if err != nil {
		t.Fatal(err)
	}
	if len(jr.Ranks) != 2 || jr.Ranks[0].Pid != 100 || jr.Collective != "nccl kernels" || jr.Verdict != analyze.VerdictStorm {
		t.Fatalf("ranks %+v, collectives from %q, verdict %s", jr.Ranks, jr.Collective, jr.Verdict)
	}
	var steps []int
	for _, a := range jr.Attributions {
		steps = append(steps, a.Step)
		if a.StragglerRank != 0 || a.LateNs != 4500*1000 || a.WaitNs != 9*ms || len(a.Waiters) != 1 || a.Waiters[0].Rank != 1 {
			t.Errorf("step %d: straggler %d, %d ns late, waiters %+v", a.Step, a.StragglerRank, a.LateNs, a.Waiters)
		}
	}
	if !slices.Equal(steps, []int{6, 7, 8}) {
		t.Errorf("attributions in steps %v, want 6, 7, 8", steps)
	}
	if len(jr.Stragglers) != 1 || jr.Stragglers[0].WaitNs != 27*ms || jr.Ranks[1].WaitOnOthersNs != 27*ms || jr.Ranks[0].CausedWaitNs != 27*ms {
		t.Errorf("stragglers %+v, rank 1 waited %d ns, rank 0 caused %d ns; want 27 ms", jr.Stragglers, jr.Ranks[1].WaitOnOthersNs, jr.Ranks[0].CausedWaitNs)
	}
}
