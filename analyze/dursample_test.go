package analyze

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat"
)

// TestDurSampleDist: a sample counted by value (durSample) gives the same
// Dist, to the bit, and the same sorted values as sorting it as float64s
// (summarizeSorted), for short-only, mixed and long samples (negative and
// past 2^53 ones take the widened path), counted on one goroutine and on
// several.
func TestDurSampleDist(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	gens := map[string]func() uint32{
		"launches": func() uint32 { return 2000 + uint32(rng.NormFloat64()*300+3000) }, // a narrow short peak
		"shorts":   func() uint32 { return rng.Uint32() >> 16 },
		"mixed":    func() uint32 { return rng.Uint32() >> rng.IntN(32) },
		"tail":     func() uint32 { return uint32(rng.ExpFloat64() * 40000) },
	}
	longs := [][]int64{nil, {1 << 33, 5e9}, {-7, 1 << 34}, {1<<53 + 1}}
	for _, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		for name, gen := range gens {
			for _, n := range []int{histMin, 70000, 300000} {
				for _, long := range longs {
					var d durList
					var vals []int64
					for range n {
						v := gen()
						d.push(v)
						vals = append(vals, int64(v))
					}
					vals = append(vals, long...)
					slices.Sort(vals)
					f := make([]float64, len(vals))
					for i, v := range vals {
						f[i] = float64(v)
					}
					want := summarizeSorted(f)
					s, ok := newDurSample(&d, long)
					if !ok {
						if d.short.Len() >= histMin || d.Len() != n {
							t.Fatalf("%s n=%d: %d short durations not counted", name, n, d.short.Len())
						}
						continue
					}
					if d.Len() != 0 {
						t.Errorf("%s n=%d: %d durations left in the list", name, n, d.Len())
					}
					if _, mean, sd, ok := s.moments(); ok {
						wm, wsd := stat.MeanStdDev(f, nil)
						if mean != wm || sd != wsd {
							t.Errorf("GOMAXPROCS=%d %s n=%d long=%v: mean, sd %v, %v; gonum %v, %v", procs, name, n, long, mean, sd, wm, wsd)
						}
					} else if long == nil {
						t.Errorf("%s n=%d: moments not taken from the counts", name, n)
					}
					if got := s.dist(); got != want {
						t.Errorf("GOMAXPROCS=%d %s n=%d long=%v:\n got %+v\nwant %+v", procs, name, n, long, got, want)
					}
					if got := s.ints(); !slices.Equal(got, vals) {
						t.Errorf("GOMAXPROCS=%d %s n=%d long=%v: values differ from the sorted sample", procs, name, n, long)
					}
					s.release()
				}
			}
		}
		runtime.GOMAXPROCS(prev)
	}
	var few durList
	few.push(3)
	if _, ok := newDurSample(&few, nil); ok || few.Len() != 1 {
		t.Errorf("a sample below histMin was counted (or emptied)")
	}
}
