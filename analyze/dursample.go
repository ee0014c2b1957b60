package analyze

import (
	"math"
	"slices"
	"sync"

	"github.com/umtrace/umtrace/analyze/internal/chunks"
	"github.com/umtrace/umtrace/analyze/internal/par"
	"github.com/umtrace/umtrace/analyze/internal/radix"
)

// durSample is one API's call durations as apiStats summarizes them
// without sorting them all: those below 2^16 ns (most calls: launches,
// enqueued copies, event records) counted by value, the others sorted.
// In ascending order the sample is long's negative values, the counted
// values, wide, then long's others. Sorting a float64 copy of the whole
// sample cost easy 12M's apiStats a radix sort of 6.6M values and 8 bytes
// a value (docs/performance.md, "Sixth session").
type durSample struct {
	hist   *durHist // count by value
	nShort int
	lo, hi int      // the counted values lie in [lo, hi]
	wide   []uint32 // 2^16 <= d < maxDur, sorted
	long   []int64  // the rest (maxDur ns or more, or negative), sorted
	neg    int      // long[:neg] are below 0
}

type durHist [1 << 16]uint32

// histMin is the fewest short durations worth counting by value: a
// smaller sample is sorted, as clearing and walking 2^16 counts would cost
// more.
const histMin = 1 << 14

// histPool holds count arrays (256 KiB each), cleared, between samples.
var histPool = sync.Pool{New: func() any { return new(durHist) }}

// newDurSample takes d's durations (d is left empty: each block goes as
// it is counted) and long's (not changed) into a sample. It reports
// false, leaving d as it was, when d has too few short durations to count
// (histMin): the caller sorts those (sortedDurations).
func newDurSample(d *durList, long []int64) (*durSample, bool) {
	if d == nil || d.short.Len() < histMin {
		return nil, false
	}
	s := &durSample{nShort: d.short.Len()}
	blocks := d.short.Take()
	// Counted on up to GOMAXPROCS goroutines, each into its own array,
	// then added up: one API can hold most of a trace's millions of calls.
	var mu sync.Mutex
	var parts []*durHist
	par.Chunks(len(blocks), minChunk/chunks.BlockLen, func(lo, hi int) {
		h := histPool.Get().(*durHist)
		countInto(h, blocks[lo:hi])
		mu.Lock()
		parts = append(parts, h)
		mu.Unlock()
	})
	s.hist = parts[0]
	for _, h := range parts[1:] {
		for v, n := range h {
			s.hist[v] += n
		}
		clear(h[:])
		histPool.Put(h)
	}
	s.lo, s.hi = -1, -1
	for v, n := range s.hist {
		if n > 0 {
			if s.lo < 0 {
				s.lo = v
			}
			s.hi = v
		}
	}
	if n := d.wide.Len(); n > 0 {
		s.wide = d.wide.DrainTo(make([]uint32, 0, n))
		if n < 1<<12 {
			slices.Sort(s.wide)
		} else if b := make([]uint32, n); !radix.Uints(s.wide, b) {
			s.wide = b
		}
	}
	if len(long) > 0 {
		s.long = slices.Clone(long)
		slices.Sort(s.long)
		for s.neg < len(s.long) && s.long[s.neg] < 0 {
			s.neg++
		}
	}
	return s, true
}

func countInto(h *durHist, blocks [][]uint16) {
	for _, b := range blocks {
		for _, v := range b {
			h[v]++
		}
	}
}

// release gives the count array back.
func (s *durSample) release() {
	if s.hist != nil {
		clear(s.hist[:])
		histPool.Put(s.hist)
		s.hist = nil
	}
}

func (s *durSample) len() int { return s.nShort + len(s.wide) + len(s.long) }

// each calls fn with the sample's values in ascending order, each
// distinct counted value once with its count, the others one at a time.
func (s *durSample) each(fn func(v int64, n int)) {
	for _, v := range s.long[:s.neg] {
		fn(v, 1)
	}
	for v := s.lo; v <= s.hi; v++ {
		if n := s.hist[v]; n > 0 {
			fn(int64(v), int(n))
		}
	}
	for _, v := range s.wide {
		fn(int64(v), 1)
	}
	for _, v := range s.long[s.neg:] {
		fn(v, 1)
	}
}

// at returns the values at positions ps (ascending) of the sample in
// ascending order, in one walk over the counts.
func (s *durSample) at(ps []int) []float64 {
	out := make([]float64, len(ps))
	j := 0
	base := 0 // values before the current run
	s.each(func(v int64, n int) {
		for j < len(ps) && ps[j] < base+n {
			out[j] = float64(v)
			j++
		}
		base += n
	})
	return out
}

// ints returns the sample's values in ascending order.
func (s *durSample) ints() []int64 {
	out := make([]int64, s.len())
	i := 0
	s.each(func(v int64, n int) {
		// A run through a local slice: appending to the captured out
		// stored and loaded its header a value.
		run := out[i : i+n]
		for j := range run {
			run[j] = v
		}
		i += n
	})
	return out
}

// dist is summarizeSorted of the sample sorted as float64s, computed from
// the counts with the same floating-point operations in the same order:
// the same Dist to the bit. The mean is the exact total over the count
// where every partial sum is exact (values not negative, the total below
// 2^53, as gonum's sum then is too, in whatever order it adds); otherwise
// the sample is widened and summarized as before.
func (s *durSample) dist() Dist {
	n := s.len()
	total, mean, sd, ok := s.moments()
	if !ok {
		f := make([]float64, 0, n)
		s.each(func(v int64, k int) {
			for range k {
				f = append(f, float64(v))
			}
		})
		return summarizeSorted(f)
	}
	if n < 2 {
		sd = 0
	}
	// quantileF's positions: (n-1)p and the next one up.
	qs := []float64{0.5, 0.95, 0.99}
	var ps []int
	for _, p := range qs {
		h := float64(n-1) * p
		ps = append(ps, int(math.Floor(h)), min(int(math.Ceil(h)), n-1))
	}
	ps = append(ps, 0, n-1)
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return ps[x] - ps[y] })
	sorted := make([]int, len(ps))
	for i, o := range order {
		sorted[i] = ps[o]
	}
	vals := s.at(sorted)
	val := make([]float64, len(ps))
	for i, o := range order {
		val[o] = vals[i]
	}
	q := func(i int) float64 {
		h := float64(n-1) * qs[i]
		lo, hi := val[2*i], val[2*i+1]
		return lo + (h-math.Floor(h))*(hi-lo)
	}
	return Dist{
		Count:  n,
		Total:  total,
		Min:    int64(val[6]),
		Max:    int64(val[7]),
		Mean:   round1(mean),
		Median: round1(q(0)),
		P95:    round1(q(1)),
		P99:    round1(q(2)),
		StdDev: round1(sd),
	}
}

// moments returns the sample's total, and its mean and standard deviation
// as stat.MeanStdDev of its sorted float64s gives them, to the bit: the
// total over the count, and the corrected two-pass sum value by value in
// ascending order. ok is false where the total alone does not give gonum's
// mean (a negative value, or a sum of 2^53 or more).
func (s *durSample) moments() (total int64, mean, sd float64, ok bool) {
	n := s.len()
	s.each(func(v int64, k int) { total += v * int64(k) })
	if s.neg > 0 || total >= 1<<53 || (len(s.long) > 0 && s.long[len(s.long)-1] >= 1<<53) {
		return total, 0, 0, false
	}
	mean = float64(total) / float64(n)
	var ss, comp float64
	s.each(func(v int64, k int) {
		// The sums in locals through a run: the closure's captured
		// ss and comp were a store and a load an addition (easy 12M:
		// 11 ms an API of 3.1M calls, on one goroutine).
		d := float64(v) - mean
		dd, a, b := d*d, ss, comp
		for range k {
			a += dd
			b += d
		}
		ss, comp = a, b
	})
	return total, mean, math.Sqrt((ss - comp*comp/float64(n)) / (float64(n) - 1)), true
}
