package analyze

import (
	"testing"

	"github.com/umtrace/umtrace/ingest/ingesttest"
)

// TestProcessesHandTheirWorkBack: in a file of two processes, each
// process's analysis hands the whole file's its merged GPU work, its
// annotated calls and its fault-driven union (collector.whole), so the
// whole analysis does not merge, annotate and union them again. A
// collector split without whole set (as from 7050471 to 2026-12-06) gave
// the same report 20-25% slower on 12M rows (docs/performance.md).
func TestProcessesHandTheirWorkBack(t *testing.T) {
	const ms = int64(1_000_000)
	tr := ingesttest.New("two.sqlite")
	for _, pid := range []int64{100, 200} {
		for s := range int64(6) {
			t0 := s * 20 * ms
			tr.Call(pid, 1, "cudaLaunchKernel", t0, t0+ms/100)
			tr.Kernel(pid, 0, 7, "gemm_kernel", t0+ms/10, t0+4*ms)
			tr.Call(pid, 1, "cudaDeviceSynchronize", t0+3*ms, t0+4*ms)
			addr := uint64(0x7f00_0000_0000) + uint64(pid)<<24 + uint64(s)<<21
			tr.GPUFault(pid, 0, t0+ms, t0+3*ms, addr, 16)
			tr.Migrate(pid, 0, t0+ms, t0+3*ms, 2<<20, addr)
		}
	}
	c, err := collectCUDA(tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	pids := c.cudaPids()
	if _, err := analyzeProcesses(c, tr, pids, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	if len(c.procCalls) != 2 || len(c.procUnion) != 2 || len(c.sortedWork) == 0 {
		t.Errorf("handed back: calls of %d processes, unions of %d, %d merged streams; want 2, 2 and some", len(c.procCalls), len(c.procUnion), len(c.sortedWork))
	}
}
