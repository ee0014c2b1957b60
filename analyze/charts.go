package analyze

import (
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/umtrace/umtrace/analyze/internal/par"
)

// HistBucketsPerDecade is the resolution of Charts.SyncHistograms: bucket
// b holds durations d (ns) with floor(HistBucketsPerDecade·log10(d)) == b,
// i.e. [10^(b/10), 10^((b+1)/10)) ns.
const HistBucketsPerDecade = 10

// LatencyHist is a log-bucketed histogram of one host-blocking API's call
// durations: Counts[i] is bucket FirstBucket+i.
type LatencyHist struct {
	Name        string  `json:"name"`
	FirstBucket int     `json:"first_bucket"`
	Counts      []int64 `json:"counts"`
}

// BucketLo is the lower edge (ns) of bucket b.
func BucketLo(b int) float64 { return math.Pow(10, float64(b)/HistBucketsPerDecade) }

// bucketOf is the bucket of a duration in ns (durations below 1 ns count
// as 1 ns): 0 to maxBucket.
func bucketOf(d int64) int {
	return int(math.Floor(HistBucketsPerDecade * math.Log10(float64(max(d, 1)))))
}

// maxBucket is the bucket of the longest duration (math.MaxInt64 ns).
const maxBucket = 189

// Charts holds what the report's charts draw beyond the tables: the
// distribution of each host-blocking API's latencies and each step's UM
// stall time.
type Charts struct {
	SyncHistograms []LatencyHist `json:"sync_histograms"` // in SyncAPIs order
	// StepStallNs[i] is the time of step Steps.Rows[i] spent in UM-stalled
	// host-blocking calls (their union, clipped to the step): part of its
	// blocked_ns.
	StepStallNs []int64 `json:"step_stall_ns"`
}

// charts fills Result.Charts from the host-blocking calls (after
// markStalls and stepRows).
func (a timeliner) charts() {
	c := a.c
	ch := &a.res.Charts
	ch.SyncHistograms = []LatencyHist{}
	ch.StepStallNs = make([]int64, len(a.steps))
	// Bucket counts per API id, in chunks of the calls counted
	// concurrently and added up (integers: the same in any order).
	nAPI := c.apiNames.Len()
	counts := make([][maxBucket + 1]int64, nAPI)
	var mu sync.Mutex
	par.Chunks(len(c.calls), a.opts.chunkOr(minChunk), func(lo, hi int) {
		mine := make([][maxBucket + 1]int64, nAPI)
		for i := lo; i < hi; i++ {
			cl := &c.calls[i]
			mine[cl.api][bucketOf(cl.dur())]++
		}
		mu.Lock()
		defer mu.Unlock()
		for id := range mine {
			for b, n := range mine[id] {
				counts[id][b] += n
			}
		}
	})
	byName := make(map[string]int, nAPI)
	for id := range counts {
		byName[c.apiNames.At(int32(id))] = id
	}
	for _, s := range a.res.SyncAPIs {
		h := LatencyHist{Name: s.Name, Counts: []int64{}}
		if id, ok := byName[s.Name]; ok {
			first, last := -1, -1
			for b, n := range counts[id] {
				if n > 0 {
					if first < 0 {
						first = b
					}
					last = b
				}
			}
			if first >= 0 {
				h.FirstBucket = first
				h.Counts = slices.Clone(counts[id][first : last+1])
			}
		}
		ch.SyncHistograms = append(ch.SyncHistograms, h)
	}
	// UM-stalled calls merged into disjoint spans per process (calls are
	// sorted by start), then each step's overlap with them.
	stalled := map[int64][]span{}
	for i := range c.calls {
		cl := &c.calls[i]
		if !cl.stall {
			continue
		}
		u := stalled[cl.pid]
		if n := len(u); n > 0 && cl.start <= u[n-1].hi {
			u[n-1].hi = max(u[n-1].hi, cl.end)
		} else {
			u = append(u, span{cl.start, cl.end})
		}
		stalled[cl.pid] = u
	}
	par.Chunks(len(a.steps), a.opts.chunkOr(stepChunk), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := a.steps[i]
			u := stalled[a.c.rangePids[s.proc]]
			for j := sort.Search(len(u), func(j int) bool { return u[j].hi > s.start }); j < len(u) && u[j].lo < s.end; j++ {
				ch.StepStallNs[i] += min(s.end, u[j].hi) - max(s.start, u[j].lo)
			}
		}
	})
}
