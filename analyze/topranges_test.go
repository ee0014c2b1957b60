package analyze

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestTopRangesShared: faults and migrations attributed on several
// goroutines, each taking its share of the 2 MiB blocks, give the ranges
// one pass gives: an allocation whose records fall in several shares is
// added up once, and the block ranges that start where an allocation does
// (past an allocation nested in it) stay apart from it as in one pass.
func TestTopRangesShared(t *testing.T) {
	const mib = 1 << 20
	allocs := []alloc{
		{addr: 2 * mib, bytes: 4096},          // block-aligned and small: its block's other addresses share its start
		{addr: 16*mib - 256, bytes: 8 * mib},  // across five blocks
		{addr: 40 * mib, bytes: 4 * mib},      // two whole blocks
		{addr: 40*mib + 4096, bytes: 1 << 16}, // inside the one before: past it, its block's addresses fall to a block range at 40 MiB
	}
	for trial := range 4 {
		rng := rand.New(rand.NewPCG(9, uint64(trial)))
		addr := func() uint64 {
			switch rng.IntN(5) {
			case 4:
				return 40*mib + uint64(rng.IntN(4*mib))
			case 0:
				return 2*mib + uint64(rng.IntN(2*mib)) // the small allocation or the rest of its block
			case 1:
				return 16*mib + uint64(rng.IntN(9*mib)) - 512
			default:
				return uint64(rng.IntN(64 * mib))
			}
		}
		n := 3 * rangeChunk
		c := &collector{allocs: allocs}
		for i := range n {
			c.gfaults = append(c.gfaults, gfault{start: int64(i), addr: addr(), n: uint32(1 + rng.IntN(5))})
			c.cfaults = append(c.cfaults, cfault{t: int64(i), addr: addr()})
			c.migrations = append(c.migrations, c.migClasses.make(int64(i), 0, uint32(4096*(1+rng.IntN(16))), 0, 0, 0, addr()))
		}
		if trial%2 == 1 { // migrations alone
			c.gfaults, c.cfaults = c.gfaults[:0], c.cfaults[:0]
		}
		a := summarizer{&analysis{c: c, opts: Options{TopN: 100000}}}
		prev := runtime.GOMAXPROCS(1)
		want := a.topRanges()
		runtime.GOMAXPROCS(4)
		got := a.topRanges()
		runtime.GOMAXPROCS(prev)
		if len(want) < 20 {
			t.Fatalf("trial %d: only %d ranges", trial, len(want))
		}
		if !slices.Equal(got, want) {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("trial %d: range %d is %+v, want %+v (%d and %d ranges)", trial, i, got[i], want[i], len(got), len(want))
				}
			}
			t.Fatalf("trial %d: %d ranges, want %d", trial, len(got), len(want))
		}
	}
}

// TestKernelTotals: each kernel name's total time and whether it ran, from
// the streams cut in pieces on several goroutines, equal one pass's,
// with a run past 4.29 s (its exact duration aside) among them.
func TestKernelTotals(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	names := kernelTable("a", "b", "c", "d", "e", "never")
	c := &collector{kernelNames: names, longWork: map[longKey]int64{}}
	a := &analysis{c: c, work: map[streamKey][]gpuWork{}}
	for s := range int64(3) {
		k := streamKey{pid: 1, stream: s}
		var ws []gpuWork
		for i := range 3 * minChunk {
			ws = append(ws, gpuWork{end: int64(i) * 100, dur: uint32(rng.IntN(1000)), name: int32(rng.IntN(5)) - int32(s%2)})
		}
		ws[7] = gpuWork{end: 9e9, dur: maxDur, name: 2}
		c.longWork[longKey{k, ws[7].end, ws[7].name}] = 5e9
		a.work[k] = ws
	}
	want := make([]int64, names.Len())
	wantRan := make([]bool, names.Len())
	for k, ws := range a.work {
		for _, w := range ws {
			if w.name >= 0 {
				want[w.name] += a.wdur(k, w)
				wantRan[w.name] = true
			}
		}
	}
	prev := runtime.GOMAXPROCS(4)
	got, ran := summarizer{a}.kernelTotals()
	runtime.GOMAXPROCS(prev)
	if !slices.Equal(got, want) || !slices.Equal(ran, wantRan) || ran[5] || want[2] < 15e9 {
		t.Errorf("totals %v ran %v; want %v and %v", got, ran, want, wantRan)
	}
}
