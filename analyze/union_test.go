package analyze

import (
	"cmp"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/umtrace/umtrace/ingest/ingesttest"
)

// TestFaultUnion: a process's GPU fault groups and demand migrations merge
// into disjoint spans (a prefetch does not count, an empty fault group
// counts as 1 ns); a process whose own analysis gave its union keeps it.
func TestFaultUnion(t *testing.T) {
	gf := []gfault{{start: 0, dur: 10, pid: 1}, {start: 5, dur: 15, pid: 1}, {start: 100, dur: 0, pid: 1}, {start: 0, dur: 50, pid: 2}}
	var cls migClasses
	mig := []migration{
		cls.make(15, 15, 0, 1, 11, 2, 0), // page fault: joins [0,20)
		cls.make(40, 10, 0, 1, 11, 1, 0), // user prefetch: not demand
		cls.make(60, 5, 0, 1, 11, 3, 0),  // speculative prefetch: demand
		cls.make(200, 5, 0, 2, 11, 2, 0), // pid 2's union was given
	}
	given := map[int64][]span{2: {{7, 8}}}
	u := faultUnion(gf, mig, &cls, given)
	if want := []span{{0, 30}, {60, 65}, {100, 101}}; !slices.Equal(u[1], want) {
		t.Errorf("pid 1: %v, want %v", u[1], want)
	}
	if !slices.Equal(u[2], given[2]) || len(u) != 2 {
		t.Errorf("pid 2: %v (want the given %v), %d processes", u[2], given[2], len(u))
	}
}

// TestNewGFault: a fault group's end before its start is a 0 ns group (as
// every figure took it), and only durations past 4.29 s or counts outside
// 0..2^32-1 are clamped, to those bounds, and said to be.
func TestNewGFault(t *testing.T) {
	for _, c := range []struct {
		start, end, n int64
		dur, count    uint32
		clamped       bool
	}{
		{100, 250, 7, 150, 7, false},
		{100, 40, 7, 0, 7, false}, // an end before the start
		{0, math.MaxUint32, 1, math.MaxUint32, 1, false},
		{0, math.MaxUint32 + 1, 1, math.MaxUint32, 1, true},
		{0, 10, math.MaxUint32, 10, math.MaxUint32, false},
		{0, 10, math.MaxUint32 + 1, 10, math.MaxUint32, true},
		{0, 10, -3, 10, 0, true},
	} {
		g, clamped := newGFault(c.start, c.end, 4242, 0x7f00, c.n, 1)
		if g.dur != c.dur || g.n != c.count || clamped != c.clamped || g.end() != c.start+int64(c.dur) || g.pid != 4242 || g.dev != 1 || g.addr != 0x7f00 {
			t.Errorf("newGFault(%d, %d, n %d) = %+v, clamped %v; want dur %d, n %d, clamped %v", c.start, c.end, c.n, g, clamped, c.dur, c.count, c.clamped)
		}
	}
	if s := unsafe.Sizeof(gfault{}); s != 32 {
		t.Errorf("a gfault is %d bytes, want 32", s)
	}
	if s := unsafe.Sizeof(cfault{}); s != 24 {
		t.Errorf("a cfault is %d bytes, want 24", s)
	}
}

// TestGFaultClampedWarned: a GPU fault group longer than 4.29 s is
// clamped and the result says so, the whole file's and its process's
// (split) alike; the other process's result does not.
func TestGFaultClampedWarned(t *testing.T) {
	const ms = int64(1_000_000)
	tr := ingesttest.New("long-fault.sqlite")
	for _, pid := range []int64{100, 200} {
		tr.Call(pid, 1, "cudaLaunchKernel", 0, ms/100)
		tr.Kernel(pid, 0, 7, "gemm_kernel", ms/10, 4*ms)
		tr.Call(pid, 1, "cudaDeviceSynchronize", 3*ms, 4*ms)
	}
	tr.GPUFault(100, 0, ms, ms+5_000*ms, 0x7f00_0000_0000, 16) // 5 s
	tr.GPUFault(200, 0, ms, 2*ms, 0x7f10_0000_0000, 16)
	opts := DefaultOptions()
	opts.SplitProcesses = true
	f, err := AnalyzeFile(tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	warned := func(r *Result) bool {
		for _, w := range r.Warnings {
			if strings.HasPrefix(w, "1 GPU page-fault records longer than 4.29 s") {
				return true
			}
		}
		return false
	}
	if !warned(f.Whole) {
		t.Errorf("whole file: no clamp warning in %q", f.Whole.Warnings)
	}
	if len(f.Processes) != 2 || !warned(f.Processes[0]) || warned(f.Processes[1]) {
		t.Errorf("processes: %d results; want the warning in pid 100's only", len(f.Processes))
	}
	if got := f.Whole.UnifiedMemory.GPUFaultNs; got != math.MaxUint32+ms {
		t.Errorf("GPU fault time %d ns, want the clamped group's %d and the other's %d", got, int64(math.MaxUint32), ms)
	}
}

// TestFaultUnionSliced: the union swept in time slices on several
// goroutines and joined equals one sweep over the whole lists, for
// records of three processes whose spans cross the slices' bounds, with
// ties at a bound and a process whose union was given.
func TestFaultUnionSliced(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 6 {
		n := 3 * unionChunk
		gf := make([]gfault, n)
		mig := make([]migration, n)
		var cls migClasses
		for i := range gf {
			gf[i] = gfault{start: int64(rng.IntN(40 * n)), dur: uint32(rng.IntN(50 << trial)), pid: int32(1 + rng.IntN(3))}
			mig[i] = cls.make(int64(rng.IntN(40*n)), uint32(rng.IntN(50<<trial)), 0, int32(1+rng.IntN(3)), 11, int8(1+rng.IntN(3)), 0)
			if trial == 0 { // every process's 10 ns spans on a 10 ns grid touch, across the bounds too
				gf[i] = gfault{start: 10 * int64(i/3), dur: 10, pid: int32(1 + i%3)}
				mig[i] = cls.make(10*int64(i/3), 10, 0, int32(1+i%3), 11, 2, 0)
			}
		}
		slices.SortFunc(gf, func(x, y gfault) int { return cmp.Compare(x.start, y.start) })
		slices.SortFunc(mig, func(x, y migration) int { return cmp.Compare(x.start, y.start) })
		given := map[int64][]span{3: {{7, 8}}}
		want := map[int64][]span{3: given[3]}
		for pid, u := range unionSweep(gf, mig, &cls, given) {
			want[pid] = *u
		}
		prev := runtime.GOMAXPROCS(4)
		got := faultUnion(gf, mig, &cls, given)
		runtime.GOMAXPROCS(prev)
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d processes, want %d", trial, len(got), len(want))
		}
		for pid, u := range want {
			if !slices.Equal(got[pid], u) {
				t.Errorf("trial %d pid %d: %d spans, want %d", trial, pid, len(got[pid]), len(u))
			}
		}
	}
}

// TestForEach: every index is handed over exactly once, on no more
// goroutines than asked for, each numbered below that.
func TestForEach(t *testing.T) {
	for _, c := range []struct{ n, workers int }{{0, 4}, {1, 4}, {1000, 3}, {5, 64}} {
		seen := make([]atomic.Int32, c.n)
		var maxWorker atomic.Int32
		forEach(c.n, c.workers, func(w, i int) {
			seen[i].Add(1)
			for m := maxWorker.Load(); int32(w) > m && !maxWorker.CompareAndSwap(m, int32(w)); m = maxWorker.Load() {
			}
		})
		for i := range seen {
			if seen[i].Load() != 1 {
				t.Fatalf("n %d: index %d handed over %d times", c.n, i, seen[i].Load())
			}
		}
		if int(maxWorker.Load()) >= max(1, min(c.workers, c.n)) {
			t.Errorf("n %d, %d workers: worker %d", c.n, c.workers, maxWorker.Load())
		}
	}
}
