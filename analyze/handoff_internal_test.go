package analyze

import (
	"testing"

	"github.com/umtrace/umtrace/ingest/ingesttest"
)

// TestProcessesHandTheirWorkBack: in a file of two processes, each
// process's analysis hands the whole file's its merged GPU work, its
// calls' annotations (written into the file's calls) and its fault-driven
// union (collector.whole), so the
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
	waited := 0
	for _, cl := range c.calls {
		if cl.waited.name != noWork && cl.waited.end > 0 {
			waited++
		}
	}
	if !c.annotated || waited == 0 || len(c.procUnion) != 2 || len(c.sortedWork) == 0 {
		t.Errorf("handed back: calls annotated %v (%d waited for work), unions of %d, %d merged streams; want true (some), 2 and some", c.annotated, waited, len(c.procUnion), len(c.sortedWork))
	}
}

// TestAnnotate: a process's annotations are written into the file's calls
// of that process when its calls line up with them one for one, its
// start-up call aside; a call of the file's that the process lacks (other
// than the start-up one) makes annotate refuse.
func TestAnnotate(t *testing.T) {
	mk := func(pid, start int64) call { return call{start: start, end: start + 10, pid: pid, tid: 1, api: 3} }
	file := []call{mk(1, 0), mk(2, 5), mk(1, 20), mk(2, 25), mk(1, 40)}
	annotated := func(cs []call) []call {
		out := append([]call(nil), cs...)
		for i := range out {
			out[i].overlap, out[i].stream, out[i].waited = 0.5, 7, gpuWork{end: out[i].end, name: 4}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		first *call
		pcs   []call
		ok    bool
	}{
		{"all", nil, annotated([]call{mk(1, 0), mk(1, 20), mk(1, 40)}), true},
		{"start-up left out", &file[0], annotated([]call{mk(1, 20), mk(1, 40)}), true},
		{"another left out", &file[0], annotated([]call{mk(1, 0), mk(1, 40)}), false},
		{"no start-up to leave out", nil, annotated([]call{mk(1, 20), mk(1, 40)}), false},
		{"one too many", nil, annotated([]call{mk(1, 0), mk(1, 20), mk(1, 40), mk(1, 60)}), false},
	} {
		c := &collector{calls: append([]call(nil), file...), firstRT: map[int64]*call{}}
		if tc.first != nil {
			c.firstRT[1] = tc.first
		}
		if ok := c.annotate(0, 1, tc.pcs); ok != tc.ok {
			t.Errorf("%s: annotate = %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		for _, cl := range c.calls {
			want := cl.pid == 1 && (tc.first == nil || cl.start != tc.first.start)
			if got := cl.stream == 7 && cl.overlap == 0.5 && cl.waited.name == 4; got != want {
				t.Errorf("%s: call pid %d at %d annotated %v, want %v", tc.name, cl.pid, cl.start, got, want)
			}
		}
	}
}
