package analyze

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/umtrace/umtrace/ingest"

	"github.com/umtrace/umtrace/analyze/internal/chunks"
	"github.com/umtrace/umtrace/analyze/internal/intern"
	"github.com/umtrace/umtrace/analyze/internal/par"
	"github.com/umtrace/umtrace/analyze/internal/radix"
)

// Analyze reads src once and returns its analysis: AnalyzeFile's Whole.
// It returns an error wrapping ingest.ErrNoCUDA when the trace holds no
// CUDA activity.
func Analyze(src ingest.Source, opts Options) (*Result, error) {
	f, err := AnalyzeFile(src, opts)
	if err != nil {
		return nil, err
	}
	return f.Whole, nil
}

// collectCUDA reads src in collect's one pass, after checking that it
// holds CUDA activity.
func collectCUDA(src ingest.Source, phases io.Writer) (*collector, error) {
	if err := hasCUDA(src); err != nil {
		return nil, err
	}
	done := phase(phases, "collect")
	c, err := collect(src)
	done()
	// The read leaves its scratch (pages, batches, the parts' lists) as
	// garbage beside the records; collected now, before the analysis's
	// own large buffers (apiStats' sort buffer, the merged GPU work), the
	// heap reuses it instead of growing by them on top of it: peak RSS
	// easy 12M 280 -> 265 MiB, a few MiB on the other shapes, no slower
	// (docs/performance.md, "Fifth session").
	if heapObjects() >= gcAfterReadMin {
		done = phase(phases, "gc")
		runtime.GC()
		done()
	}
	return c, err
}

// gcAfterReadMin is the heap (objects, live or not) from which the read's
// garbage is collected when it ends: below it the collection would cost
// more than the little it gives back.
const gcAfterReadMin = 64 << 20

// heapObjects is the bytes of the heap's objects, live or not yet swept.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

func hasCUDA(src ingest.Source) error {
	if info := src.Info(); !info.HasCUDA {
		return fmt.Errorf("%s: %w (no CUDA runtime, kernel, memcpy or sync records; profile with nsys --trace=cuda)", info.Path, ingest.ErrNoCUDA)
	}
	return nil
}

// output is what an analysis gives: its Result and, for the analysis
// that consumes them, what it found on the way: the host-blocking calls'
// durations (Options.SyncSamples), and a process's annotated calls and
// fault-driven activity (analyzeProcesses writes the calls' annotations
// into the file's calls and hands the union to the whole file's
// analysis).
type output struct {
	res   *Result
	sync  map[string][]int64
	calls []call
	union map[int64][]span
}

// analyzeCollected analyzes what collect read from src (which hasCUDA
// accepted).
func analyzeCollected(c *collector, src ingest.Source, opts Options) (*output, error) {
	if opts.TopN <= 0 {
		opts.TopN = 10
	}
	// What only split needs goes before the analysis: the processes'
	// references to the API samples would keep them as the analysis
	// drains them.
	c.apiBy, c.pidGPU = byPid[pidAPI]{}, nil
	c.multi.procs = nil
	a := &analysis{c: c, src: src, info: src.Info(), opts: opts, th: opts.Thresholds}
	return a.run()
}

type analysis struct {
	c        *collector
	src      ingest.Source
	multiErr error // from multiFigures
	gpus     []ingest.GPUInfo
	info     *ingest.TraceInfo
	opts     Options
	th       Thresholds
	res      Result

	lo, hi     int64                   // trace span
	union      map[int64][]span        // per pid: merged fault-driven UM activity
	steps      []nvtxRange             // chosen step ranges, sorted
	stepMaxEnd []int64                 // running maximum of steps' ends (snapToSteps)
	storms     []*Episode              // storm episodes
	stormSpans []span                  // their windows in order, joined where they overlap (inStorm)
	baseline   map[int32]float64       // calm median per API id
	work       map[streamKey][]gpuWork // all GPU work per stream, sorted by end
	calmKernel map[int32]float64       // median kernel time outside storm episodes, for calmDone ids
	calmDone   []bool                  // by kernel name id: calmKernel looked at
	maxWork    map[streamKey]int64     // longest GPU work per stream
	stepErr    error                   // Options.StepRange names no repeated range
	sync       map[string][]int64      // Options.SyncSamples: apiStats' host-blocking samples
	procs      map[int64]*procAcc      // per process: host-blocking calls and faults (procSums)
	migs       *migAgg                 // the migrations by kind and cause (umSummary; verdict and mitigations read it)
}

// StepRangeError is Analyze's error when Options.StepRange matches fewer
// than two NVTX ranges: the analysis would silently lose its steps.
type StepRangeError struct {
	Range   string
	Matched int      // ranges it matched
	Names   []string // the trace's range names (digit runs as N) with counts, most frequent first
}

func (e *StepRangeError) Error() string {
	if len(e.Names) == 0 {
		return fmt.Sprintf("--step-range %q: the trace has no NVTX ranges", e.Range)
	}
	return fmt.Sprintf("--step-range %q matches %d NVTX ranges (a step range needs 2 or more); the trace has: %s",
		e.Range, e.Matched, strings.Join(e.Names, ", "))
}

// rangeNames lists the distinct range names (digit runs as N) with their
// counts, most frequent first, at most 12.
func (c *rangeTable) rangeNames(rs []rangeRec) []string {
	count := map[string]int{}
	for i := range rs {
		count[digitsToN(c.rangeName(c.wide(&rs[i])))]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y string) int { return cmp.Or(cmp.Compare(count[y], count[x]), cmp.Compare(x, y)) })
	var out []string
	for i, k := range keys {
		if i == 12 {
			out = append(out, fmt.Sprintf("and %d more", len(keys)-i))
			break
		}
		out = append(out, fmt.Sprintf("%q (%d)", k, count[k]))
	}
	return out
}

func (a *analysis) run() (*output, error) {
	c := a.c
	a.res = Result{SchemaVersion: SchemaVersion, Thresholds: a.th}
	sum, tl, dev := summarizer{a}, timeliner{a}, devicer{a}
	// Phases that touch disjoint data run concurrently (traces reach tens
	// of millions of rows; the machine has more than one core): each
	// phase's tasks read what the phases before it wrote and write
	// disjoint parts of the analysis. The tasks that need only the sorted
	// records (findSteps, buildUnion, umSummary) start together, and the
	// stalls beside the waits: on 16 cores the phases after the read
	// hardly ran faster than on two, one task at a time
	// (docs/performance.md, "Sixth session").
	type phaseTasks struct {
		name string
		fns  []func()
	}
	phases := []phaseTasks{
		{"startup", []func(){a.splitStartup}},
		{"apiStats", []func(){a.apiStats}}, // frees the per-call samples before the sort merges GPU work
		{"sort", []func(){a.sortInputs}},
	}
	if !fewCores() {
		// Beside the sort, where the cores are many (and memory too).
		phases = append(phases[:1], phaseTasks{"apiStats+sort", []func(){a.apiStats, a.sortInputs}})
	}
	phases = append(phases, []phaseTasks{
		{"span", []func(){a.span}},
		{"findSteps+buildUnion+um", []func(){a.findSteps, a.buildUnion, sum.umSummary}},
		// markStalls writes the calls' overlap and stall, attributeWaits
		// their stream and waited work.
		{"stalls+waits", []func(){a.markStalls, a.attributeWaits}},
		{"episodes+stats", []func(){a.findEpisodes, sum.stats, dev.procSums, sum.headCalls}},
		// stepRows and the timeline read the episodes, whose process and
		// device multiFigures then sets (the verdict reads them too), from
		// procSums' and headCalls' figures.
		{"steps+timeline", []func(){sum.stepRows, tl.timeline, tl.charts}},
		{"verdict", []func(){func() { sum.verdict(); sum.headline(); sum.mitigations() }}},
		{"devices", []func(){func() { dev.multiFigures(); tl.laneStorms(); tl.deviceLanes() }}},
		{"sanitizer", []func(){func() { a.res.Sanitizer = dev.sanitizerReport(a.opts.Sanitizer); sum.warnings() }}},
	}...)
	for _, p := range phases {
		done := phase(a.opts.Phases, p.name)
		parallel(p.fns...)
		done()
		if a.stepErr != nil {
			return nil, a.stepErr
		}
	}
	if a.multiErr != nil {
		return nil, a.multiErr
	}
	if err := c.kernelNames.ByIDs().Err(); err != nil {
		return nil, err // a kernel name the report needs could not be read
	}
	r := &a.res
	r.Trace = TraceMeta{
		File: filepath.Base(a.info.Path), Producer: a.info.Producer, ProductVersion: a.info.ProductVersion,
		SchemaVersion: a.info.SchemaVersion, StartNs: a.lo, EndNs: a.hi, DurationNs: a.hi - a.lo,
		GPUs: c.gpus, Threads: len(c.threads),
	}
	pids := map[int64]bool{}
	for k := range c.threads {
		pids[k.pid] = true
	}
	r.Trace.Processes = len(pids)
	if r.Trace.GPUs == nil {
		r.Trace.GPUs = []string{}
	}
	// A copy: a pointer into a would keep the whole analysis (the
	// collected records, the merged GPU work) alive as long as the result.
	res := *r
	out := &output{res: &res, sync: a.sync}
	if c.whole != nil {
		out.calls, out.union = c.calls, a.union
		c.whole = nil
	}
	if out.sync != nil {
		dropStartup(out.sync, res.Startup)
	}
	return out, nil
}

// workCmp orders GPU work by end, longest first, then by name.
func workCmp(x, y gpuWork) int {
	if x.end != y.end {
		return cmp.Compare(x.end, y.end)
	}
	return cmp.Or(cmp.Compare(y.dur, x.dur), cmp.Compare(x.name, y.name))
}

// mergeWork returns the GPU work of lists in one slice sorted by workCmp.
// Each list arrives in the export's storage order, which for one stream is
// usually already completion order: sorted lists are merged in one pass,
// anything else is sorted.
func mergeWork(lists ...*chunks.List[gpuWork]) []gpuWork {
	n := 0
	sorted := true
	for _, l := range lists {
		n += l.Len()
		if l != nil && sorted {
			sorted = workSorted(l)
		}
	}
	if sorted && !fewCores() && n >= 2*mergeChunk {
		return mergeSliced(lists, n)
	}
	// The lists are consumed: each block is dropped once copied, so that
	// the merged copy and the blocks are not both whole in memory (one
	// stream can hold all of a trace's millions of kernels).
	ws := make([]gpuWork, 0, n)
	if !sorted {
		// Sorted straight out of the blocks: a copy in order first cost
		// as much as a digit pass (0.2 of address-diverse's 6 CPU-s).
		var blocks [][]gpuWork
		for _, l := range lists {
			blocks = append(blocks, l.Take()...)
		}
		ws = ws[:n]
		radix.SortBlocksByKey(ws, blocks, func(w *gpuWork) uint64 { return radix.TimeKey(w.end) }, func(x, y gpuWork) int {
			return cmp.Or(cmp.Compare(y.dur, x.dur), cmp.Compare(x.name, y.name))
		})
		return ws
	}
	// A k-way merge (k ≤ 3) over the lists' blocks.
	type cursor struct {
		l    *chunks.List[gpuWork]
		b, i int
	}
	var cs []cursor
	for _, l := range lists {
		if l.Len() > 0 {
			cs = append(cs, cursor{l: l})
		}
	}
	at := func(c *cursor) gpuWork { return c.l.Blocks()[c.b][c.i] }
	for len(cs) > 0 {
		best := 0
		for j := 1; j < len(cs); j++ {
			if workCmp(at(&cs[j]), at(&cs[best])) < 0 {
				best = j
			}
		}
		c := &cs[best]
		if len(cs) == 1 {
			// One list left: copy the rest of it block by block.
			ws = c.l.DrainFrom(ws, c.b, c.i)
			break
		}
		// The run of c's block that comes before every other list's
		// head (ties go to the earlier list, as above) is copied whole:
		// the block is sorted, and one stream's kernels mostly come
		// between its copies in long runs. The run's end is found by
		// galloping (probes 1, 2, 4, ... ahead, then a binary search
		// between the last two): where the lists alternate item by item
		// a search over the whole block cost a dozen comparisons an item
		// (easy 12M: 150 ms of the sort phase on two cores).
		bs := c.l.Blocks()
		blk := bs[c.b]
		rest := blk[c.i+1:]
		beyond := func(k int) bool {
			w := rest[k]
			for j := range cs {
				if j == best {
					continue
				}
				if d := workCmp(w, at(&cs[j])); d > 0 || (d == 0 && j < best) {
					return true
				}
			}
			return false
		}
		lo, hi := 0, 1 // rest[:lo] comes first; the end is at most hi
		for hi <= len(rest) && !beyond(hi-1) {
			lo, hi = hi, 2*hi
		}
		hi = min(hi, len(rest))
		end := c.i + 1 + lo + sort.Search(hi-lo, func(k int) bool { return beyond(lo + k) })
		ws = append(ws, blk[c.i:end]...)
		if end == len(blk) {
			bs[c.b] = nil
			c.b, c.i = c.b+1, 0
			if c.b == len(bs) {
				cs = slices.Delete(cs, best, best+1)
			}
		} else {
			c.i = end
		}
	}
	return ws
}

// workSorted reports whether l is sorted by workCmp: its blocks checked on
// several goroutines where the cores are many (one stream of easy 12M held
// 1.7M items, a few ms of one goroutine while the others waited).
func workSorted(l *chunks.List[gpuWork]) bool {
	bs := l.Blocks()
	var prev *gpuWork
	for _, b := range bs { // where the blocks meet
		if len(b) == 0 {
			continue
		}
		if prev != nil && workCmp(*prev, b[0]) > 0 {
			return false
		}
		prev = &b[len(b)-1]
	}
	var unsorted atomic.Bool
	check := func(lo, hi int) {
		for _, b := range bs[lo:hi] {
			if unsorted.Load() {
				return
			}
			for i := 1; i < len(b); i++ {
				if workCmp(b[i-1], b[i]) > 0 {
					unsorted.Store(true)
					return
				}
			}
		}
	}
	if fewCores() {
		check(0, len(bs))
	} else {
		par.Chunks(len(bs), 2, check)
	}
	return !unsorted.Load()
}

// mergeChunk is the fewest items of sorted lists a goroutine of
// mergeSliced merges.
const mergeChunk = 1 << 17

// mergeSliced is mergeWork of sorted lists on several goroutines, where
// the cores are many: the output is cut at items of the longest list,
// each list where those items fall in it, and each slice merged on its
// own (one stream of easy 12M held 1.7M items, 50 ms merged on one
// goroutine of 16). Items equal under workCmp are equal in every field,
// so where they go between slices does not matter. The blocks are let go
// at the end, not as they are copied: on these machines the copy and the
// blocks are both whole in memory for a moment.
func mergeSliced(lists []*chunks.List[gpuWork], n int) []gpuWork {
	type view struct {
		blocks [][]gpuWork
		starts []int // each block's first index
		n      int
	}
	var vs []view
	longest := 0
	for _, l := range lists {
		if l.Len() == 0 {
			continue
		}
		v := view{blocks: l.Blocks(), n: l.Len()}
		at := 0
		for _, b := range v.blocks {
			v.starts = append(v.starts, at)
			at += len(b)
		}
		if len(vs) == 0 || v.n > vs[longest].n {
			longest = len(vs)
		}
		vs = append(vs, v)
	}
	get := func(v *view, i int) gpuWork {
		b := sort.Search(len(v.starts), func(b int) bool { return v.starts[b] > i }) - 1
		return v.blocks[b][i-v.starts[b]]
	}
	k := min(runtime.GOMAXPROCS(0), n/mergeChunk)
	// cut[j][l]: where slice j starts in list l (the items before the
	// pivot, an item of the longest list).
	cut := make([][]int, k+1)
	for j := range cut {
		cut[j] = make([]int, len(vs))
		for l := range vs {
			switch {
			case j == 0:
			case j == k:
				cut[j][l] = vs[l].n
			default:
				p := get(&vs[longest], vs[longest].n*j/k)
				cut[j][l] = sort.Search(vs[l].n, func(i int) bool { return workCmp(get(&vs[l], i), p) >= 0 })
			}
		}
	}
	ws := make([]gpuWork, n)
	parallelN(k, make(chan struct{}, k), func(j int) {
		off := 0
		for l := range vs {
			off += cut[j][l]
		}
		// Cursors: list l's next item is blocks[b[l]][i[l]], until end[l].
		b, i, left := make([]int, len(vs)), make([]int, len(vs)), make([]int, len(vs))
		for l := range vs {
			v := &vs[l]
			lo := cut[j][l]
			left[l] = cut[j+1][l] - lo
			if left[l] > 0 {
				b[l] = sort.Search(len(v.starts), func(x int) bool { return v.starts[x] > lo }) - 1
				i[l] = lo - v.starts[b[l]]
				for i[l] == len(v.blocks[b[l]]) { // an empty block
					b[l], i[l] = b[l]+1, 0
				}
			}
		}
		for {
			best := -1
			var bw gpuWork
			for l := range vs {
				if left[l] == 0 {
					continue
				}
				if w := vs[l].blocks[b[l]][i[l]]; best < 0 || workCmp(w, bw) < 0 {
					best, bw = l, w
				}
			}
			if best < 0 {
				return
			}
			ws[off] = bw
			off++
			left[best]--
			i[best]++
			for left[best] > 0 && i[best] == len(vs[best].blocks[b[best]]) {
				b[best], i[best] = b[best]+1, 0
			}
		}
	})
	for _, l := range lists {
		l.Take()
	}
	return ws
}

// parallel runs fns concurrently and waits for them.
func parallel(fns ...func()) {
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Add(1)
		go func() { defer wg.Done(); fn() }()
	}
	wg.Wait()
}

// onMany runs fns concurrently where there are 4 cores or more
// (fewCores), else one after another: tasks whose concurrency pays only
// where cores would otherwise be idle.
func onMany(fns ...func()) {
	if fewCores() {
		for _, fn := range fns {
			fn()
		}
		return
	}
	parallel(fns...)
}

// forEach runs fn(worker, i) for i in [0, n) on at most workers
// goroutines, each taking the next i until none is left (worker numbers
// them, for state of their own), and waits for them. Unlike parallelN it
// starts no more goroutines than it runs at once, whatever n.
func forEach(n, workers int, fn func(worker, i int)) {
	var next atomic.Int64
	parallelN(min(workers, n), make(chan struct{}, max(workers, 1)), func(w int) {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			fn(w, i)
		}
	})
}

// fewCores reports whether there are fewer than four cores: there, tasks
// that each allocate a large buffer run one at a time (the record sorts
// two by two), since more at once finished no sooner on two cores and
// held 10-17 MiB more at the peak (easy 12M).
func fewCores() bool { return runtime.GOMAXPROCS(0) < 4 }

// minChunk is the fewest cheap items (a few ns each) a goroutine takes: below it
// starting one costs more than it saves.
const minChunk = 1 << 16

// stepChunk is the fewest steps a goroutine takes (a step's row reads
// its calls, faults and migrations).
const stepChunk = 1 << 12

// chunkOr is the fewest items a goroutine of a split loop takes: def, or
// o.chunk where a test sets it.
func (o *Options) chunkOr(def int) int {
	if o.chunk > 0 {
		return o.chunk
	}
	return def
}

func (a *analysis) sortInputs() {
	c := a.c
	// All GPU work per stream, sorted by end; the streams a process's
	// analysis merged already come from it.
	a.work = map[streamKey][]gpuWork{}
	for k, ws := range c.sortedWork {
		a.work[k] = ws
	}
	c.sortedWork = nil
	var keys []streamKey
	seen := map[streamKey]bool{}
	for _, m := range []map[streamKey]*chunks.List[gpuWork]{c.kernels, c.copies, c.memsets} {
		for k := range m {
			if _, done := a.work[k]; !done && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	merged := make([][]gpuWork, len(keys))
	merge := func(i int) {
		// mergeWork lets the collector's blocks go as soon as they are copied.
		k := keys[i]
		merged[i] = mergeWork(c.kernels[k], c.copies[k], c.memsets[k])
	}
	if !fewCores() {
		// The sorts beside the merges (easy 12M on 16 cores: 10 ms
		// and 16 ms, one after the other).
		parallel(c.sortRecords, func() { parallelN(len(keys), make(chan struct{}, runtime.GOMAXPROCS(0)), merge) })
	} else {
		// The sorts, then the merges: a merge's copy of its stream (one
		// stream can hold most of a trace's kernels) made while a
		// sort's scratch buffer is still held only raised the peak.
		c.sortRecords()
		// A merge's copy and sort scratch are whole while it runs: a
		// stream of a quarter of the work or more is merged alone, the
		// others two at a time (address-diverse's 64 streams: the sort
		// phases 0.25 -> 0.17-0.20 s in all, same peak).
		sizes := make([]int, len(keys))
		total := 0
		for i, k := range keys {
			sizes[i] = c.kernels[k].Len() + c.copies[k].Len() + c.memsets[k].Len()
			total += sizes[i]
		}
		var big, small []int
		for i := range keys {
			if 4*sizes[i] >= total {
				big = append(big, i)
			} else {
				small = append(small, i)
			}
		}
		for _, i := range big {
			merge(i)
		}
		parallelN(len(small), make(chan struct{}, runtime.GOMAXPROCS(0)), func(j int) { merge(small[j]) })
	}
	for i, k := range keys {
		a.work[k] = merged[i]
	}
	c.kernels, c.copies, c.memsets = nil, nil, nil
	if c.whole != nil {
		c.whole.takeWork(a.work)
	}
	// Each stream's longest work, a stream's in chunks over the cores
	// (one stream can hold most of a trace's kernels: a walk of easy
	// 12M's millions on one goroutine while the others waited).
	a.maxWork = make(map[streamKey]int64, len(a.work))
	var mu sync.Mutex
	for k, ws := range a.work {
		var m int64
		par.Chunks(len(ws), minChunk, func(lo, hi int) {
			var cm int64
			for _, w := range ws[lo:hi] {
				d := int64(w.dur)
				if w.dur == maxDur {
					d = a.wdur(k, w)
				}
				cm = max(cm, d)
			}
			mu.Lock()
			m = max(m, cm)
			mu.Unlock()
		})
		a.maxWork[k] = m
	}
}

// sortRecords sorts the host-blocking calls, faults and migrations by
// time, then by every other field: the order is the same whatever order
// the records came in (analyzeRanks sorts a file's records once, before
// each process's are filtered from them, and the sorts here then only
// check). Calls are sorted before the analysis annotates them.
func (c *collector) sortRecords() {
	fns := c.sorts() // calls, GPU faults, CPU faults, migrations
	if fewCores() {
		// The calls' sort, then the faults', beside the migrations'.
		parallel(func() { fns[0](); fns[1](); fns[2]() }, fns[3])
		return
	}
	parallel(fns...)
}

// sorts returns sortRecords' four sorts, by start time (radix) then the
// rest, to run concurrently. Each tie compares every field but the key (a
// call's that the analysis fills are still zero; TestRecordTiesTotal), so
// they are radix.SortTotal's.
func (c *collector) sorts() []func() {
	return []func(){
		func() { radix.SortTotal(c.calls, callKey, callTie) },
		func() { radix.SortTotal(c.gfaults, gfaultKey, gfaultTie) },
		func() { radix.SortTotal(c.cfaults, cfaultKey, cfaultTie) },
		func() { radix.SortTotal(c.migrations, migrationKey, c.migClasses.tie) },
	}
}

// The records' sort keys and ties (sorts).

func callKey(x *call) uint64 { return radix.TimeKey(x.start) }

func callTie(x, y call) int {
	return cmp.Or(cmp.Compare(x.end, y.end), cmp.Compare(x.pid, y.pid), cmp.Compare(x.tid, y.tid),
		cmp.Compare(x.corr, y.corr), cmp.Compare(x.api, y.api), cmp.Compare(x.scope, y.scope), cmpBool(x.explicit, y.explicit))
}

func gfaultKey(x *gfault) uint64 { return radix.TimeKey(x.start) }

func gfaultTie(x, y gfault) int {
	return cmp.Or(cmp.Compare(x.dur, y.dur), cmp.Compare(x.addr, y.addr), cmp.Compare(x.pid, y.pid), cmp.Compare(x.n, y.n), cmp.Compare(x.dev, y.dev))
}

func cfaultKey(x *cfault) uint64 { return radix.TimeKey(x.t) }

func cfaultTie(x, y cfault) int {
	return cmp.Or(cmp.Compare(x.addr, y.addr), cmp.Compare(x.pid, y.pid), cmp.Compare(x.site, y.site))
}

func migrationKey(x *migration) uint64 { return radix.TimeKey(x.start) }

// tie orders migrations of the same start by their fields, their class's
// by value (not by index, which is the order the classes came in).
func (t *migClasses) tie(x, y migration) int {
	a, b := t.of(&x), t.of(&y)
	return cmp.Or(cmp.Compare(x.dur, y.dur), cmp.Compare(t.addr(&x), t.addr(&y)), cmp.Compare(x.bytes, y.bytes), cmp.Compare(a.pid, b.pid),
		cmp.Compare(a.kind, b.kind), cmp.Compare(a.cause, b.cause))
}

func cmpBool(x, y bool) int {
	switch {
	case x == y:
		return 0
	case !x:
		return -1
	}
	return 1
}

// span is the trace's time span: the capture span from ANALYSIS_DETAILS
// when the export has it, widened to cover every CUDA API call and GPU
// activity (the two need not agree).
func (a *analysis) span() {
	a.lo, a.hi = traceSpan(a.c.apiSpan, a.c.gpuSpan, a.info)
}

// traceSpan is the trace's span: that of its API calls, its GPU work and
// the export's own, together; [0, 0) when there is none.
func traceSpan(api, gpu span, info *ingest.TraceInfo) (lo, hi int64) {
	s := newSpan()
	if api.lo <= api.hi {
		s.add(api.lo, api.hi)
	}
	if gpu.lo <= gpu.hi {
		s.add(gpu.lo, gpu.hi)
	}
	if info.SpanEndNs > info.SpanStartNs {
		s.add(info.SpanStartNs, info.SpanEndNs)
	}
	if s.lo > s.hi {
		return 0, 0
	}
	return s.lo, s.hi
}

func (a *analysis) durationSec() float64 {
	if a.hi <= a.lo {
		return 0
	}
	return float64(a.hi-a.lo) / 1e9
}

// digitsToN replaces each run of ASCII digits in s by one N (a range name's
// step key), as regexp `[0-9]+` → "N" would but without the regexp: that
// took a second for 200k long names.
func digitsToN(s string) string {
	if strings.IndexAny(s, "0123456789") < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if c := s[i]; c >= '0' && c <= '9' {
			b = append(b, 'N')
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			continue
		}
		b = append(b, s[i])
		i++
	}
	return string(b)
}

// findSteps picks the NVTX range that marks training steps.
func (a *analysis) findSteps() {
	st := &a.res.Steps
	rs := a.c.ranges
	if len(rs) == 0 {
		st.Source = "no NVTX ranges in the trace; " + noStepsAdvice
		if a.opts.StepRange != "" {
			a.stepErr = &StepRangeError{Range: a.opts.StepRange}
			return
		}
		a.inferOrNone()
		return
	}
	groups := rangeGroups(&a.c.rangeTable, a.opts.StepRange)
	cands := stepCandidates(&a.c.rangeTable, groups, a.opts.StepRange)
	if len(cands) == 0 {
		if a.opts.StepRange != "" {
			st.Source = fmt.Sprintf("--step-range %q matched fewer than 2 NVTX ranges", a.opts.StepRange)
			a.stepErr = &StepRangeError{Range: a.opts.StepRange, Matched: len(groups[a.opts.StepRange]), Names: a.c.rangeNames(rs)}
		} else {
			st.Source = "no NVTX range marks iterations (op and API ranges such as aten::... or ncclAllReduce are not steps); " + noStepsAdvice
			a.inferOrNone()
		}
		return
	}
	slices.SortFunc(cands, func(x, y stepCand) int {
		return cmp.Or(cmp.Compare(y.kind, x.kind), cmp.Compare(y.total, x.total), cmp.Compare(x.key, y.key))
	})
	best := cands[0]
	a.steps = make([]nvtxRange, len(best.rs))
	for i, j := range best.rs {
		a.steps[i] = a.c.wide(&rs[j])
	}
	st.Range = best.key
	st.Source = "detected"
	st.Confidence, st.Evidence = best.confidence()
	if a.opts.StepRange != "" {
		st.Source = "--step-range"
		st.Confidence = "given"
		return
	}
	var cut []nvtxRange
	if a.steps, cut = dropPartialTail(a.steps); len(cut) > 0 {
		st.Evidence += fmt.Sprintf("; the last range of %d process(es) (%s) is far shorter than the others and holds no iteration (the step a profiler schedule opens at exit): left out", len(cut), FormatNs(float64(cut[0].end-cut[0].start)))
	}
}

// partialTail is how much shorter than the median of its process's other
// steps a process's last step must be to hold no iteration.
const partialTail = 0.1

// dropPartialTail leaves out of steps (sorted by start) each process's
// last step when it lasted under partialTail of the median of that
// process's others (at least 3): torch.profiler's prof.step() after the
// last iteration opens one more ProfilerStep#N range, closed at exit a
// few microseconds later. It returns the steps kept and those left out.
func dropPartialTail(steps []nvtxRange) (kept, cut []nvtxRange) {
	// Each process's step count and last step; its others' durations are
	// gathered only for a process with a step to test.
	n, lastOf := map[int32]int{}, map[int32]int{}
	for i, s := range steps {
		n[s.proc]++
		lastOf[s.proc] = i
	}
	drop := map[int]bool{}
	for proc, last := range lastOf {
		if n[proc] < 4 {
			continue
		}
		d := make([]float64, 0, n[proc]-1)
		for _, s := range steps[:last] {
			if s.proc == proc {
				d = append(d, float64(s.end-s.start))
			}
		}
		if float64(steps[last].end-steps[last].start) < partialTail*median64(d) {
			drop[last] = true
		}
	}
	if len(drop) == 0 {
		return steps, nil
	}
	for i, s := range steps {
		if drop[i] {
			cut = append(cut, s)
		} else {
			kept = append(kept, s)
		}
	}
	return kept, cut
}

// inferOrNone takes iterations from the trace's periodic structure when
// it has a clear one (stepinfer.go); else the steps stay none, and their
// source says so beside what to record.
func (a *analysis) inferOrNone() {
	st := &a.res.Steps
	steps, cands := a.inferSteps()
	if len(steps) == 0 {
		st.Source = strings.Replace(st.Source, "; record ", "; "+noPeriodNote+"; record ", 1)
		return
	}
	a.steps = steps
	st.Source = "inferred"
	st.Confidence, st.Evidence = inferredEvidence(cands)
}

// rangeGroups groups rt's ranges (as indices into rt.ranges, in range
// order) by key: the name with digit runs as N, or stepRange for the
// ranges it names when it is set (the others are left out).
func rangeGroups(rt *rangeTable, stepRange string) map[string][]int32 {
	rs, rkeys := rt.ranges, rt.rangeKeys
	// Group ranges by key (the name with digit runs as N). Each distinct
	// name's group is found once: the regexp and hashing long names per
	// range were the cost on traces with millions of ranges.
	var keys []string
	index := map[string]int32{}
	groupOf := func(name func() string, key string) int32 { // -1: not a candidate
		if stepRange != "" {
			name := name()
			if name != stepRange && key != stepRange && !strings.HasPrefix(name, stepRange) {
				return -1
			}
			key = stepRange
		}
		g, ok := index[key]
		if !ok {
			g = int32(len(keys))
			index[key] = g
			keys = append(keys, key)
		}
		return g
	}
	byID := make([]int32, rt.nvtxNames.Len())
	for i := range byID {
		byID[i] = -2 // not looked up yet
	}
	nullGroup := int32(-2)
	// Each range's group, counted, then the groups' lists cut from one
	// list in range order (millions of ranges: no list grown by appends).
	gOf := make([]int32, len(rs))
	var counts []int
	for i := range rs {
		var g int32
		switch id := rkeys[rs[i].key].nameID; {
		case id < 0:
			if nullGroup == -2 {
				nullGroup = groupOf(func() string { return "" }, "")
			}
			g = nullGroup
		case byID[id] != -2:
			g = byID[id]
		default:
			g = groupOf(func() string { return rt.nvtxNames.name(id) }, rt.nvtxNames.key(id))
			byID[id] = g
		}
		gOf[i] = g
		if g >= 0 {
			for int(g) >= len(counts) {
				counts = append(counts, 0)
			}
			counts[g]++
		}
	}
	// Each group a list of indices into rs (4 bytes a range, not a copy
	// of it: millions of ranges), cut from one list.
	all := make([]int32, 0, len(rs))
	lists := make([][]int32, len(keys))
	for g := range lists {
		if g < len(counts) {
			lists[g] = all[len(all) : len(all) : len(all)+counts[g]]
			all = all[:len(all)+counts[g]]
		}
	}
	for i := range rs {
		if g := gOf[i]; g >= 0 {
			lists[g] = append(lists[g], int32(i))
		}
	}
	gOf = nil
	groups := make(map[string][]int32, len(keys))
	for g, key := range keys {
		groups[key] = lists[g]
	}
	return groups
}

// stepCand is an NVTX range key that could mark steps: its ranges (indexes
// into the range table, by start), their summed duration, what its name
// says and how much of its processes' windows its ranges cover.
type stepCand struct {
	key    string
	rs     []int32
	total  int64
	kind   stepKind
	tiling float64
}

// stepCandidates sorts each group by time and keeps those that can be
// steps: repeated (twice with stepRange, else three times) and, unless
// stepRange names them, not overlapping within a process.
func stepCandidates(rt *rangeTable, groups map[string][]int32, stepRange string) []stepCand {
	rs, rkeys, longEnds := rt.ranges, rt.rangeKeys, rt.longEnds
	var cands []stepCand
	for key, g := range groups {
		if len(g) < 2 || (stepRange == "" && len(g) < 3) {
			continue
		}
		kind := classifyStepKey(key)
		if kind == stepOp && stepRange == "" {
			continue
		}
		radix.SortByKey(g, func(i *int32) uint64 { return radix.TimeKey(rs[*i].start) }, func(x, y int32) int {
			return cmp.Compare(rangeEnd(&rs[x], longEnds), rangeEnd(&rs[y], longEnds))
		})
		ok := true
		var total int64
		for i, j := range g {
			r := &rs[j]
			total += rangeEnd(r, longEnds) - r.start
			if i > 0 {
				if p := &rs[g[i-1]]; r.start < rangeEnd(p, longEnds) && rkeys[r.key].proc == rkeys[p.key].proc {
					ok = false
				}
			}
		}
		if !ok && stepRange == "" {
			continue
		}
		c := stepCand{key: key, rs: g, total: total, kind: kind, tiling: tiling(rt, g)}
		if stepRange == "" && kind < stepWord && c.tiling < minTiling {
			continue // a range not named like an iteration that does not tile its process's time
		}
		cands = append(cands, c)
	}
	return cands
}

// buildUnion merges fault-driven UM activity into disjoint intervals per process.
func (a *analysis) buildUnion() {
	a.union = faultUnion(a.c.gfaults, a.c.migrations, &a.c.migClasses, a.c.procUnion)
	a.c.procUnion = nil
}

// faultUnion returns each process's fault-driven UM activity: the union of
// its GPU fault groups and demand migrations (both sorted by start), as
// disjoint spans in order. A process in given (its own analysis's union,
// analyzeProcesses) keeps that one. Many records are swept in time
// slices concurrently, whose unions are then joined in order: the union
// of intervals does not depend on how their list is cut (easy 12M: 1.6M
// records, 30-40 ms on one goroutine).
func faultUnion(gfaults []gfault, migrations []migration, cls *migClasses, given map[int64][]span) map[int64][]span {
	union := make(map[int64][]span, len(given))
	for p, u := range given {
		union[p] = u
	}
	k := min(runtime.GOMAXPROCS(0), (len(gfaults)+len(migrations))/unionChunk)
	if k <= 1 {
		for pid, u := range unionSweep(gfaults, migrations, cls, given) {
			union[pid] = slices.Clone(*u) // drop the spare capacity
		}
		return union
	}
	// The slices' bounds: start times at even places of the longer list;
	// slice i holds the records that start in [cut[i], cut[i+1]).
	cuts := make([]int64, k+1)
	cuts[0], cuts[k] = math.MinInt64, math.MaxInt64
	for i := 1; i < k; i++ {
		if len(gfaults) > len(migrations) {
			cuts[i] = gfaults[len(gfaults)*i/k].start
		} else {
			cuts[i] = migrations[len(migrations)*i/k].start
		}
	}
	from := func(t int64) (int, int) {
		if t == math.MinInt64 {
			return 0, 0
		}
		if t == math.MaxInt64 {
			return len(gfaults), len(migrations)
		}
		g, _ := slices.BinarySearchFunc(gfaults, t, func(x gfault, t int64) int { return cmp.Compare(x.start, t) })
		m, _ := slices.BinarySearchFunc(migrations, t, func(x migration, t int64) int { return cmp.Compare(x.start, t) })
		return g, m
	}
	parts := make([]map[int64]*[]span, k)
	parallelN(k, make(chan struct{}, k), func(i int) {
		g0, m0 := from(cuts[i])
		g1, m1 := from(cuts[i+1])
		parts[i] = unionSweep(gfaults[g0:g1], migrations[m0:m1], cls, given)
	})
	per := map[int64][]span{}
	for _, part := range parts {
		for pid, u := range part {
			per[pid] = joinSpans(per[pid], *u)
		}
	}
	for pid, u := range per {
		union[pid] = slices.Clone(u)
	}
	return union
}

// unionChunk is the fewest fault and migration records a goroutine of
// faultUnion sweeps.
const unionChunk = 1 << 16

// joinSpans appends v (disjoint spans in order, all starting at or after
// u's last start) to u, joining spans that overlap or touch as the sweep
// does.
func joinSpans(u, v []span) []span {
	for _, s := range v {
		if len(u) > 0 && s.lo <= u[len(u)-1].hi {
			u[len(u)-1].hi = max(u[len(u)-1].hi, s.hi)
			continue
		}
		u = append(u, s)
	}
	return u
}

// unionSweep is faultUnion's sweep over the two lists in merged start
// order: a span joins its process's last one where they overlap or touch,
// else follows it. Records come in runs of one process, so the list is
// looked up again only where the process changes. Processes in given are
// left out.
func unionSweep(gfaults []gfault, migrations []migration, cls *migClasses, given map[int64][]span) map[int64]*[]span {
	per := map[int64]*[]span{}
	var cur *[]span // nil for a process whose union was given
	curPid, have := int64(0), false
	add := func(pid int64, s span) {
		if !have || pid != curPid {
			curPid, have, cur = pid, true, nil
			if _, ok := given[pid]; !ok {
				if cur = per[pid]; cur == nil {
					cur = new([]span)
					per[pid] = cur
				}
			}
		}
		if cur == nil {
			return
		}
		if u := *cur; len(u) > 0 && s.lo <= u[len(u)-1].hi {
			u[len(u)-1].hi = max(u[len(u)-1].hi, s.hi)
			return
		}
		*cur = append(*cur, s)
	}
	i, j := 0, 0
	for i < len(gfaults) || j < len(migrations) {
		if j == len(migrations) || (i < len(gfaults) && gfaults[i].start <= migrations[j].start) {
			g := &gfaults[i]
			i++
			add(int64(g.pid), span{g.start, max(g.end(), g.start+1)})
			continue
		}
		m := &migrations[j]
		j++
		if k := cls.of(m); demand(int32(k.cause)) {
			add(int64(k.pid), span{m.start, max(m.end(), m.start+1)})
		}
	}
	return per
}

// overlapNs is the length of [lo,hi) covered by the pid's UM union.
func (a *analysis) overlapNs(pid, lo, hi int64) int64 { return unionOverlap(a.union[pid], lo, hi) }

// unionOverlap is the length of [lo,hi) covered by u (disjoint spans in
// order).
func unionOverlap(u []span, lo, hi int64) int64 {
	i := sort.Search(len(u), func(i int) bool { return u[i].hi > lo })
	var n int64
	for ; i < len(u) && u[i].lo < hi; i++ {
		n += min(hi, u[i].hi) - max(lo, u[i].lo)
	}
	return n
}

// markStalls computes each host-blocking call's UM overlap (unless its
// process's analysis gave it), the calm baseline of each API, and which
// calls are UM stalls.
func (a *analysis) markStalls() {
	union := a.union
	if a.borrowed() {
		union = nil // the overlaps are given
	}
	a.baseline = calmBaseline(a.c.calls, union, a.th)
	markStalled(a.c.calls, a.baseline, a.th)
}

// calmBaseline sets each call's overlap with its process's union (when
// union is not nil) and returns the median of each API's calm calls (less
// overlap than th.MinOverlap) where it has th.MinCalmCalls of them.
func calmBaseline(calls []call, union map[int64][]span, th Thresholds) map[int32]float64 {
	if union != nil {
		// A call costs a map lookup and a search: chunks of 4096 (not
		// minChunk's 65536) let a trace's 190k calls use 16 cores.
		par.Chunks(len(calls), callChunk, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				cl := &calls[i]
				if d := cl.dur(); d > 0 {
					cl.overlap = float64(unionOverlap(union[cl.pid], cl.start, cl.end)) / float64(d)
				}
			}
		})
	}
	// The calm calls' durations by API id (a slice: a map lookup a call
	// cost more than the call), then the APIs' medians at once (each a
	// sort: 138k synchronizations of easy 12M took one goroutine 5-8 ms
	// while the others waited).
	var calm [][]int64
	for i := range calls {
		cl := &calls[i]
		if cl.overlap >= th.MinOverlap {
			continue
		}
		if int(cl.api) >= len(calm) {
			calm = slices.Grow(calm, int(cl.api)+1-len(calm))[:cl.api+1]
		}
		calm[cl.api] = push(calm[cl.api], cl.dur())
	}
	var apis []int32
	for api, ds := range calm {
		if len(ds) > 0 && len(ds) >= th.MinCalmCalls {
			apis = append(apis, int32(api))
		}
	}
	meds := make([]float64, len(apis))
	parallelN(len(apis), make(chan struct{}, runtime.GOMAXPROCS(0)), func(j int) { meds[j] = Median(calm[apis[j]]) })
	baseline := make(map[int32]float64, len(apis))
	for j, api := range apis {
		baseline[api] = meds[j]
	}
	return baseline
}

// markStalled marks the calls that are UM stalls: at least th.MinStallNs,
// overlapping UM activity by th.MinOverlap, and th.Inflation times their
// API's calm baseline where it has one.
func markStalled(calls []call, baseline map[int32]float64, th Thresholds) {
	par.Chunks(len(calls), callChunk, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			cl := &calls[i]
			d := cl.dur()
			if d < th.MinStallNs || cl.overlap < th.MinOverlap {
				continue
			}
			if b, ok := baseline[cl.api]; ok && float64(d) < th.Inflation*b {
				continue
			}
			cl.stall = true
		}
	})
}

// borrowed reports whether every call has the overlap, stream and waited
// work its process's analysis found for it (annotate), which this
// analysis then takes instead of computing them.
func (a *analysis) borrowed() bool { return a.c.annotated }

// wdur is w's exact duration.
func (a *analysis) wdur(k streamKey, w gpuWork) int64 {
	if w.dur < maxDur {
		return int64(w.dur)
	}
	return a.c.longWork[longKey{k, w.end, w.name}]
}

// workName names GPU work for reports.
func (a *analysis) workName(w gpuWork) string {
	switch {
	case w.name == noWork:
		return "[no GPU work pending]"
	case w.name >= 0 && int(w.name) < a.c.kernelNames.Len():
		return a.c.kernelNames.Name(w.name)
	case w.name >= 0:
		return "[unknown kernel]"
	case w.name == memsetCode:
		return "[memset]"
	default:
		return "[memcpy " + copyKindNames[-1-w.name] + "]"
	}
}

// attributeWaits finds, for each host-blocking call, the stream it synced
// and the GPU work it waited for: the last kernel, copy or memset on that
// stream (or on any stream of the process, for device-wide syncs) that
// finished before the call returned and after it began.
func (a *analysis) attributeWaits() {
	if a.borrowed() {
		return
	}
	byPid := map[int64][]streamKey{}
	for k := range a.work {
		byPid[k.pid] = append(byPid[k.pid], k)
	}
	for _, ks := range byPid {
		slices.SortFunc(ks, func(x, y streamKey) int { return cmp.Compare(x.stream, y.stream) })
	}
	last := func(k streamKey, lo, hi int64) (gpuWork, bool) {
		ws := a.work[k]
		i := sort.Search(len(ws), func(i int) bool { return ws[i].end > hi }) - 1
		if i < 0 || ws[i].end < lo {
			return gpuWork{}, false
		}
		return ws[i], true
	}
	par.Chunks(len(a.c.calls), callChunk, func(lo, hi int) { attributeRange(a.c, a.c.calls[lo:hi], byPid, last) })
}

// callChunk is the fewest host-blocking calls a goroutine of calmBaseline
// and attributeWaits takes: each costs map lookups and binary searches
// (0.2-0.3 µs), so 4096 are a millisecond of work.
const callChunk = 1 << 12

// attributeRange is attributeWaits for calls, records of c.
func attributeRange(c *collector, calls []call, byPid map[int64][]streamKey, last func(k streamKey, lo, hi int64) (gpuWork, bool)) {
	for i := range calls {
		cl := &calls[i]
		var keys []streamKey
		stream, known := int64(0), false
		switch cl.scope {
		case ScopeStream, ScopeEvent:
			stream, known = c.syncStream[pidCorr{cl.pid, cl.corr}]
		case ScopeCopy:
			stream, known = c.copyStream[pidCorr{cl.pid, cl.corr}]
			if !known {
				stream, known = c.setStream[pidCorr{cl.pid, cl.corr}]
			}
		}
		if known {
			keys = []streamKey{{cl.pid, stream}}
			cl.stream = stream
		} else {
			keys = byPid[cl.pid]
			cl.stream = -1
		}
		best := gpuWork{name: noWork}
		found := false
		for _, k := range keys {
			if w, ok := last(k, cl.start, cl.end); ok && (!found || w.end > best.end) {
				best, found = w, true
			}
		}
		cl.waited = best
	}
}

// mergeGap returns the gap that separates episodes.
func (a *analysis) mergeGap() int64 {
	if a.th.MergeGapNs > 0 {
		return a.th.MergeGapNs
	}
	if len(a.steps) >= 2 {
		ds := make([]int64, len(a.steps))
		for i, s := range a.steps {
			ds[i] = s.end - s.start
		}
		return int64(2 * Median(ds))
	}
	return DefaultMergeGapNs
}

// findEpisodes groups stalls that lie close together in time.
func (a *analysis) findEpisodes() {
	gap := a.mergeGap()
	a.res.Thresholds.MergeGapNs = gap
	type group struct {
		lo, hi int64
		calls  []*call
	}
	var groups []*group
	for i := range a.c.calls {
		cl := &a.c.calls[i]
		if !cl.stall {
			continue
		}
		if n := len(groups); n > 0 && cl.start-groups[n-1].hi <= gap {
			g := groups[n-1]
			g.hi = max(g.hi, cl.end)
			g.calls = append(g.calls, cl)
			continue
		}
		groups = append(groups, &group{cl.start, cl.end, []*call{cl}})
	}
	// Widen groups to whole steps, then merge groups that now touch, so a
	// step never belongs to two episodes.
	// Stalls in adjacent steps belong to one episode whatever the gap in
	// ns: inside a storm, host work between two stalls (CPU-fault
	// handling, frees, copies) can exceed a merge gap derived from calm
	// steps.
	var merged []*group
	lastStep := -1
	for _, g := range groups {
		e := Episode{StartNs: g.lo, EndNs: g.hi, FirstStep: -1, LastStep: -1}
		a.snapToSteps(&e)
		g.lo, g.hi = e.StartNs, e.EndNs
		if n := len(merged); n > 0 && (g.lo < merged[n-1].hi || (e.FirstStep >= 0 && lastStep >= 0 && e.FirstStep <= lastStep+1)) {
			m := merged[n-1]
			m.hi = max(m.hi, g.hi)
			m.calls = append(m.calls, g.calls...)
			lastStep = max(lastStep, e.LastStep)
			continue
		}
		merged = append(merged, g)
		lastStep = e.LastStep
	}
	a.res.Episodes = []Episode{}
	a.res.Isolated = []Episode{}
	for _, g := range merged {
		var stalled int64
		for _, cl := range g.calls {
			stalled += cl.dur()
		}
		e := Episode{StartNs: g.lo, EndNs: g.hi, Stalls: len(g.calls), StalledNs: stalled, FirstStep: -1, LastStep: -1}
		a.snapToSteps(&e)
		if e.Stalls >= a.th.MinEpisodeStalls && stalled >= a.th.MinEpisodeBlockedNs {
			e.Index = len(a.res.Episodes) + 1
			a.res.Episodes = append(a.res.Episodes, e)
		} else {
			e.Index = len(a.res.Isolated) + 1
			a.res.Isolated = append(a.res.Isolated, e)
		}
	}
	for i := range a.res.Episodes {
		a.storms = append(a.storms, &a.res.Episodes[i])
	}
	a.stormSpans = stormWindows(a.storms)
	// The calm medians of every kernel run in any episode, in one pass
	// over the kernels (a pass per episode read every kernel of the
	// trace once per episode: 1.4 s of 2M kernel names).
	ev := evidencer{a}
	ev.calmKernels(func(mark func(int32)) {
		for _, es := range [][]Episode{a.res.Episodes, a.res.Isolated} {
			for i := range es {
				ev.kernelsIn(es[i].StartNs, es[i].EndNs, func(name int32, _ int64) { mark(name) })
			}
		}
	})
	// Each episode's evidence reads the records and the calm medians and
	// writes only its episode: on several goroutines where the cores are
	// many.
	all := make([]*Episode, 0, len(a.res.Episodes)+len(a.res.Isolated))
	for _, es := range [][]Episode{a.res.Episodes, a.res.Isolated} {
		for i := range es {
			all = append(all, &es[i])
		}
	}
	at := runtime.GOMAXPROCS(0)
	if fewCores() {
		at = 1
	}
	forEach(len(all), at, func(_, i int) { ev.evidence(all[i]) })
}

// snapToSteps widens an episode to whole steps and records the steps it covers.
// The steps are sorted by start; they may overlap (those of different
// processes do), so the first one to reach into the episode is found
// through the running maximum of their ends, not one step at a time (an
// episode per stall cluster times 100k steps was a third of a second).
func (a *analysis) snapToSteps(e *Episode) {
	if a.stepMaxEnd == nil {
		a.stepMaxEnd = make([]int64, len(a.steps))
		m := int64(math.MinInt64)
		for i, s := range a.steps {
			m = max(m, s.end)
			a.stepMaxEnd[i] = m
		}
	}
	j := sort.Search(len(a.steps), func(i int) bool { return a.steps[i].start >= e.EndNs })
	if i0 := sort.Search(j, func(i int) bool { return a.stepMaxEnd[i] > e.StartNs }); i0 < j {
		e.FirstStep = i0
		e.LastStep = i0
		for i := j - 1; i > i0; i-- {
			if a.steps[i].end > e.StartNs {
				e.LastStep = i
				break
			}
		}
	}
	if e.FirstStep >= 0 {
		e.StartNs = min(e.StartNs, a.steps[e.FirstStep].start)
		e.EndNs = max(e.EndNs, a.steps[e.LastStep].end)
	}
}

// stormWindows returns the storms' windows [StartNs, EndNs) in order,
// joined where they overlap or touch (inStorm).
func stormWindows(storms []*Episode) []span {
	ws := make([]span, 0, len(storms))
	for _, e := range storms {
		ws = append(ws, span{e.StartNs, e.EndNs})
	}
	slices.SortFunc(ws, func(x, y span) int { return cmp.Compare(x.lo, y.lo) })
	joined := ws[:0]
	for _, w := range ws {
		if n := len(joined); n > 0 && w.lo <= joined[n-1].hi {
			joined[n-1].hi = max(joined[n-1].hi, w.hi)
			continue
		}
		joined = append(joined, w)
	}
	return joined
}

// inStorm reports whether t lies in a storm's window [StartNs, EndNs):
// a binary search of the joined windows (a scan of every storm for every
// kernel run was quadratic in traces of hundreds of episodes).
func (a *analysis) inStorm(t int64) bool {
	ws := a.stormSpans
	if len(ws) == 0 {
		return false
	}
	i := sort.Search(len(ws), func(i int) bool { return ws[i].hi > t })
	return i < len(ws) && ws[i].lo <= t
}

// evidence fills an episode's evidence from everything in its window.
func (a evidencer) evidence(e *Episode) {
	c := a.c
	e.DurationNs = e.EndNs - e.StartNs
	lo, hi := e.StartNs, e.EndNs
	stallAPIs := map[string]*NameCount{}
	var noBaseline []string
	for i := sort.Search(len(c.calls), func(i int) bool { return c.calls[i].start >= lo }); i < len(c.calls) && c.calls[i].start < hi; i++ {
		cl := &c.calls[i]
		e.Syncs++
		e.BlockedNs += cl.dur()
		if b, ok := a.baseline[cl.api]; ok {
			e.ExcessNs += max(0, cl.dur()-int64(b))
		} else if cl.stall {
			e.ExcessNs += cl.dur()
			noBaseline = append(noBaseline, c.apiNames.At(cl.api))
		}
		if cl.stall {
			n := c.apiNames.At(cl.api)
			if stallAPIs[n] == nil {
				stallAPIs[n] = &NameCount{Name: n}
			}
			stallAPIs[n].Count++
			stallAPIs[n].Ns += cl.dur()
		}
	}
	e.StallAPIs = sortedCounts(stallAPIs, 0)
	slices.Sort(noBaseline)
	noBaseline = slices.Compact(noBaseline)
	if len(noBaseline) > 0 {
		e.BaselineNote = "no calm calls of " + strings.Join(noBaseline, ", ") + " to compare with: their whole stalled time counts as excess"
	} else {
		e.BaselineNote = "excess over each API's calm median"
	}
	for i := sort.Search(len(c.gfaults), func(i int) bool { return c.gfaults[i].start >= lo }); i < len(c.gfaults) && c.gfaults[i].start < hi; i++ {
		e.GPUFaultGroups++
		e.GPUFaults += int64(c.gfaults[i].n)
	}
	from := sort.Search(len(c.cfaults), func(i int) bool { return c.cfaults[i].t >= lo })
	to := from + sort.Search(len(c.cfaults)-from, func(i int) bool { return c.cfaults[from+i].t >= hi })
	e.CPUFaults += int64(to - from)
	e.CPUFaultSites = faultSites(c.siteNames, c.cfaults[from:to], 5)
	agg := newMigAgg()
	for i := sort.Search(len(c.migrations), func(i int) bool { return c.migrations[i].start >= lo }); i < len(c.migrations) && c.migrations[i].start < hi; i++ {
		agg.add(&c.migrations[i], &c.migClasses)
	}
	e.Migrations = agg.list()
	e.Kernels = a.kernelSlowdown(lo, hi)
}

// kernelSlowdown compares kernels that started in [lo,hi) with their runs
// outside every storm episode.
func (a evidencer) kernelSlowdown(lo, hi int64) []KernelSlow {
	in := map[int32][]int64{}
	a.kernelsIn(lo, hi, func(name int32, d int64) { in[name] = append(in[name], d) })
	// The calm medians of these kernels are computed: findEpisodes asks
	// calmKernels for every kernel in every episode's window first.
	// The five kernels with the most time here, chosen by id; only they
	// are named.
	totals := map[int32]int64{}
	ids := make([]int32, 0, len(in))
	for id, ds := range in {
		var t int64
		for _, d := range ds {
			t += d
		}
		totals[id] = t
		ids = append(ids, id)
	}
	top := topByTotal(ids, func(id int32) int64 { return totals[id] }, 5, a.c.kernelNames.Name, a.c.kernelNames.Resolve)
	ks := make([]KernelSlow, 0, len(top))
	for _, id := range top {
		ds := in[id]
		k := KernelSlow{Name: a.c.kernelNames.Name(id), Count: len(ds), MedianNs: round1(Median(ds))}
		if m, ok := a.calmKernel[id]; ok {
			k.CalmMedianNs = round1(m)
			if k.CalmMedianNs > 0 {
				k.Slowdown = round3(k.MedianNs / k.CalmMedianNs)
			}
		}
		ks = append(ks, k)
	}
	return ks
}

// kernelsIn calls fn with the name id and duration of each named kernel
// that started in [lo,hi).
func (a evidencer) kernelsIn(lo, hi int64, fn func(name int32, d int64)) {
	for k, ws := range a.work {
		// ws is sorted by end; kernels starting in the window end at or
		// after lo, and before hi plus the stream's longest run.
		limit := hi + a.maxWork[k]
		for j := sort.Search(len(ws), func(j int) bool { return ws[j].end >= lo }); j < len(ws) && ws[j].end <= limit; j++ {
			w := ws[j]
			d := a.wdur(k, w)
			if s := w.end - d; w.name >= 0 && s >= lo && s < hi {
				fn(w.name, d)
			}
		}
	}
}

// calmKernels computes the calm median (runs outside every storm) of the
// kernel name ids that ids marks and no earlier call computed, in one
// pass over the kernels.
func (a evidencer) calmKernels(ids func(mark func(int32))) {
	if a.calmDone == nil {
		a.calmKernel = map[int32]float64{}
		a.calmDone = make([]bool, a.c.kernelNames.Len())
	}
	var want []bool
	ids(func(id int32) {
		if !a.calmDone[id] {
			if want == nil {
				want = make([]bool, len(a.calmDone))
			}
			want[id], a.calmDone[id] = true, true
		}
	})
	if want != nil {
		var mu sync.Mutex
		a.kernelSamples(want, func(w gpuWork, start int64) bool { return !a.inStorm(start) }, func(id int32, ds []float64) {
			m := quantileF(ds, 0.5)
			mu.Lock()
			a.calmKernel[id] = m
			mu.Unlock()
		})
	}
}

// faultSites counts CPU faults by site (an id per site name in names), the
// most frequent first, at most limit.
func faultSites(names *intern.Table, faults []cfault, limit int) []NameCount {
	by := map[int32]int64{}
	for i := range faults {
		by[faults[i].site]++
	}
	sites := make(map[string]*NameCount, len(by))
	for id, n := range by {
		name := names.At(id)
		sites[name] = &NameCount{Name: name, Count: n}
	}
	return sortedCounts(sites, limit)
}

func sortedCounts(m map[string]*NameCount, limit int) []NameCount {
	out := make([]NameCount, 0, len(m))
	for _, v := range m {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(x, y NameCount) int {
		return cmp.Or(cmp.Compare(y.Count, x.Count), cmp.Compare(y.Ns, x.Ns), cmp.Compare(x.Name, y.Name))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

type migAgg struct {
	m     map[[2]int32]*MigrationAgg
	small [16][16]*MigrationAgg // the entries of m by kind and cause + 1, for kinds 0..15 and causes -1..14
}

func newMigAgg() *migAgg { return &migAgg{m: map[[2]int32]*MigrationAgg{}} }

func (g *migAgg) add(m *migration, cls *migClasses) {
	k := cls.of(m)
	x := g.entry(k.kind, k.cause, func(k int32) string { return copyKindNames[k] })
	x.Count++
	x.Bytes += int64(m.bytes)
	x.TimeNs += int64(m.dur)
}

// merge adds o's aggregates into g's.
func (g *migAgg) merge(o *migAgg) {
	for key, x := range o.m {
		y := g.m[key]
		if y == nil {
			y = &MigrationAgg{Direction: x.Direction, Cause: x.Cause}
			g.m[key] = y
		}
		y.Count += x.Count
		y.Bytes += x.Bytes
		y.TimeNs += x.TimeNs
	}
}

// entry returns the aggregate of a kind and cause, made on first use
// with the kind's name from direction
// (through an array for the usual kinds and causes: a map lookup per
// migration was most of the cost, with millions of them).
func (g *migAgg) entry(kind, cause int8, direction func(int32) string) *MigrationAgg {
	k, c := int(kind), int(cause)+1
	small := k >= 0 && k < 16 && c >= 0 && c < 16
	if small {
		if x := g.small[k][c]; x != nil {
			return x
		}
	}
	key := [2]int32{int32(kind), int32(cause)}
	x := g.m[key]
	if x == nil {
		x = &MigrationAgg{Direction: direction(int32(kind)), Cause: causeName(int32(cause))}
		g.m[key] = x
	}
	if small {
		g.small[k][c] = x
	}
	return x
}

func causeName(c int32) string {
	if c < 0 {
		return "not_recorded"
	}
	if int(c) < len(CauseNames) {
		return CauseNames[c]
	}
	return fmt.Sprintf("cause_%d", c)
}

func (g *migAgg) list() []MigrationAgg {
	out := make([]MigrationAgg, 0, len(g.m))
	for _, v := range g.m {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(x, y MigrationAgg) int {
		return cmp.Or(cmp.Compare(x.Direction, y.Direction), cmp.Compare(x.Cause, y.Cause))
	})
	return out
}

// kernelSamples calls fn once per kernel name id with want[id] set (every
// id when want is nil) with the durations of its runs that keep returns
// true for, sorted ascending. ds is a buffer reused for a later id: fn
// must not keep it. keep, and fn for different ids, may run on several
// goroutines at once.
func (a evidencer) kernelSamples(want []bool, keep func(w gpuWork, start int64) bool, fn func(id int32, ds []float64)) {
	a.samplesOn(want, keep, fn, minChunk, 0)
}

// samplesOn is kernelSamples over pieces of at most pieceLen runs on w
// goroutines (0: as many as the cores and the runs make worth it).
func (a evidencer) samplesOn(want []bool, keep func(w gpuWork, start int64) bool, fn func(id int32, ds []float64), pieceLen, w int) {
	nNames := a.c.kernelNames.Len()
	// The GPU work in pieces, each of one stream. Goroutines take every
	// w-th piece; each counts its runs per name, then writes them where
	// the names' counts and the goroutines before it leave room, so the
	// samples land without locks. A sample's place within its name does
	// not matter: each name's samples are sorted. With many names the
	// per-goroutine counts would cost more than they save: one goroutine.
	pieces, total := workPieces(a.work, pieceLen)
	if w == 0 {
		w = min(runtime.GOMAXPROCS(0), len(pieces), total/minChunk)
		// On two cores the phase's other tasks keep them busy: split,
		// its episodes+stats+um took 0.19 s against 0.16 (easy 12M).
		if nNames > maxSampleNames || fewCores() {
			w = 1
		}
	}
	w = max(1, min(w, len(pieces)))
	each := func(fn func(j int, p workPiece)) {
		par.Chunks(w, 1, func(lo, hi int) {
			for j := lo; j < hi; j++ {
				for i := j; i < len(pieces); i += w {
					fn(j, pieces[i])
				}
			}
		})
	}
	// The samples as uint32s, name by name in one list (4 bytes each, not
	// a float64 slice per name: at 30M rows two phases held 63 MB each at
	// once); durations of 4.29 s or more aside (longs), found while
	// counting.
	// Counts by slot: a slot per name id, or where names are many and
	// want picks a few, a slot per wanted name (slotIDs; a count, a
	// place and a goroutine's next place per name of name-diverse's 2M
	// were 40 MB a call, at the analysis' peak).
	sl := newSampleSlots(nNames, want)
	nSlots := sl.n
	counts := make([][]int32, w)
	longs := make([]map[int32][]int64, w)
	each(func(j int, p workPiece) {
		if counts[j] == nil {
			counts[j] = make([]int32, nSlots)
		}
		c := counts[j]
		for _, x := range p.ws {
			if x.name < 0 || (want != nil && !want[x.name]) {
				continue
			}
			d := a.wdur(p.k, x)
			if !keep(x, x.end-d) {
				continue
			}
			if x.dur < maxDur {
				c[sl.of(x.name)]++
				continue
			}
			if longs[j] == nil {
				longs[j] = map[int32][]int64{}
			}
			longs[j][x.name] = append(longs[j][x.name], d)
		}
	})
	at := make([]int, nSlots+1)
	next := make([][]int, w) // per goroutine, where its next sample of each name goes
	for j := range next {
		next[j] = make([]int, nSlots)
	}
	for k := range nSlots {
		o := at[k]
		for j := range w {
			next[j][k] = o
			if counts[j] != nil {
				o += int(counts[j][k])
			}
		}
		at[k+1] = o
	}
	flat := make([]uint32, at[nSlots])
	each(func(j int, p workPiece) {
		c, nx := counts[j], next[j]
		for _, x := range p.ws {
			// A count only for wanted names' short runs that keep took.
			if x.name < 0 || (want != nil && !want[x.name]) || x.dur >= maxDur {
				continue
			}
			k := sl.of(x.name)
			if c[k] == 0 || !keep(x, x.end-int64(x.dur)) {
				continue
			}
			flat[nx[k]] = x.dur
			nx[k]++
		}
	})
	long := map[int32][]int64{}
	for _, l := range longs {
		for id, ds := range l {
			long[id] = append(long[id], ds...)
		}
	}
	handSamples(flat, at, sl.ids, long, w, fn)
}

// sampleSlots numbers the names samplesOn counts: every id its own slot
// (ids nil), or, for more than maxSampleNames names of which want picks
// at most a half, the wanted ones in id order (ids[k] is slot k's id,
// slot[id] id's slot): 4 bytes a name and 20 a wanted one, not 20 a name.
type sampleSlots struct {
	n    int
	ids  []int32
	slot []int32
}

func newSampleSlots(nNames int, want []bool) sampleSlots {
	if want == nil || nNames <= maxSampleNames {
		return sampleSlots{n: nNames}
	}
	n := 0
	for _, ok := range want {
		if ok {
			n++
		}
	}
	if n > nNames/2 {
		return sampleSlots{n: nNames}
	}
	s := sampleSlots{n: n, ids: make([]int32, 0, n), slot: make([]int32, len(want))}
	for id, ok := range want {
		if ok {
			s.slot[id] = int32(len(s.ids))
			s.ids = append(s.ids, int32(id))
		}
	}
	return s
}

// of is id's slot.
func (s *sampleSlots) of(id int32) int32 {
	if s.slot == nil {
		return id
	}
	return s.slot[id]
}

// workPiece is a piece of one stream's GPU work.
type workPiece struct {
	k  streamKey
	ws []gpuWork
}

// workPieces cuts each stream of work into pieces of at most n runs, and
// counts the runs.
func workPieces(work map[streamKey][]gpuWork, n int) (pieces []workPiece, total int) {
	for k, ws := range work {
		total += len(ws)
		for len(ws) > 0 {
			m := min(len(ws), n)
			pieces = append(pieces, workPiece{k, ws[:m]})
			ws = ws[m:]
		}
	}
	return pieces, total
}

// handSamples sorts each name's sample (flat[at[k]:at[k+1]] for its slot
// k: its id, or where slotIDs is not nil the k of slotIDs[k] = id; then
// its long durations) and hands it to fn, the names on w goroutines at once,
// each with its own buffer (a float64 per sample of the names it has at
// once: at most twice flat): sorted one name after another, easy 12M's
// eight kernels of 390k runs each took 35 ms of a phase that 16 cores did
// not shorten.
func handSamples(flat []uint32, at []int, slotIDs []int32, long map[int32][]int64, w int, fn func(id int32, ds []float64)) {
	idOf := func(k int) int32 {
		if slotIDs != nil {
			return slotIDs[k]
		}
		return int32(k)
	}
	var slots []int
	for k := range len(at) - 1 {
		if at[k] < at[k+1] || len(long[idOf(k)]) > 0 {
			slots = append(slots, k)
		}
	}
	bufs := make([][]float64, w)
	forEach(len(slots), w, func(worker, i int) {
		k := slots[i]
		id := idOf(k)
		seg := flat[at[k]:at[k+1]]
		ds := sortedU32(len(seg), func(dst []uint32) { copy(dst, seg) }, long[id], bufs[worker])
		bufs[worker] = ds
		fn(id, ds)
	})
}

// maxSampleNames is the most kernel names for which kernelSamples counts
// on several goroutines (each holds a count per name).
const maxSampleNames = 1 << 16

// The analysis's later stages are types of their own over the same
// state, each with the methods of one stage: evidencer (the kernel
// evidence of episodes), summarizer (statistics, UM summary, step rows,
// verdict, headline, warnings, mitigations), timeliner (timeline, lanes,
// charts) and devicer (per-device and memory figures, sanitizer findings).
type (
	evidencer  struct{ *analysis }
	summarizer struct{ *analysis }
	timeliner  struct{ *analysis }
	devicer    struct{ *analysis }
)
