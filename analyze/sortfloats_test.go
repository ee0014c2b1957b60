package analyze

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/umtrace/umtrace/analyze/internal/chunks"
	"github.com/umtrace/umtrace/analyze/internal/intern"
)

// TestMergeWork checks mergeWork against sorting the concatenated lists,
// for sorted lists (merged) and unsorted ones (sorted).
func TestMergeWork(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		var lists []*chunks.List[gpuWork]
		var all []gpuWork
		for l := 0; l < 3; l++ {
			if rng.IntN(4) == 0 {
				lists = append(lists, nil)
				continue
			}
			n := rng.IntN(3000)
			ws := make([]gpuWork, n)
			for i := range ws {
				ws[i] = gpuWork{end: int64(rng.IntN(5000)), dur: uint32(rng.IntN(3)), name: int32(rng.IntN(3))}
			}
			if trial%2 == 0 {
				slices.SortFunc(ws, workCmp)
			}
			c := &chunks.List[gpuWork]{}
			for _, w := range ws {
				c.Push(w)
			}
			lists = append(lists, c)
			all = append(all, ws...)
		}
		slices.SortFunc(all, workCmp)
		if got := mergeWork(lists...); !slices.Equal(got, all) {
			t.Fatalf("trial %d: merged %d items, want %d in workCmp order", trial, len(got), len(all))
		}
	}
}

// TestSortedDurations: API durations sorted in place as uint32s and
// widened to float64 equal the float64 sort of the same values, whichever
// half of the buffer the radix sort ends in (values of 22, 11 and 33
// significant bits skip different passes), with and without long values.
func TestSortedDurations(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	gens := map[string]func() uint32{
		"small":  func() uint32 { return rng.Uint32() >> 21 },
		"medium": func() uint32 { return rng.Uint32() >> 10 },
		"full":   func() uint32 { return rng.Uint32() },
		"spread": func() uint32 { return rng.Uint32() >> rng.IntN(32) },
	}
	for name, gen := range gens {
		for _, n := range []int{1, 4000, 5000, 70000} {
			for _, long := range [][]int64{nil, {1 << 33, 5e9}} {
				var c durList
				var want []float64
				for range n {
					v := gen()
					c.push(v)
					want = append(want, float64(v))
				}
				for _, v := range long {
					want = append(want, float64(v))
				}
				slices.Sort(want)
				got := sortedDurations(&c, long, make([]float64, 3))
				if !slices.Equal(got, want) {
					t.Errorf("%s n=%d long=%v: differs from slices.Sort", name, n, long)
				}
			}
		}
	}
}

// TestKernelSamples compares kernelSamples (uint32 samples in one list,
// long durations aside, sorted in a shared buffer) with a plain per-name
// float64 sort of the same runs.
func TestKernelSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a := &analysis{c: &collector{kernelNames: kernelTable("k0", "k1", "k2", "k3"), longWork: map[longKey]int64{}}, work: map[streamKey][]gpuWork{}}
	for s := range int64(3) {
		k := streamKey{pid: 7, stream: s}
		for i := range 9000 {
			name := int32(rng.IntN(3)) // k3 never runs
			if i%7 == 0 {
				name = memsetCode
			}
			w := gpuWork{end: int64(i) * 1000, dur: rng.Uint32() >> rng.IntN(32), name: name}
			if i%1000 == 3 {
				w.dur = maxDur
				a.c.longWork[longKey{k, w.end, name}] = 5e9 + int64(i)
			}
			a.work[k] = append(a.work[k], w)
		}
	}
	keep := func(w gpuWork, start int64) bool { return (w.end/1000)%5 != 1 }
	for _, want := range [][]bool{nil, {false, true, false, true}} {
		exp := map[int32][]float64{}
		for k, ws := range a.work {
			for _, w := range ws {
				if w.name < 0 || (want != nil && !want[w.name]) {
					continue
				}
				if d := a.wdur(k, w); keep(w, w.end-d) {
					exp[w.name] = append(exp[w.name], float64(d))
				}
			}
		}
		// One goroutine as the cores choose (these runs are too few for
		// more), and several over pieces of uneven length.
		for _, on := range []struct{ piece, w int }{{minChunk, 0}, {500, 3}, {777, 2}, {50, 64}} {
			got := map[int32][]float64{}
			var mu sync.Mutex
			evidencer{a}.samplesOn(want, keep, func(id int32, ds []float64) {
				mu.Lock()
				defer mu.Unlock()
				if _, dup := got[id]; dup {
					t.Errorf("name %d handed twice", id)
				}
				got[id] = slices.Clone(ds)
			}, on.piece, on.w)
			if len(got) != len(exp) {
				t.Errorf("want %v, %+v: %d names, expected %d", want, on, len(got), len(exp))
			}
			for id, e := range exp {
				slices.Sort(e)
				if !slices.Equal(got[id], e) {
					t.Errorf("want %v, %+v: name %d: %d samples differ from the plain sort (%d)", want, on, id, len(got[id]), len(e))
				}
			}
		}
	}
}

// kernelTable is an intern.Table of names, ids in order.
func kernelTable(names ...string) *intern.Table {
	t := intern.New()
	for _, n := range names {
		t.ID(n)
	}
	return t
}

// TestMergeSliced: sorted lists merged in slices on several goroutines
// equal their concatenation sorted, with items that tie across lists and
// at the slices' bounds, lists of shared partial blocks (as a process's
// split gives) and an empty one.
func TestMergeSliced(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	prev := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(prev)
	for trial := range 3 {
		var lists []*chunks.List[gpuWork]
		var all []gpuWork
		for l := range 3 {
			n := []int{5 * mergeChunk, mergeChunk / 3, 0}[(l+trial)%3]
			ws := make([]gpuWork, n)
			for i := range ws {
				ws[i] = gpuWork{end: int64(rng.IntN(n/4 + 1)), dur: uint32(rng.IntN(2)), name: int32(rng.IntN(2))}
			}
			slices.SortFunc(ws, workCmp)
			// In pieces shared into one list, as split shares blocks.
			c := &chunks.List[gpuWork]{}
			for len(ws) > 0 {
				k := min(len(ws), 1+rng.IntN(70000))
				p := &chunks.List[gpuWork]{}
				for _, w := range ws[:k] {
					p.Push(w)
				}
				c.Share(p)
				all = append(all, ws[:k]...)
				ws = ws[k:]
			}
			lists = append(lists, c)
		}
		slices.SortFunc(all, workCmp)
		got := mergeWork(lists...)
		if !slices.Equal(got, all) {
			t.Fatalf("trial %d: %d items merged, want %d in workCmp order", trial, len(got), len(all))
		}
		for _, l := range lists {
			if len(l.Blocks()) != 0 {
				t.Errorf("trial %d: a list kept its blocks", trial)
			}
		}
	}
}

// TestWorkSorted: a list of several blocks is sorted unless two items are
// out of order, within a block or where two blocks meet, on one goroutine
// and on several.
func TestWorkSorted(t *testing.T) {
	n := 3*chunks.BlockLen + 100
	build := func() *chunks.List[gpuWork] {
		l := &chunks.List[gpuWork]{}
		for i := range n {
			l.Push(gpuWork{end: int64(i / 2), dur: uint32(3 - i%2), name: 1})
		}
		return l
	}
	// at returns item i of l's blocks.
	at := func(l *chunks.List[gpuWork], i int) *gpuWork {
		for _, b := range l.Blocks() {
			if i < len(b) {
				return &b[i]
			}
			i -= len(b)
		}
		panic("out of range")
	}
	// Swaps inside the first and last blocks, and where each two blocks meet.
	swaps := []int{0, 5, n - 2}
	end := 0
	for _, b := range build().Blocks()[:len(build().Blocks())-1] {
		end += len(b)
		swaps = append(swaps, end-1)
	}
	if len(swaps) < 8 {
		t.Fatalf("%d blocks: too few to test", len(swaps)-2)
	}
	for _, procs := range []int{1, 8} {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		if !workSorted(build()) {
			t.Errorf("GOMAXPROCS=%d: a sorted list reported unsorted", procs)
		}
		for _, swap := range swaps {
			l := build()
			x, y := at(l, swap), at(l, swap+1)
			*x, *y = *y, *x
			if workSorted(l) {
				t.Errorf("GOMAXPROCS=%d: items %d and %d swapped, reported sorted", procs, swap, swap+1)
			}
		}
	}
}
