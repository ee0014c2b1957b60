package analyze

import (
	"maps"
	"slices"

	"github.com/umtrace/umtrace/analyze/internal/cache"
	"github.com/umtrace/umtrace/analyze/internal/chunks"
)

// A file of several CUDA processes (the ranks of a job) is analyzed whole
// and once per process, all from one pass over the file: collect keeps
// what only a process's own rows can give (its API durations and spans, its
// GPU work's span, its per-device figures) by process, split derives each
// process's collector from the whole trace's before the whole analysis
// consumes it, and the per-process analyses run first. The records
// themselves carry their pid: a process's lists are filtered copies, a
// share of the whole, not a second read of the file.

// byPid is a map by process with a small cache in front of it: the rows of
// several processes interleave (shuffled exports), and a map lookup per
// row cost more than the row. Each is written by one goroutine.
type byPid[T any] struct {
	m     map[int64]*T
	cache cache.Recent[T]
	mk    func() *T
}

func (b *byPid[T]) get(p int64) *T {
	if v := b.cache.Get(p); v != nil {
		return v
	}
	v := b.m[p]
	if v == nil {
		if b.mk != nil {
			v = b.mk()
		} else {
			v = new(T)
		}
		if b.m == nil {
			b.m = map[int64]*T{}
		}
		b.m[p] = v
	}
	b.cache.Put(p, v)
	return v
}

// slot is k's entry in a cache of 1<<bits entries: (pid, stream) mixed by
// Fibonacci hashing, not taken modulo the size (pids a round number apart
// shared entries by their low bits).
func (k streamKey) slot(bits int) int {
	return int(uint64(k.pid*0x2545F491+k.stream) * 0x9E3779B97F4A7C15 >> (64 - bits))
}

// pids returns the processes in b, sorted.
func (b *byPid[T]) pids() []int64 { return slices.Sorted(maps.Keys(b.m)) }

// pidAPI is one process's share of the API table.
type pidAPI struct {
	durs    []*durList // by API id
	long    map[int32][]int64
	span    span
	managed int
}

// pidWork is one process's share of a GPU table: the span of its rows and
// the migrations clamped to 32 bits.
type pidWork struct {
	span    span
	clamped int
}

func newPidAPI() *pidAPI   { return &pidAPI{span: newSpan()} }
func newPidWork() *pidWork { return &pidWork{span: newSpan()} }

// finishByPid puts the per-process figures of the pass together into the
// whole trace's: API durations by API (the blocks of each process's lists,
// not copies of them: every list is sorted before use), spans, counts.
func (c *collector) finishByPid() {
	pids := c.apiBy.pids()
	var n int
	for _, p := range pids {
		n = max(n, len(c.apiBy.m[p].durs))
	}
	c.apiDurs = make([]*durList, n)
	for id := range c.apiDurs {
		all := &durList{}
		for _, p := range pids {
			if ds := c.apiBy.m[p].durs; id < len(ds) && ds[id] != nil {
				all.share(ds[id])
			}
		}
		c.apiDurs[id] = all
	}
	for _, p := range pids {
		pa := c.apiBy.m[p]
		for id, ls := range pa.long {
			c.longAPI[id] = append(c.longAPI[id], ls...)
		}
		if pa.span.lo <= pa.span.hi {
			c.apiSpan.add(pa.span.lo, pa.span.hi)
		}
		c.managed += pa.managed
	}
	c.pidGPU = map[int64]pidWork{}
	for _, by := range []*byPid[pidWork]{&c.kernelBy, &c.memcpyBy, &c.memsetBy} {
		for p, w := range by.m {
			x, ok := c.pidGPU[p]
			if !ok {
				x = *newPidWork()
			}
			if w.span.lo <= w.span.hi {
				x.span.add(w.span.lo, w.span.hi)
				c.gpuSpan.add(w.span.lo, w.span.hi)
			}
			x.clamped += w.clamped
			c.clamped += w.clamped
			c.pidGPU[p] = x
		}
		*by = byPid[pidWork]{}
	}
}

// procOrds marks, in each record list of a file of several processes,
// whose each record is: split then copies a process's records by reading a
// byte per record, in one pass, where filtering by pid read every record
// twice (to count, then to copy) for every process (address-diverse: four
// processes, 1.4M migrations, 3.5M calls). Made once, after
// the records are sorted, for the processes in pids (at most 255; a record
// of any other process is marked noProc).
type procOrds struct {
	pids                                                []int64
	calls, migrations, gfaults, cfaults, ranges, allocs ordList
}

// ordList is one list's marks: each record's process index, and how many
// records each process has.
type ordList struct {
	ord   []uint8
	count []int
}

const noProc = 255

// markProcs returns c's records' marks for pids (sorted), nil when there
// are too many processes to mark in a byte (split then marks each
// process's records alone).
func (c *collector) markProcs(pids []int64) *procOrds {
	if len(pids) >= noProc {
		return nil
	}
	o := &procOrds{pids: pids}
	of := func(p int64) uint8 {
		if k, ok := slices.BinarySearch(pids, p); ok {
			return uint8(k)
		}
		return noProc
	}
	parallel(func() {
		o.calls = marks(c.calls, len(pids), func(x *call) uint8 { return of(x.pid) })
		o.gfaults = marks(c.gfaults, len(pids), func(x *gfault) uint8 { return of(int64(x.pid)) })
		o.cfaults = marks(c.cfaults, len(pids), func(x *cfault) uint8 { return of(int64(x.pid)) })
	}, func() {
		o.migrations = marks(c.migrations, len(pids), func(x *migration) uint8 { return of(int64(c.migClasses.of(x).pid)) })
		o.ranges = marks(c.ranges, len(pids), func(x *rangeRec) uint8 { return of(c.rangePid(x)) })
		o.allocs = marks(c.allocs, len(pids), func(x *alloc) uint8 { return of(x.pid) })
	})
	return o
}

func marks[T any](s []T, n int, of func(*T) uint8) ordList {
	l := ordList{ord: make([]uint8, len(s)), count: make([]int, n)}
	for i := range s {
		k := of(&s[i])
		l.ord[i] = k
		if k != noProc {
			l.count[k]++
		}
	}
	return l
}

// take returns the records of s that l marks as process k's, in order, in
// a list of their exact size.
func take[T any](s []T, l *ordList, k int) []T {
	out := make([]T, 0, l.count[k])
	for i, o := range l.ord[:len(s)] {
		if int(o) == k {
			out = append(out, s[i])
		}
	}
	return out
}

// process returns the collector a pass over process p's rows alone would
// have filled (ProcessSource), derived from c: records are copied, the API
// durations' blocks shared (the analysis copies them out, and drops only
// its own references), the GPU work's blocks moved out of c (its analysis
// hands them back merged, takeWork), the names, lookup maps and GPU list
// shared read-only.
func (c *collector) process(p int64) *collector {
	pc := &collector{
		apiNames: c.apiNames, kernelNames: c.kernelNames, siteNames: c.siteNames, rangeTable: rangeTable{nvtxNames: c.nvtxNames}, nvtxMeta: c.nvtxMeta,
		copyStream: c.copyStream, setStream: c.setStream, syncStream: c.syncStream, longWork: c.longWork,
		threadNames: c.threadNames, gpus: c.gpus,
		apiSpan: newSpan(), gpuSpan: newSpan(), longAPI: map[int32][]int64{}, firstRT: map[int64]*call{},
		threads: map[streamKey]bool{}, kernels: map[streamKey]*chunks.List[gpuWork]{}, copies: map[streamKey]*chunks.List[gpuWork]{},
		memsets: map[streamKey]*chunks.List[gpuWork]{},
	}
	if pa := c.apiBy.m[p]; pa != nil {
		pc.apiDurs = make([]*durList, len(pa.durs))
		for id, ds := range pa.durs {
			if ds != nil {
				pc.apiDurs[id] = &durList{}
				pc.apiDurs[id].share(ds)
			}
		}
		for id, ls := range pa.long {
			pc.longAPI[id] = slices.Clone(ls)
		}
		pc.apiSpan, pc.managed = pa.span, pa.managed
	}
	if w, ok := c.pidGPU[p]; ok {
		pc.gpuSpan, pc.clamped = w.span, w.clamped
	}
	if f := c.firstRT[p]; f != nil {
		pc.firstRT[p] = f
	}
	for k := range c.threads {
		if k.pid == p {
			pc.threads[k] = true
		}
	}
	// The GPU work's blocks move: the process's analysis merges them and
	// hands the merged lists back (takeWork), which the whole analysis
	// takes in their place. Shared, the blocks stayed whole beside their
	// merged copy until then (address-diverse 12M: 25 MB a process).
	c.splitMu.Lock()
	for _, m := range [][2]map[streamKey]*chunks.List[gpuWork]{{c.kernels, pc.kernels}, {c.copies, pc.copies}, {c.memsets, pc.memsets}} {
		for k, ws := range m[0] {
			if k.pid == p {
				m[1][k] = ws
				delete(m[0], k)
			}
		}
	}
	c.splitMu.Unlock()
	// The file's marks; a file of too many processes for them (255 or
	// more) has this process's alone made here.
	o, k, ok := c.ords, 0, true
	if o == nil {
		o = c.markProcs([]int64{p})
	} else if k, ok = slices.BinarySearch(o.pids, p); !ok {
		panic("analyze: split of a process that was not marked")
	}
	// The copies in two halves at once: one at a time they kept a core
	// idle on two (nothing else runs beside a process's split).
	parallel(func() {
		pc.calls = take(c.calls, &o.calls, k)
		pc.cfaults = take(c.cfaults, &o.cfaults, k)
	}, func() {
		pc.migrations, pc.migClasses = take(c.migrations, &o.migrations, k), migClasses{list: c.migClasses.list}
		pc.gfaults = take(c.gfaults, &o.gfaults, k)
		pc.ranges = take(c.ranges, &o.ranges, k)
		pc.allocs = take(c.allocs, &o.allocs, k)
	})
	if n := c.gclamped[p]; n > 0 {
		pc.gclamped = map[int64]int{p: n}
	}
	for _, g := range c.graphLaunches {
		if g.pid == p {
			pc.graphLaunches = append(pc.graphLaunches, g)
		}
	}
	pc.rangePids, pc.rangeKeys, pc.longEnds = c.rangePids, c.rangeKeys, c.longEnds
	pc.multi = c.multi.procs[p]
	if pc.multi == nil {
		pc.multi = newMultiAcc()
	}
	return pc
}

// takeWork is a process's handoff: its streams' merged GPU work (the same
// lists the whole analysis would merge), in place of the blocks process
// moved out of c.
func (c *collector) takeWork(work map[streamKey][]gpuWork) {
	c.splitMu.Lock()
	defer c.splitMu.Unlock()
	for k, ws := range work {
		c.sortedWork[k] = ws
	}
}

// annotate writes the overlap, stream and waited work that process pid's
// analysis (the k-th split) found for its calls (pcs: its copies of the
// file's calls of pid, in the same order, less its start-up call, which
// the whole analysis drops too) into the file's calls, and reports whether
// they lined up one for one. Written back as each process ends, the
// copies are not held while the whole analysis runs (address-diverse 12M:
// 14.8 MB at its peak; docs/performance.md, "Sixth session"). Processes
// write disjoint records.
func (c *collector) annotate(k int, pid int64, pcs []call) bool {
	mine := func(i int) bool { return c.calls[i].pid == pid }
	if o := c.ords; o != nil {
		mine = func(i int) bool { return int(o.calls.ord[i]) == k }
	}
	j, skipped := 0, 0
	first := c.firstRT[pid]
	for i := range c.calls {
		if !mine(i) {
			continue
		}
		cl := &c.calls[i]
		if j < len(pcs) {
			if p := &pcs[j]; p.start == cl.start && p.end == cl.end && p.tid == cl.tid && p.corr == cl.corr && p.api == cl.api {
				cl.overlap, cl.stream, cl.waited = p.overlap, p.stream, p.waited
				j++
				continue
			}
		}
		// Only the start-up call may be missing from the process's.
		skipped++
		if first == nil || skipped > 1 || cl.start != first.start || cl.end != first.end || cl.tid != first.tid || cl.api != first.api {
			return false
		}
	}
	return j == len(pcs)
}
