package analyze

import (
	"math"
	"unsafe"

	"gonum.org/v1/gonum/stat"

	"github.com/umtrace/umtrace/analyze/internal/chunks"
	"github.com/umtrace/umtrace/analyze/internal/radix"
)

// Dist summarizes a sample of durations in nanoseconds.
//
// Percentiles use linear interpolation between closest ranks (Hyndman and
// Fan type 7, numpy's default): the p-quantile of n sorted values is at
// zero-based position (n-1)p. For p = 0.5 and an even n this is the mean of
// the two middle values, as nsys computes its median. Mean and StdDev
// (sample standard deviation, n-1 denominator, as nsys) come from gonum.
// Fractional values are rounded to 0.1 ns so output is stable.
type Dist struct {
	Count  int     `json:"count"`
	Total  int64   `json:"total_ns"`
	Min    int64   `json:"min_ns"`
	Max    int64   `json:"max_ns"`
	Mean   float64 `json:"mean_ns"`
	Median float64 `json:"median_ns"`
	P95    float64 `json:"p95_ns"`
	P99    float64 `json:"p99_ns"`
	StdDev float64 `json:"stddev_ns"`
}

// summarize summarizes d (it sorts a float64 copy, since gonum works on
// float64; ns durations below 2^53 convert exactly).
func summarize(d []int64) Dist {
	f := make([]float64, len(d))
	for i, v := range d {
		f[i] = float64(v)
	}
	return summarizeF(f)
}

// summarizeF sorts f in place and summarizes it. Values are integral ns.
func summarizeF(f []float64) Dist { return summarizeFScratch(f, nil) }

// summarizeFScratch is summarizeF with a scratch buffer for the sort.
func summarizeFScratch(f, scratch []float64) Dist {
	if len(f) == 0 {
		return Dist{}
	}
	radix.Floats(f, scratch)
	return summarizeSorted(f)
}

// summarizeSorted summarizes f, sorted ascending.
func summarizeSorted(f []float64) Dist {
	if len(f) == 0 {
		return Dist{}
	}
	var total int64
	for _, v := range f {
		total += int64(v)
	}
	mean, sd := stat.MeanStdDev(f, nil)
	if len(f) < 2 {
		sd = 0
	}
	return Dist{
		Count:  len(f),
		Total:  total,
		Min:    int64(f[0]),
		Max:    int64(f[len(f)-1]),
		Mean:   round1(mean),
		Median: round1(quantileF(f, 0.5)),
		P95:    round1(quantileF(f, 0.95)),
		P99:    round1(quantileF(f, 0.99)),
		StdDev: round1(sd),
	}
}

// quantileF returns the type-7 p-quantile of sorted values.
func quantileF(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	h := float64(n-1) * p
	lo := int(math.Floor(h))
	hi := min(int(math.Ceil(h)), n-1)
	return sorted[lo] + (h-float64(lo))*(sorted[hi]-sorted[lo])
}

// Median returns the median of vals (type 7: the mean of the middle two
// of an even count) without modifying it.
func Median(vals []int64) float64 {
	f := make([]float64, len(vals))
	for i, v := range vals {
		f[i] = float64(v)
	}
	radix.Floats(f, nil)
	return quantileF(f, 0.5)
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// sortedDurations returns the values of durs followed by long, sorted
// ascending, as float64s in buf's memory (grown when short): the same
// slice summarizeF would sort to. durs may be left empty: its blocks go as
// they are copied, so that the largest API's samples are not held twice.
func sortedDurations(durs *durList, long []int64, buf []float64) []float64 {
	return sortedU32(durs.Len(), durs.drainTo, long, buf)
}

// durList holds API call durations below 2^32 ns: those below 2^16 ns
// (65.5 µs: most calls, launches, enqueued copies, event records) in two
// bytes, the others in four. apiStats sorts them, so the order they come
// out in is not the order they went in. The 13 MB of easy 12M's 6.6M calls
// were live through the read: docs/performance.md, "Fifth session".
type durList struct {
	short chunks.List[uint16]
	wide  chunks.List[uint32]
}

func (d *durList) push(v uint32) {
	if v <= math.MaxUint16 {
		d.short.Push(uint16(v))
		return
	}
	d.wide.Push(v)
}

// Len is the number of durations.
func (d *durList) Len() int {
	if d == nil {
		return 0
	}
	return d.short.Len() + d.wide.Len()
}

// share adds o's durations to d's, sharing their blocks.
func (d *durList) share(o *durList) {
	if o == nil {
		return
	}
	d.short.Share(&o.short)
	d.wide.Share(&o.wide)
}

// drainTo writes the durations to dst, of length d.Len(), and empties d;
// each block goes as it is copied.
func (d *durList) drainTo(dst []uint32) {
	if d == nil {
		return
	}
	n := 0
	for _, b := range d.short.Take() {
		for i, v := range b {
			dst[n+i] = uint32(v)
		}
		n += len(b)
	}
	d.wide.DrainTo(dst[n:n])
}

// sortedU32 returns n uint32 values (fill writes them into the slice it is
// given) followed by long, sorted ascending, as float64s in buf's memory
// (grown when short). Without long values the uint32s are radix-sorted in
// the buffer itself, each half of it a []uint32, and widened to float64 in
// place, so a sample of n costs 8n bytes (a float64 copy and its sort
// scratch were 16n: 125 MB for one API called 7.8M times).
func sortedU32(n int, fill func([]uint32), long []int64, buf []float64) []float64 {
	total := n + len(long)
	if cap(buf) < total {
		buf = make([]float64, total)
	}
	f := buf[:total]
	u := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(f))), 2*total)
	lo, hi := u[:n], u[n:2*n]
	fill(lo)
	if len(long) > 0 || n < 1<<12 {
		// Widened in place (from the top, as below), then sorted as floats.
		for i := n - 1; i >= 0; i-- {
			f[i] = float64(lo[i])
		}
		for i, v := range long {
			f[n+i] = float64(v)
		}
		radix.Floats(f, nil)
		return f
	}
	if inLo := radix.Uints(lo, hi); inLo {
		// f[i] covers u[2i] and u[2i+1], which are not below i: widen
		// from the top so no value is overwritten before it is read.
		for i := n - 1; i >= 0; i-- {
			f[i] = float64(lo[i])
		}
	} else {
		// f[i] covers u[2i] and u[2i+1], which are below n+i+1: widen
		// from the bottom.
		for i := 0; i < n; i++ {
			f[i] = float64(hi[i])
		}
	}
	return f
}
