package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/umtrace/umtrace/analyze/internal/radix"
)

// Steps inferred from the trace's periodic structure (issue 27), when no
// NVTX range marks iterations: a training or solver loop leaves marks
// that recur once per iteration — the host sync that ends it (loss.item(),
// cudaStreamSynchronize before the host reads results), its group of NCCL
// collectives, its CUDA graph launch. A mark taken as iteration
// boundaries must recur with a clear period; anything less is noise and
// the trace has no steps.

const (
	// inferMinSteps is the fewest iterations a period must repeat.
	inferMinSteps = 5
	// inferMaxSpread is the most the period may vary: the median absolute
	// deviation of the periods (scaled to a standard deviation) over
	// their median.
	inferMaxSpread = 0.1
	// inferMinRegular is the share of periods that must lie within
	// inferNear of the median period (not two loops taking turns).
	inferMinRegular = 0.8
	inferNear       = 0.25
	// inferMinCover is the share of its process's busy window (first to
	// last host-blocking call or GPU work after its start-up call) the
	// iterations must cover.
	inferMinCover = 0.5
	// inferMaxLag is the most marks one iteration may hold (two syncs an
	// iteration, the all-reduces of DDP's gradient buckets).
	inferMaxLag = 32
	// inferLagGain: a pattern of several marks per iteration is taken
	// only when it explains the gaps between marks this much better
	// (their residual spread at most this share of the simpler pattern's).
	inferLagGain = 0.5
	// inferPhaseGap: and its phases must differ from the simpler
	// pattern's by more than this many times its residual spread.
	inferPhaseGap = 4
	// inferPhaseMin: and by more than this share of the simpler
	// pattern's period (microseconds of jitter in a 70 ms loop are no
	// second pattern).
	inferPhaseMin = 0.02
)

// markKind is what kind of periodic mark a candidate is.
type markKind int8

const (
	markSync markKind = iota
	markNCCL
	markGraph
)

// periodCand is a mark recurring in one process, as iterations.
type periodCand struct {
	pid    int64
	kind   markKind
	what   string  // the mark, for the evidence
	marks  int     // marks seen
	lag    int     // marks per iteration
	bounds []int64 // iteration boundaries: len(bounds)-1 iterations
	spread float64 // of the period (robust, relative)
	period float64 // median period, ns
	cover  float64 // share of the process's busy window
}

// periodic finds iterations in marks ts (sorted times): the smallest
// number of marks per iteration (lag) whose period is clear. ok is false
// when no lag gives a clear period over inferMinSteps iterations.
func periodic(ts []int64) (bounds []int64, lag int, spread, period float64, ok bool) {
	n := len(ts)
	if n < inferMinSteps+1 {
		return nil, 0, 0, 0, false
	}
	gaps := make([]float64, n-1)
	for i := range gaps {
		gaps[i] = float64(ts[i+1] - ts[i])
	}
	bestR, r1 := math.Inf(1), 0.0
	var bestMeans []float64
	for m := 1; m <= inferMaxLag && (n-1)/m >= inferMinSteps; m++ {
		// Residual spread of the gaps about their phase's median (the
		// mean absolute residual; medians, so that one slow first
		// iteration does not shift a phase): how well "m marks per
		// iteration" explains them.
		means := make([]float64, m)
		for r := range means {
			var ph []float64
			for i := r; i < len(gaps); i += m {
				ph = append(ph, gaps[i])
			}
			means[r] = median64(ph)
		}
		var R float64
		for i, g := range gaps {
			R += math.Abs(g - means[i%m])
		}
		R /= float64(len(gaps))
		if m == 1 {
			r1 = R
		} else if !(R < inferLagGain*r1) {
			continue // the pattern explains the gaps no better than one mark an iteration does
		}
		if lag > 0 {
			// A finer pattern than the one found: m a multiple of its lag,
			// its residual far smaller, and its phases truly different
			// from the coarser pattern's (not a regular loop seen as two
			// iterations at a time).
			if m%lag != 0 || !(R < inferLagGain*bestR) {
				continue
			}
			var d float64
			for i := range gaps {
				d = max(d, math.Abs(means[i%m]-bestMeans[i%lag]))
			}
			if d <= inferPhaseGap*R || d <= inferPhaseMin*period {
				continue
			}
		}
		// The period over every window of m marks.
		ps := make([]float64, 0, n-m)
		for i := 0; i+m < n; i++ {
			ps = append(ps, float64(ts[i+m]-ts[i]))
		}
		med, sp, reg := robustSpread(ps)
		if med <= 0 || sp > inferMaxSpread || reg < inferMinRegular {
			continue
		}
		// The iteration starts at the mark after the longest gap of the
		// pattern (the host work between the last sync and the next
		// iteration's first, the compute before a collective group).
		r := 0
		for k := range means {
			if means[k] > means[r] {
				r = k
			}
		}
		j := (r + 1) % m
		if m == 1 {
			j = 0
		}
		var b []int64
		for i := j; i < n; i += m {
			b = append(b, ts[i])
		}
		if len(b)-1 < inferMinSteps || !regularSteps(b, med) {
			continue
		}
		bounds, lag, spread, period, bestR, bestMeans = b, m, sp, med, R, means
	}
	return bounds, lag, spread, period, lag > 0
}

// inferSegmentCuts is how many of the sharpest changes of the gap
// between marks periodicSegment tries as the edges of the loop, and
// inferSegmentChange the least change (ratio of a gap to the one before)
// that is one.
const (
	inferSegmentCuts   = 6
	inferSegmentChange = 2.0
)

// A loop found between changes of pace is held to a steadier period than
// one over all the marks (a few regular gaps turn up among random ones):
// a spread of at most inferSegmentSpread and every iteration but the
// first within inferSegmentNear of the period, over at least
// inferSegmentMinSteps iterations (5 regular gaps turned up in about one of
// 6,000 random sequences; 8 in none of 30,000).
// A loop of inferSegmentLong iterations or more may have iterations as
// far from the period as one over all the marks (inferNear): chance gives
// no such run at a spread of inferSegmentSpread, and a real loop under a
// storm jitters more than 10% (a 300-iteration GPT-2 loop on managed
// memory: 82 ms median, iterations up to 96 ms; docs/performance.md, the
// real large trace).
const (
	inferSegmentMinSteps = 8
	inferSegmentSpread   = 0.05
	inferSegmentNear     = 0.1
	inferSegmentLong     = 32
)

// inferMaxWarmup bounds the warm-up iteration periodicSegment adds before
// the loop: at most this many periods from the mark before it.
const inferMaxWarmup = 200

// periodicSegment is periodic over all of ts, or else over the longest
// run of ts between changes of pace: a training loop's marks come after a
// burst of start-up syncs (pinning batches, loading weights) and before
// teardown ones, which share the mark's API but no period. The segments
// tried start at ts[0] or at one of the inferSegmentCuts marks where the
// gap to the next mark differs most (by inferSegmentChange times or more)
// from the gap before, and end at the last mark or at one of those; the
// one of most iterations (then the steadiest) is taken. The mark before
// such a loop, when it lies between one and inferMaxWarmup periods before
// the loop's first, starts one more iteration: the first, which ran from
// the last start-up sync to the first loop mark (a warm-up, as the step
// statistics treat it when it is long).
func periodicSegment(ts []int64) (bounds []int64, lag int, spread, period float64, ok bool) {
	if bounds, lag, spread, period, ok = periodic(ts); ok || len(ts) < inferMinSteps+2 {
		return bounds, lag, spread, period, ok
	}
	type cut struct {
		at     int
		change float64
	}
	var cuts []cut
	for j := 1; j+1 < len(ts); j++ {
		g0, g1 := float64(max(ts[j]-ts[j-1], 1)), float64(max(ts[j+1]-ts[j], 1))
		if c := math.Abs(math.Log(g1 / g0)); c >= math.Log(inferSegmentChange) {
			cuts = append(cuts, cut{j, c})
		}
	}
	slices.SortFunc(cuts, func(x, y cut) int { return cmp.Or(cmp.Compare(y.change, x.change), cmp.Compare(x.at, y.at)) })
	starts, ends := []int{0}, []int{len(ts)}
	for _, c := range cuts[:min(inferSegmentCuts, len(cuts))] {
		starts, ends = append(starts, c.at), append(ends, c.at+1)
	}
	first := 0
	for _, lo := range starts {
		for _, hi := range ends {
			if hi-lo < inferMinSteps+1 || (lo == 0 && hi == len(ts)) {
				continue
			}
			b, l, sp, per, yes := periodic(ts[lo:hi])
			near := inferSegmentNear
			if len(b)-1 >= inferSegmentLong {
				near = inferNear
			}
			if !yes || len(b)-1 < inferSegmentMinSteps || sp > inferSegmentSpread || !steadySteps(b, per, near) || (ok && (len(b) < len(bounds) || (len(b) == len(bounds) && sp >= spread))) {
				continue
			}
			bounds, lag, spread, period, ok, first = b, l, sp, per, true, lo
		}
	}
	if ok && bounds[0] == ts[first] && first > 0 {
		if d := float64(ts[first] - ts[first-1]); d >= period && d <= inferMaxWarmup*period {
			bounds = append([]int64{ts[first-1]}, bounds...)
		}
	}
	return bounds, lag, spread, period, ok
}

// regularSteps reports whether every iteration between bounds b but the
// first (which may be a warm-up) lasts within inferNear of period: one
// long pause among them is no iteration of the loop.
func regularSteps(b []int64, period float64) bool {
	return steadySteps(b, period, inferNear)
}

// steadySteps reports whether every iteration between bounds b but the
// first lasts within near (a share) of period.
func steadySteps(b []int64, period, near float64) bool {
	for i := 2; i < len(b); i++ {
		if math.Abs(float64(b[i]-b[i-1])-period) > near*period {
			return false
		}
	}
	return true
}

// median64 is the median of v (v is reordered).
func median64(v []float64) float64 {
	radix.Floats(v, nil) // no NaN: durations and periods
	if len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[len(v)/2]
}

// robustSpread returns the median of ps, the median absolute deviation
// scaled to a standard deviation over the median, and the share of ps
// within inferNear of the median.
func robustSpread(ps []float64) (med, spread, regular float64) {
	s := slices.Clone(ps)
	med = median64(s)
	if med <= 0 {
		return 0, math.Inf(1), 0
	}
	dev := make([]float64, len(s))
	near := 0
	for i, p := range s {
		dev[i] = math.Abs(p - med)
		if dev[i] <= inferNear*med {
			near++
		}
	}
	return med, 1.4826 * median64(dev) / med, float64(near) / float64(len(s))
}

// isSyncCopy reports whether a host-blocking API is a synchronous copy
// (cudaMemcpy: loss.item() and other reads of a result by the host).
func isSyncCopy(name string) bool {
	return strings.HasPrefix(name, "cudaMemcpy") && !strings.Contains(name, "Async") ||
		strings.HasPrefix(name, "cuMemcpy") && !strings.Contains(name, "Async")
}

// inferSteps looks for iterations in the periodic structure of each
// process: its explicit syncs and synchronous copies (each API apart; the
// sync's return ends an iteration's host wait), its NCCL collectives (a
// kernel's start; else an NCCL NVTX range's) and its CUDA graph launches. Each process gets its
// clearest candidate, if any; the steps are those of every such process.
// It returns the steps (sorted by start) and what says how they were
// found, or why there are none.
func (a *analysis) inferSteps() ([]nvtxRange, []periodCand) {
	c := a.c
	type key struct {
		pid int64
		api int32
	}
	syncs := map[key][]int64{}
	window := map[int64]*span{}
	grow := func(pid, lo, hi int64) {
		w := window[pid]
		if w == nil {
			s := newSpan()
			w = &s
			window[pid] = w
		}
		w.add(lo, hi)
	}
	for i := range c.calls {
		cl := &c.calls[i]
		grow(cl.pid, cl.start, cl.end)
		if cl.explicit || (cl.scope == ScopeCopy && isSyncCopy(c.apiNames.At(cl.api))) {
			k := key{cl.pid, cl.api}
			syncs[k] = append(syncs[k], cl.end)
		}
	}
	// NCCL kernels by process, from the merged GPU work.
	nccl := ncclKernelStarts(a, grow)
	// NCCL's NVTX ranges (PyTorch's "nccl:all_reduce", NCCL's own
	// "ncclAllReduce") by process: where the kernels are not traced.
	ncclRanges := map[int64][]int64{}
	// By name id, looked at once: 0 not yet, 1 NCCL, 2 not (emit_nvtx
	// records millions of op ranges: a map lookup each was most of this).
	isNCCLName := make([]int8, c.nvtxNames.Len())
	for i := range c.ranges {
		r := &c.ranges[i]
		k := c.rangeKeys[r.key]
		if k.nameID < 0 || int(k.nameID) >= len(isNCCLName) {
			continue
		}
		if isNCCLName[k.nameID] == 0 {
			isNCCLName[k.nameID] = 2
			if IsNCCLRange(c.nvtxNames.prefix(k.nameID, len(ncclRangePrefix))) {
				isNCCLName[k.nameID] = 1
			}
		}
		if isNCCLName[k.nameID] == 1 {
			pid := c.rangePids[k.proc]
			ncclRanges[pid] = append(ncclRanges[pid], r.start)
		}
	}
	graphs := map[int64][]int64{}
	for _, g := range c.graphLaunches {
		graphs[g.pid] = append(graphs[g.pid], g.start)
	}
	var cands []periodCand
	try := func(pid int64, kind markKind, what string, ts []int64) {
		slices.Sort(ts)
		ts = slices.Compact(ts)
		b, lag, sp, per, ok := periodicSegment(ts)
		if !ok {
			return
		}
		cover := 0.0
		if w := window[pid]; w != nil && w.hi > w.lo {
			cover = min(1, float64(b[len(b)-1]-b[0])/float64(w.hi-w.lo))
		}
		if cover < inferMinCover {
			return
		}
		cands = append(cands, periodCand{pid: pid, kind: kind, what: what, marks: len(ts), lag: lag, bounds: b, spread: sp, period: per, cover: cover})
	}
	for k, ts := range syncs {
		try(k.pid, markSync, c.apiNames.At(k.api)+" returns", ts)
	}
	for pid, ts := range nccl {
		try(pid, markNCCL, "NCCL collective kernels", ts)
	}
	for pid, ts := range ncclRanges {
		try(pid, markNCCL, "NCCL NVTX ranges", ts)
	}
	for pid, ts := range graphs {
		try(pid, markGraph, "CUDA graph launches", ts)
	}
	// Per process, the clearest: one mark per iteration before several,
	// then the most of the process covered, then the steadiest period.
	slices.SortFunc(cands, func(x, y periodCand) int {
		return cmp.Or(cmp.Compare(x.pid, y.pid), cmp.Compare(x.lag, y.lag), cmp.Compare(y.cover, x.cover),
			cmp.Compare(x.spread, y.spread), cmp.Compare(x.kind, y.kind), cmp.Compare(x.what, y.what))
	})
	var chosen []periodCand
	var steps []nvtxRange
	for i, pc := range cands {
		if i > 0 && cands[i-1].pid == pc.pid {
			continue
		}
		chosen = append(chosen, pc)
		proc := c.stepProc(pc.pid)
		for j := 1; j < len(pc.bounds); j++ {
			steps = append(steps, nvtxRange{start: pc.bounds[j-1], end: pc.bounds[j], proc: proc, nameID: -1})
		}
	}
	slices.SortFunc(steps, func(x, y nvtxRange) int { return cmp.Or(cmp.Compare(x.start, y.start), cmp.Compare(x.end, y.end)) })
	return steps, chosen
}

// ncclKernelStarts returns the start times of NCCL kernels by process,
// from the merged GPU work, and grows each process's busy window (grow)
// by all its GPU work.
func ncclKernelStarts(a *analysis, grow func(pid, lo, hi int64)) map[int64][]int64 {
	c := a.c
	nccl := map[int64][]int64{}

	isNCCL := map[int32]bool{}
	names := c.kernelNames
	for k, ws := range a.work {
		for _, w := range ws {
			d := int64(w.dur)
			if w.dur == maxDur {
				d = a.wdur(k, w)
			}
			grow(k.pid, w.end-d, w.end)
			if w.name < 0 || int(w.name) >= names.Len() {
				continue
			}
			yes, seen := isNCCL[w.name]
			if !seen {
				if src := names.ByIDs(); src != nil {
					yes = src.NCCL(names.SID(w.name))
				} else {
					yes = IsNCCLKernel(names.Name(w.name))
				}
				isNCCL[w.name] = yes
			}
			if yes {
				nccl[k.pid] = append(nccl[k.pid], w.end-d)
			}
		}
	}
	return nccl
}

// stepProc returns pid's index in rangePids, adding it (on a copy: a
// process's collector shares the file's list) when it has no ranges.
func (c *rangeTable) stepProc(pid int64) int32 {
	if i := slices.Index(c.rangePids, pid); i >= 0 {
		return int32(i)
	}
	c.rangePids = append(slices.Clip(c.rangePids), pid)
	return int32(len(c.rangePids) - 1)
}

// inferredEvidence says how inferred steps were found, and how sure they
// are: medium for one mark per iteration with a steady period covering
// most of the process, low otherwise.
func inferredEvidence(cs []periodCand) (conf, evidence string) {
	conf = "medium"
	var parts []string
	for _, pc := range cs {
		if pc.lag > 1 || pc.spread > inferMaxSpread/2 || pc.cover < 0.8 {
			conf = "low"
		}
		per := ""
		if pc.lag > 1 {
			per = fmt.Sprintf(", %d per iteration", pc.lag)
		}
		parts = append(parts, fmt.Sprintf("pid %d: %d %s%s recur every %s (spread %.0f%%); %d iterations between them cover %.0f%% of the process's busy time",
			pc.pid, pc.marks, pc.what, per, FormatNs(pc.period), 100*pc.spread, len(pc.bounds)-1, 100*pc.cover))
	}
	return conf, "no NVTX range marks iterations; inferred from the trace's periodic structure, each iteration from one mark to the next: " + strings.Join(parts, "; ")
}

// noPeriodNote is added to "no steps" when no mark recurs clearly.
const noPeriodNote = "no host sync, NCCL collective or CUDA graph launch recurs with a clear period (at least 5 iterations, period within 10%) to infer iterations from"
