package radix

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortByKey compares SortByKey with slices.SortFunc under the same
// order (key, then tie) on keys of several spreads, with many ties.
func TestSortByKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	gens := map[string]func() int64{
		"times":    func() int64 { return 1_700_000_000_000_000_000 + rng.Int64N(1e10) },
		"negative": func() int64 { return rng.Int64N(1e6) - 5e5 },
		"few":      func() int64 { return rng.Int64N(4) },
		"wide":     func() int64 { return int64(rng.Uint64()) },
		"one":      func() int64 { return 42 },
	}
	key, tie := recKey, recTie
	order := func(x, y rec) int { return cmp.Or(cmp.Compare(x.k, y.k), tie(x, y)) }
	for name, gen := range gens {
		for _, n := range []int{0, 1, 50, 1000, 5000, 100000} {
			s := make([]rec, n)
			for i := range s {
				s[i] = rec{gen(), int32(rng.IntN(3)), i}
			}
			want := slices.Clone(s)
			slices.SortStableFunc(want, order)
			SortByKey(s, key, tie)
			if !slices.IsSortedFunc(s, order) {
				t.Fatalf("%s n=%d: not sorted", name, n)
			}
			// The same elements: sorted by order then id, both agree.
			byID := func(x, y rec) int { return cmp.Or(order(x, y), cmp.Compare(x.id, y.id)) }
			slices.SortFunc(s, byID)
			slices.SortFunc(want, byID)
			if !slices.Equal(s, want) {
				t.Fatalf("%s n=%d: the elements differ", name, n)
			}
		}
	}
}

// TestFloats checks the radix sort against slices.Sort on durations
// and on values of every sign and magnitude.
func TestFloats(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gens := map[string]func() float64{
		"durations":  func() float64 { return float64(rng.Uint32() >> rng.IntN(32)) },
		"mixed sign": func() float64 { return (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(40)-20)) },
		"few values": func() float64 { return float64(rng.IntN(3)) },
		"huge":       func() float64 { return float64(rng.Int64()) * 1e10 },
		"infinities": func() float64 { return math.Inf(rng.IntN(3) - 1) },
	}
	for name, gen := range gens {
		for _, n := range []int{0, 1, 100, 5000, 100000} {
			f := make([]float64, n)
			for i := range f {
				f[i] = gen()
			}
			want := slices.Clone(f)
			slices.Sort(want)
			Floats(f, nil)
			if !slices.Equal(f, want) {
				t.Errorf("%s n=%d: radix sort differs from slices.Sort", name, n)
			}
		}
	}
}

// TestUints checks both widths against slices.Sort, including inputs
// that share digits (skipped passes) and the buffer the result ends in.
func TestUints(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 7, 5000, 70000} {
		for _, shift := range []int{0, 11, 21, 31} {
			a := make([]uint32, n)
			for i := range a {
				a[i] = rng.Uint32() >> shift
			}
			want := slices.Clone(a)
			slices.Sort(want)
			if got := uintsOf(a, 0); !slices.Equal(got, want) {
				t.Fatalf("uint32 n=%d shift=%d: differs from slices.Sort", n, shift)
			}
			a64 := make([]uint64, n)
			for i := range a64 {
				a64[i] = rng.Uint64() >> (2 * shift)
			}
			want64 := slices.Clone(a64)
			slices.Sort(want64)
			if got64 := uintsOf(a64, 0); !slices.Equal(got64, want64) {
				t.Fatalf("uint64 n=%d shift=%d: differs from slices.Sort", n, shift)
			}
		}
	}
}

// TestParallel: on several goroutines both sorts give exactly what they
// give on one (SortByKey's elements equal under key and tie included),
// with parts of uneven size and digits that some parts lack.
func TestParallel(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	key, tie := recKey, recTie
	for _, n := range []int{3 * parallelMin, 3*parallelMin + 17} {
		s := make([]rec, n)
		for i := range s {
			k := 1_700_000_000_000_000_000 + rng.Int64N(1e9)
			if i%3 == 0 {
				k = 1_700_000_000_000_000_000 + rng.Int64N(50) // one crowded bucket
			}
			s[i] = rec{k, int32(rng.IntN(2)), i}
		}
		want := slices.Clone(s)
		sortByKey(want, key, tie, 1, false)
		for _, w := range []int{2, 3, 7} {
			got := slices.Clone(s)
			sortByKey(got, key, tie, w, false)
			if !slices.Equal(got, want) {
				t.Fatalf("SortByKey n=%d on %d goroutines differs from one", n, w)
			}
		}
		// SortTotal, whose tie orders every two elements that differ,
		// moves them to its buckets on all its goroutines
		// (scatterSort): the same order as on one.
		total := func(x, y rec) int { return cmp.Or(recTie(x, y), cmp.Compare(x.id, y.id)) }
		want = slices.Clone(s)
		sortByKey(want, key, total, 1, true)
		if !slices.IsSortedFunc(want, func(x, y rec) int { return cmp.Or(cmp.Compare(x.k, y.k), total(x, y)) }) {
			t.Fatalf("SortTotal n=%d on one goroutine: not in order", n)
		}
		for _, w := range []int{scatterMin, 7, 16} {
			got := slices.Clone(s)
			sortByKey(got, key, total, w, true)
			if !slices.Equal(got, want) {
				t.Fatalf("SortTotal n=%d on %d goroutines differs from one", n, w)
			}
		}
		// More goroutines than elements, and keys all equal.
		few := slices.Clone(s[:30])
		wantFew := slices.Clone(few)
		sortByKey(wantFew, key, total, 1, true)
		if sortByKey(few, key, total, 64, true); !slices.Equal(few, wantFew) {
			t.Fatalf("SortTotal of 30 on 64 goroutines differs from one")
		}
		same := make([]rec, 100)
		for i := range same {
			same[i] = rec{5, int32(i % 3), 99 - i}
		}
		sortByKey(same, key, total, 8, true)
		if !slices.IsSortedFunc(same, total) {
			t.Fatalf("SortTotal of equal keys on 8 goroutines: not in tie order")
		}
		a := make([]uint32, n)
		for i := range a {
			a[i] = rng.Uint32() >> rng.IntN(32)
		}
		want32 := slices.Clone(a)
		slices.Sort(want32)
		for _, w := range []int{2, 3, 7} {
			if got := uintsOf(a, w); !slices.Equal(got, want32) {
				t.Fatalf("Uints n=%d on %d goroutines differs from slices.Sort", n, w)
			}
		}
	}
}

// TestSortBlocksByKey: sorting out of blocks gives what SortByKey gives
// on the blocks in order (the same elements, in the same order of key and
// tie), on one goroutine and on several, and lets go of every block.
func TestSortBlocksByKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	key, tie := recKey, recTie
	order := func(x, y rec) int { return cmp.Or(cmp.Compare(x.k, y.k), tie(x, y)) }
	byID := func(x, y rec) int { return cmp.Or(order(x, y), cmp.Compare(x.id, y.id)) }
	for _, n := range []int{0, 5, 24, 25, 1000, 3*parallelMin + 5} {
		for _, spread := range []int64{1, 3, 1e9} {
			var blocks [][]rec
			var all []rec
			for len(all) < n {
				b := make([]rec, min(n-len(all), 1+rng.IntN(5000)))
				for i := range b {
					b[i] = rec{-5e8 + rng.Int64N(spread), int32(rng.IntN(3)), len(all) + i}
				}
				blocks = append(blocks, b)
				all = append(all, b...)
			}
			want := slices.Clone(all)
			SortByKey(want, key, tie)
			for _, w := range []int{1, 3} {
				bs := make([][]rec, len(blocks))
				for i, b := range blocks {
					bs[i] = slices.Clone(b)
				}
				got := make([]rec, n)
				sortBlocksByKey(got, bs, key, tie, w)
				if !slices.IsSortedFunc(got, order) {
					t.Fatalf("n=%d spread=%d w=%d: not sorted", n, spread, w)
				}
				g, e := slices.Clone(got), slices.Clone(want)
				slices.SortFunc(g, byID)
				slices.SortFunc(e, byID)
				if !slices.Equal(g, e) {
					t.Fatalf("n=%d spread=%d w=%d: the elements differ", n, spread, w)
				}
				for i, b := range bs {
					if b != nil {
						t.Fatalf("n=%d: block %d kept", n, i)
					}
				}
			}
		}
	}
}

// uintsOf returns a copy of a sorted by uints on w goroutines (0: as
// Uints chooses), from whichever buffer the result ends in.
func uintsOf[K uint32 | uint64](a []K, w int) []K {
	x, b := slices.Clone(a), make([]K, len(a))
	if w == 0 {
		w = workers(len(a))
	}
	if uints(x, b, w) {
		return x
	}
	return b
}

// rec is what the record sorts are tested on: a time key, a tie-breaker
// and an id that distinguishes elements equal under both.
type rec struct {
	k   int64
	tie int32
	id  int
}

func recKey(r *rec) uint64 { return TimeKey(r.k) }
func recTie(x, y rec) int  { return cmp.Compare(x.tie, y.tie) }
