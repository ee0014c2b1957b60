package analyze

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/umtrace/umtrace/analyze/internal/par"
	"github.com/umtrace/umtrace/analyze/internal/radix"
	"github.com/umtrace/umtrace/ingest"
)

// stats fills the per-API, per-kernel, per-thread and per-stream tables.
func (a summarizer) stats() {
	c := a.c
	r := &a.res

	// Group by value keys and name each group once (formatting a key per
	// call costs more than the rest of the loop). Where the cores are many
	// the three groupings run on their own goroutines (one pass over easy
	// 12M's 190k calls took 36 ms of a phase 16 cores did not shorten),
	// each in chunks of the calls (a third of the cores), the chunks'
	// lists joined in chunk order: each group's durations in call order,
	// as one pass gives them.
	k := 1
	if !fewCores() {
		k = max(1, min(runtime.GOMAXPROCS(0)/3, len(c.calls)/a.opts.chunkOr(minChunk)))
	}
	chunk := func(j int) []call { return c.calls[len(c.calls)*j/k : len(c.calls)*(j+1)/k] }
	works := make([]map[int32][]int64, k)
	tids, strms := make([]map[streamKey][]int64, k), make([]map[streamKey][]int64, k)
	var fns []func()
	for j := range k {
		calls := chunk(j)
		works[j], tids[j], strms[j] = map[int32][]int64{}, map[streamKey][]int64{}, map[streamKey][]int64{}
		byWork, byTid, byStrm := works[j], tids[j], strms[j]
		fns = append(fns, func() {
			for i := range calls {
				cl := &calls[i]
				byWork[cl.waited.name] = append(byWork[cl.waited.name], cl.dur())
			}
		}, func() {
			for i := range calls {
				cl := &calls[i]
				byTid[streamKey{cl.pid, cl.tid}] = append(byTid[streamKey{cl.pid, cl.tid}], cl.dur())
			}
		}, func() {
			for i := range calls {
				cl := &calls[i]
				byStrm[streamKey{cl.pid, cl.stream}] = append(byStrm[streamKey{cl.pid, cl.stream}], cl.dur())
			}
		})
	}
	onMany(fns...)
	byWork, byTid, byStrm := joinGroups(works), joinGroups(tids), joinGroups(strms)
	byThread := make(map[string][]int64, len(byTid))
	for k, ds := range byTid {
		tn := c.threadNames[k]
		if tn == "" {
			tn = "?"
		}
		byThread[fmt.Sprintf("pid %d tid %d (%s)", k.pid, k.stream, tn)] = ds
	}
	byStream := map[string][]int64{}
	for k, ds := range byStrm {
		sk := fmt.Sprintf("pid %d device-wide", k.pid)
		if k.stream >= 0 {
			sk = fmt.Sprintf("pid %d stream %d", k.pid, k.stream)
		}
		byStream[sk] = append(byStream[sk], ds...)
	}
	// By the work waited for, named only for the groups kept (a trace's
	// calls can wait for hundreds of thousands of distinct kernels).
	byKernel := func() {
		r.SyncByKernel = groupsBy(byWork, a.opts.TopN, func(id int32) string { return a.workName(gpuWork{name: id}) }, func(ids []int32) {
			var ks []int32
			for _, id := range ids {
				if id >= 0 && int(id) < c.kernelNames.Len() {
					ks = append(ks, id)
				}
			}
			c.kernelNames.Resolve(ks)
		})
	}
	thread := func() { r.SyncByThread = groups(byThread, a.opts.TopN) }
	stream := func() { r.SyncByStream = groups(byStream, a.opts.TopN) }
	onMany(byKernel, thread, stream)

	// The top kernels by total time are chosen from per-name totals; only
	// they get samples and a summary (traces have millions of names).
	r.Kernels = []Kernel{}
	names := c.kernelNames
	totals, ran := a.kernelTotals()
	n := 0
	for _, r := range ran {
		if r {
			n++
		}
	}
	ids := make([]int32, 0, n) // sized: 2M names grown by append left 16 MB behind at the analysis' peak
	for id := range ran {
		if ran[id] {
			ids = append(ids, int32(id))
		}
	}
	top := topByTotal(ids, func(id int32) int64 { return totals[id] }, a.opts.TopN, names.Name, names.Resolve)
	want := make([]bool, len(ran))
	for _, id := range top {
		want[id] = true
	}
	dists := make(map[int32]Dist, len(top))
	var mu sync.Mutex
	evidencer{a.analysis}.kernelSamples(want, func(gpuWork, int64) bool { return true }, func(id int32, ds []float64) {
		d := summarizeSorted(ds)
		mu.Lock()
		dists[id] = d
		mu.Unlock()
	})
	for _, id := range slices.Sorted(maps.Keys(dists)) { // in id order, as they came one at a time
		r.Kernels = append(r.Kernels, Kernel{Name: names.Name(id), Dist: dists[id]})
	}
	slices.SortFunc(r.Kernels, func(x, y Kernel) int { return cmp.Or(cmp.Compare(y.Total, x.Total), cmp.Compare(x.Name, y.Name)) })
}

// kernelTotals returns each kernel name's total time and whether it ran,
// by name id: over pieces of the streams on several goroutines, each with
// its own totals, where the cores are many and the names not (3.3M
// kernels of easy 12M took 15 ms on one).
func (a summarizer) kernelTotals() ([]int64, []bool) {
	pieces, total := workPieces(a.work, minChunk)
	nNames := a.c.kernelNames.Len()
	w := min(runtime.GOMAXPROCS(0), len(pieces), total/minChunk)
	if nNames > maxSampleNames || fewCores() {
		w = 1
	}
	w = max(w, 1)
	totals := make([][]int64, w)
	ran := make([][]bool, w)
	parallelN(w, make(chan struct{}, w), func(j int) {
		t, r := make([]int64, nNames), make([]bool, nNames)
		for i := j; i < len(pieces); i += w {
			p := pieces[i]
			for _, x := range p.ws {
				if x.name >= 0 {
					t[x.name] += a.wdur(p.k, x)
					r[x.name] = true
				}
			}
		}
		totals[j], ran[j] = t, r
	})
	for j := 1; j < w; j++ {
		for id := range nNames {
			totals[0][id] += totals[j][id]
			ran[0][id] = ran[0][id] || ran[j][id]
		}
	}
	return totals[0], ran[0]
}

// keepTop inserts x into top, which is sorted by order and holds at most
// limit (> 0) elements, and returns it: the first limit of everything
// offered, without sorting everything.
func keepTop[T any](top []T, x T, limit int, order func(x, y T) int) []T {
	if len(top) == limit && order(x, top[len(top)-1]) >= 0 {
		return top
	}
	i, _ := slices.BinarySearchFunc(top, x, order)
	top = slices.Insert(top, i, x)
	if len(top) > limit {
		top = top[:limit]
	}
	return top
}

func groups(m map[string][]int64, limit int) []Group {
	return groupsBy(m, limit, func(k string) string { return k }, nil)
}

// groupsBy is groups for keys named by name (called for the groups kept
// and to break ties).
func groupsBy[K comparable](m map[K][]int64, limit int, name func(K) string, resolve func([]K)) []Group {
	// The top groups by total are chosen before any is summarized: calls
	// grouped by the kernel they waited for can form a group per kernel
	// name, and traces have millions of names.
	keys := make([]K, 0, len(m))
	totals := make(map[K]int64, len(m))
	for k, ds := range m {
		var t int64
		for _, d := range ds {
			t += d
		}
		keys = append(keys, k)
		totals[k] = t
	}
	top := topByTotal(keys, func(k K) int64 { return totals[k] }, limit, name, resolve)
	out := make([]Group, 0, len(top))
	for _, k := range top {
		out = append(out, Group{Key: name(k), Dist: summarize(m[k])})
	}
	return out
}

// umSummary fills the unified-memory section.
func (a summarizer) umSummary() {
	c := a.c
	u := &a.res.UnifiedMemory
	u.FaultTables = a.info.HasGPUFaultTable || a.info.HasCPUFaultTable
	u.ManagedAllocs = c.managed
	// The top ranges (their own goroutines) beside the totals.
	top := make(chan []AddrRange, 1)
	go func() { top <- a.topRanges() }()
	for _, al := range c.allocs {
		u.ManagedBytes += al.bytes
	}
	// The migrations' and faults' totals in chunks over the cores, added
	// up after (millions of records: one goroutine held the phase on 16
	// cores).
	agg := newMigAgg()
	var mu sync.Mutex
	par.Chunks(len(c.migrations), minChunk, func(lo, hi int) {
		part := newMigAgg()
		var b int64
		for i := lo; i < hi; i++ {
			m := &c.migrations[i]
			part.add(m, &c.migClasses)
			b += int64(m.bytes)
		}
		mu.Lock()
		agg.merge(part)
		u.MigratedBytes += b
		mu.Unlock()
	})
	u.Migrations = agg.list()
	a.migs = agg
	par.Chunks(len(c.gfaults), minChunk, func(lo, hi int) {
		var n, ns int64
		for _, g := range c.gfaults[lo:hi] {
			n += int64(g.n)
			ns += int64(g.dur)
		}
		mu.Lock()
		u.GPUFaults, u.GPUFaultNs = u.GPUFaults+n, u.GPUFaultNs+ns
		mu.Unlock()
	})
	u.GPUFaultGroups = int64(len(c.gfaults))
	u.CPUFaults = int64(len(c.cfaults))
	u.GPUFaultCollection = collection(a.info.CollectGPUFaults, u.GPUFaultGroups > 0)
	u.CPUFaultCollection = collection(a.info.CollectCPUFaults, u.CPUFaults > 0)
	if s := a.durationSec(); s > 0 {
		u.GPUFaultsPerSec = round3(float64(u.GPUFaults) / s)
		u.CPUFaultsPerSec = round3(float64(u.CPUFaults) / s)
		u.MigratedBytesPerSec = round3(float64(u.MigratedBytes) / s)
	}
	u.CPUFaultSites = faultSites(c.siteNames, c.cfaults, a.opts.TopN)
	u.TopRanges = <-top
}

// topRanges attributes faults and migrations to managed allocations (from
// memory-usage records) or, lacking those, to 2 MiB-aligned blocks. Ranges
// are value records found through a start → index map (and the last range
// hit, since consecutive records often share one); each range's score is
// computed once, and only the top ranges are formatted. Many records are
// attributed on several goroutines, each taking the records of its share
// of the 2 MiB blocks (address-diverse 12M: 1.3M migrations over hundreds
// of thousands of blocks, 150 ms on one goroutine for the whole file),
// and the shares' ranges are added up.
func (a summarizer) topRanges() []AddrRange {
	c := a.c
	allocs := slices.Clone(c.allocs)
	slices.SortFunc(allocs, func(x, y alloc) int { return cmp.Or(cmp.Compare(x.addr, y.addr), cmp.Compare(y.bytes, x.bytes)) })
	n := len(c.gfaults) + len(c.cfaults) + len(c.migrations)
	k := max(1, min(runtime.GOMAXPROCS(0), n/rangeChunk, 255))
	// A record's share is its block's: a block range lies in one share,
	// an allocation's range in each share its records reach. Each
	// record's share is found once, in chunks (every share scanning
	// every record was 16 passes over them on 16 cores).
	shareOf := func(addr uint64) uint8 { return uint8(int((addr>>21)*0x9E3779B97F4A7C15>>32) % k) }
	const noShare = 255 // a migration without an address is in none
	mark := func(n int, of func(i int) uint8) []uint8 {
		o := make([]uint8, n)
		par.Chunks(n, rangeChunk, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				o[i] = of(i)
			}
		})
		return o
	}
	og := mark(len(c.gfaults), func(i int) uint8 { return shareOf(c.gfaults[i].addr) })
	oc := mark(len(c.cfaults), func(i int) uint8 { return shareOf(c.cfaults[i].addr) })
	om := mark(len(c.migrations), func(i int) uint8 {
		if a := c.migClasses.addr(&c.migrations[i]); a != 0 {
			return shareOf(a)
		}
		return noShare
	})
	shares := make([]*rangeIndex, k)
	parallelN(k, make(chan struct{}, k), func(j int) {
		x := &rangeIndex{allocs: allocs, index: map[uint64]int32{}, lastLo: 1}
		mine := uint8(j)
		for i, o := range og {
			if o == mine {
				g := &c.gfaults[i]
				x.find(g.addr).gpu += int64(g.n)
			}
		}
		for i, o := range oc {
			if o == mine {
				x.find(c.cfaults[i].addr).cpu++
			}
		}
		for i, o := range om {
			if o == mine {
				m := &c.migrations[i]
				r := x.find(c.migClasses.addr(m))
				r.migByte += int64(m.bytes)
				r.migs++
			}
		}
		shares[j] = x
	})
	// The top N by score, ties by the start as a hex string (the
	// report's order), chosen without sorting or gathering every range
	// (hundreds of thousands of blocks in address-diverse traces): the
	// order is total, so the ranges can come in any order.
	order := func(x, y rangeAcc) int {
		if x.score != y.score {
			return cmp.Compare(y.score, x.score)
		}
		return hexCmp(x.start, y.start)
	}
	var top []rangeAcc
	add := func(r rangeAcc) {
		r.score = r.migByte + 4096*(r.gpu+r.cpu)
		top = keepTop(top, r, a.opts.TopN, order)
	}
	// A range in several shares is added up. Only an allocation's can be:
	// a block range's records all lie in its block, and an allocation
	// reached from beyond its first block covers all of that block, so no
	// block range starts where it does.
	var split []rangeAcc
	seen := map[uint64]int{} // allocation start → index in split
	for _, x := range shares {
		for i := range x.n {
			r := *x.at(i)
			if k == 1 || !r.alloc {
				add(r)
				continue
			}
			if at, ok := seen[r.start]; ok {
				o := &split[at]
				o.gpu, o.cpu, o.migs, o.migByte = o.gpu+r.gpu, o.cpu+r.cpu, o.migs+r.migs, o.migByte+r.migByte
				continue
			}
			seen[r.start] = len(split)
			split = append(split, r)
		}
	}
	for _, r := range split {
		add(r)
	}
	out := make([]AddrRange, len(top))
	for i, r := range top {
		label := "2 MiB block (no allocation record)"
		if r.alloc {
			label = "managed allocation"
		}
		out[i] = AddrRange{Start: "0x" + strconv.FormatUint(r.start, 16), Bytes: r.bytes, Label: label,
			GPUFaults: r.gpu, CPUFaults: r.cpu, MigratedBytes: r.migByte, Migrations: r.migs}
	}
	return out
}

// rangeChunk is the fewest fault and migration records worth a goroutine
// of topRanges.
const rangeChunk = 1 << 16

// rangeAcc is one address range's faults and migrations.
type rangeAcc struct {
	start                   uint64
	bytes                   int64
	alloc                   bool // a managed allocation, not a block
	gpu, cpu, migs, migByte int64
	score                   int64
}

// rangeIndex is one share of topRanges: its ranges in pages of a fixed
// size, by index (appending to one slice copied hundreds of thousands of
// them as it grew), found by start.
type rangeIndex struct {
	allocs         []alloc // sorted by address
	pages          [][]rangeAcc
	n              int32
	index          map[uint64]int32
	lastLo, lastHi uint64 // [lastLo, lastHi) resolves to last
	last           int32
}

const rangePageBits = 12

func (x *rangeIndex) at(k int32) *rangeAcc {
	return &x.pages[k>>rangePageBits][k&(1<<rangePageBits-1)]
}

// find returns the range of addr.
func (x *rangeIndex) find(addr uint64) *rangeAcc {
	const block = 2 << 20
	if addr >= x.lastLo && addr < x.lastHi {
		return x.at(x.last)
	}
	allocs := x.allocs
	i := sort.Search(len(allocs), func(i int) bool { return allocs[i].addr > addr }) - 1
	var start uint64
	var size int64
	isAlloc := i >= 0 && addr < allocs[i].addr+uint64(allocs[i].bytes)
	if isAlloc {
		start, size = allocs[i].addr, allocs[i].bytes
	} else {
		start, size = addr&^uint64(block-1), block
	}
	k, ok := x.index[start]
	if !ok {
		k = x.n
		x.index[start] = k
		if k&(1<<rangePageBits-1) == 0 {
			x.pages = append(x.pages, make([]rangeAcc, 1<<rangePageBits))
		}
		*x.at(k) = rangeAcc{start: start, bytes: size, alloc: isAlloc}
		x.n++
	}
	// Cache the span that resolves to k: inside the allocation, or the
	// part of the block no allocation overlaps (skip the cache when one
	// might).
	if isAlloc {
		x.lastLo, x.lastHi, x.last = start, start+uint64(size), k
		if i+1 < len(allocs) && allocs[i+1].addr < x.lastHi {
			x.lastLo, x.lastHi = 1, 0
		}
	} else if (i < 0 || allocs[i].addr+uint64(allocs[i].bytes) <= start) && (i+1 >= len(allocs) || allocs[i+1].addr >= start+block) {
		x.lastLo, x.lastHi, x.last = start, start+block, k
	} else {
		x.lastLo, x.lastHi = 1, 0
	}
	return x.at(k)
}

// hexCmp compares x and y as lowercase hex strings, without allocating.
func hexCmp(x, y uint64) int {
	var bx, by [16]byte
	return bytes.Compare(strconv.AppendUint(bx[:0], x, 16), strconv.AppendUint(by[:0], y, 16))
}

// stepRows fills the per-step table.
func (a summarizer) stepRows() {
	st := &a.res.Steps
	st.Rows = make([]Step, 0, len(a.steps))
	if len(a.steps) == 0 {
		return
	}
	st.Count = len(a.steps)
	// Each step's row reads only the sorted records: steps are done in
	// chunks concurrently (a trace can have hundreds of thousands).
	st.Rows = st.Rows[:len(a.steps)]
	par.Chunks(len(a.steps), a.opts.chunkOr(stepChunk), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			st.Rows[i] = a.stepRow(i)
		}
	})
	durs := make([]int64, len(a.steps))
	var totalDur, totalBlocked, totalFaults int64
	for i := range st.Rows {
		row := &st.Rows[i]
		durs[i] = row.DurationNs
		totalDur += row.DurationNs
		totalBlocked += row.BlockedNs
		f := row.GPUFaults + row.CPUFaults
		totalFaults += f
		st.MaxFaults = max(st.MaxFaults, f)
	}
	steady := st.Rows
	warm, dist := stepDurations(durs)
	if warm {
		st.Rows[0].Warmup, st.WarmupSteps = true, 1
		w := st.Rows[0]
		totalDur, totalBlocked, totalFaults = totalDur-w.DurationNs, totalBlocked-w.BlockedNs, totalFaults-w.GPUFaults-w.CPUFaults
		steady = st.Rows[1:]
	}
	st.Duration = dist
	if totalDur > 0 {
		st.BlockedShare = round3(float64(totalBlocked) / float64(totalDur))
	}
	st.FaultsPerStep = round3(float64(totalFaults) / float64(len(steady)))
}

// stepRow is row i of the per-step table: step i's span, host-blocked
// time, faults, migrated bytes and episode.
func (a summarizer) stepRow(i int) Step {
	c, s, st := a.c, a.steps[i], &a.res.Steps
	row := Step{Index: i, Name: c.rangeName(s), StartNs: s.start, DurationNs: s.end - s.start}
	if s.nameID < 0 && st.Source == "inferred" {
		row.Name = fmt.Sprintf("iteration %d (inferred)", i)
	}
	// Host-blocked time: union of host-blocking calls clipped to the step.
	var cur span
	have := false
	for j := sort.Search(len(c.calls), func(j int) bool { return c.calls[j].end > s.start }); j < len(c.calls); j++ {
		cl := &c.calls[j]
		if cl.start >= s.end {
			break
		}
		if cl.pid != c.rangePids[s.proc] {
			continue
		}
		lo, hi := max(cl.start, s.start), min(cl.end, s.end)
		if hi <= lo {
			continue
		}
		if have && lo <= cur.hi {
			cur.hi = max(cur.hi, hi)
			continue
		}
		if have {
			row.BlockedNs += cur.hi - cur.lo
		}
		cur, have = span{lo, hi}, true
	}
	if have {
		row.BlockedNs += cur.hi - cur.lo
	}
	for j := sort.Search(len(c.gfaults), func(j int) bool { return c.gfaults[j].start >= s.start }); j < len(c.gfaults) && c.gfaults[j].start < s.end; j++ {
		row.GPUFaults += int64(c.gfaults[j].n)
	}
	for j := sort.Search(len(c.cfaults), func(j int) bool { return c.cfaults[j].t >= s.start }); j < len(c.cfaults) && c.cfaults[j].t < s.end; j++ {
		row.CPUFaults++
	}
	for j := sort.Search(len(c.migrations), func(j int) bool { return c.migrations[j].start >= s.start }); j < len(c.migrations) && c.migrations[j].start < s.end; j++ {
		row.MigratedBytes += int64(c.migrations[j].bytes)
	}
	if row.DurationNs > 0 {
		row.BlockedShare = round3(float64(row.BlockedNs) / float64(row.DurationNs))
	}
	for _, e := range a.res.Episodes {
		if e.FirstStep <= i && i <= e.LastStep {
			row.Episode = e.Index
		}
	}
	return row
}

// WarmupFactor is how much slower than the median of the others the
// first step must be to be the warm-up (lazy initialization, allocator
// growth, autotuning, the first migration of every page).
const WarmupFactor = 1.5

// stepDurations reports whether the first of the steps' durations is a
// warm-up (with at least 3 steps, more than WarmupFactor times the
// median of the others: it is then reported apart, like a process's
// start-up call) and summarizes the steady steps' (all but a warm-up),
// the percentiles taken by nearest rank (the ceil(q*n)-th smallest
// value): with tens of steps an interpolated P99 lies between the two
// slowest steps, a time no step took. One sort serves both: the others'
// durations are sorted, and the first, when it is no warm-up, is put in
// its place.
func stepDurations(durs []int64) (bool, Dist) {
	if len(durs) == 0 {
		return false, summarize(nil)
	}
	f := make([]float64, len(durs)) // integral ns: exact, and in the same order
	for i, v := range durs {
		f[i] = float64(v)
	}
	rest := f[1:]
	radix.Floats(rest, nil)
	warm := len(durs) >= 3 && f[0] > WarmupFactor*rest[(len(rest)-1)/2]
	s := rest
	if !warm {
		v, i := f[0], 0
		for ; i < len(rest) && rest[i] < v; i++ {
			f[i] = rest[i]
		}
		f[i] = v
		s = f
	}
	ds := summarizeSorted(s)
	rank := func(q float64) float64 {
		return s[max(0, int(math.Ceil(q*float64(len(s))))-1)]
	}
	ds.Median, ds.P95, ds.P99 = rank(0.5), rank(0.95), rank(0.99)
	return warm, ds
}

// verdict decides storm / no_storm / insufficient_data and says why.
// stormCause says what the host-blocking calls of episodes stalled on, as
// far as the rows show: page faults with or without the migration they
// drove (faults that migrate nothing are the first touch of fresh managed
// pages, not a ping-pong of data), or fault-driven migration where faults
// were not recorded.
func stormCause(eps []Episode, faultsCollected bool) string {
	var gpu, cpu, mig int64
	for _, e := range eps {
		gpu += e.GPUFaults
		cpu += e.CPUFaults
		for _, m := range e.Migrations {
			if DemandCause(m.Cause) {
				mig += m.Bytes
			}
		}
	}
	switch {
	case gpu+cpu > 0 && mig > 0:
		return fmt.Sprintf("unified-memory page faults and the migration they drove (%d GPU and %d CPU page faults, %s migrated on demand)", gpu, cpu, fmtBytes(mig))
	case gpu+cpu > 0:
		return fmt.Sprintf("unified-memory page faults that migrated no data (%d GPU and %d CPU page faults, 0 B migrated on demand: first touch of freshly allocated managed pages)", gpu, cpu)
	case !faultsCollected:
		return fmt.Sprintf("fault-driven unified-memory migration (%s; page faults were not recorded)", fmtBytes(mig))
	}
	return fmt.Sprintf("fault-driven unified-memory migration (%s)", fmtBytes(mig))
}

func (a summarizer) verdict() {
	r := &a.res
	c := a.c
	u := &r.UnifiedMemory
	// The migrations by cause, from umSummary's aggregates (a walk of
	// millions of migrations here was 4-5 ms of one goroutine).
	var demandMig, unknownMig, prefetchMig int
	for key, x := range a.migs.m {
		switch cause := key[1]; {
		case demand(cause):
			demandMig += int(x.Count)
		case cause == CauseUserPrefetch:
			prefetchMig += int(x.Count)
		case cause <= CauseUnknown:
			unknownMig += int(x.Count)
		}
	}
	faultsCollected := u.FaultTables || isTrue(a.info.CollectGPUFaults) || isTrue(a.info.CollectCPUFaults)
	umUsed := c.managed > 0 || len(c.allocs) > 0 || len(c.migrations) > 0 || u.GPUFaults > 0 || u.CPUFaults > 0
	flags := "profile with nsys --cuda-um-gpu-page-faults=true --cuda-um-cpu-page-faults=true (and --trace=cuda)"
	switch {
	case len(r.Episodes) > 0:
		r.Verdict = VerdictStorm
		var stormNs, excess int64
		for _, e := range r.Episodes {
			stormNs += e.DurationNs
			excess += e.ExcessNs
		}
		r.Reason = fmt.Sprintf("%d storm episode(s) covering %s: host-blocking calls stalled on %s (%s excess blocked time)",
			len(r.Episodes), fmtNs(stormNs), stormCause(r.Episodes, faultsCollected), fmtNs(excess))
	case len(c.calls) == 0:
		r.Verdict = VerdictInsufficient
		r.Reason = "the trace has no host-blocking CUDA calls (synchronizations, synchronous copies, frees or allocations) to assess"
	case !umUsed:
		r.Verdict = VerdictNoStorm
		r.Reason = "no unified-memory activity: no managed allocations, migrations or page faults"
		if s := implicitSummary(r.SyncAPIs, 3); s != "" {
			r.Reason += "; implicit host syncs: " + s
		}
	case demandMig == 0 && !faultsCollected && unknownMig > 0:
		r.Verdict = VerdictInsufficient
		r.Reason = fmt.Sprintf("%d unified-memory migrations with no recorded cause and no page-fault tables: cannot tell fault-driven from requested migration; %s", unknownMig, flags)
	case demandMig == 0 && !faultsCollected && len(c.migrations) == 0:
		r.Verdict = VerdictInsufficient
		r.Reason = "managed memory is allocated but the trace has neither page-fault tables nor unified-memory migrations; " + flags
	case !faultsCollected:
		// Migration causes alone show no storm, but a storm of page
		// faults that migrate little (first touch of fresh managed pages)
		// leaves no migration rows: gate calls this unknown, and so does
		// the verdict.
		r.Verdict = VerdictInsufficient
		r.Reason = fmt.Sprintf("unified memory is in use (%d migrations, %d of them fault-driven) and no host-blocking call stalled on the migrations recorded, "+
			"but page faults were not recorded, so stalls on page faults cannot be ruled out; %s", len(c.migrations), demandMig, flags)
	default:
		r.Verdict = VerdictNoStorm
		stalls := 0
		for i := range c.calls {
			if c.calls[i].stall {
				stalls++
			}
		}
		switch {
		case stalls > 0:
			r.Reason = fmt.Sprintf("%d host-blocking call(s) overlapped fault-driven migration, but not enough to form a storm (see isolated stalls)", stalls)
		case demandMig == 0 && u.GPUFaults == 0 && prefetchMig > 0:
			r.Reason = fmt.Sprintf("unified-memory traffic is %d user prefetches with no page faults; syncs are not inflated", prefetchMig)
		default:
			r.Reason = "unified memory is in use but no host-blocking call stalled on page faults or fault-driven migration"
		}
	}
}

// implicitSummary lists the top implicit-sync APIs by blocked time, e.g.
// "16 cudaMemcpy (144.2 ms), 1 cudaMalloc (146.1 ms)".
func implicitSummary(apis []APIStats, limit int) string {
	var parts []string
	for _, a := range apis { // sorted by total time
		if a.Kind == Implicit && len(parts) < limit {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", a.Count, a.Name, fmtNs(a.Total)))
		}
	}
	return strings.Join(parts, ", ")
}

func isTrue(b *bool) bool { return b != nil && *b }

// Fault collection states (UM.GPUFaultCollection, UM.CPUFaultCollection).
const (
	CollectionOn      = "on"
	CollectionOff     = "off"
	CollectionUnknown = "unknown"
)

// collection tells whether faults of one kind were recorded: rows prove
// it; otherwise the capture flag (META_DATA_CAPTURE) decides. A fault
// table without rows proves nothing (non-lazy exports create every
// table).
func collection(flag *bool, rows bool) string {
	switch {
	case rows || isTrue(flag):
		return CollectionOn
	case flag != nil:
		return CollectionOff
	}
	return CollectionUnknown
}

// headCalls sets the headline's figures of the host-blocking calls and
// migrations. They need only the sorted records, so they are summed
// beside the episodes (sorting the calls' durations took 10-20 ms of the
// serial tail on the 12M synth traces); headline sets the rest.
func (a summarizer) headCalls() {
	h := &a.res.Headline
	c := a.c
	durs := make([]int64, 0, len(c.calls))
	var cur span
	have := false
	for i := range c.calls {
		cl := &c.calls[i]
		durs = append(durs, cl.dur())
		if cl.explicit {
			h.ExplicitSyncs++
		} else {
			h.ImplicitSyncs++
		}
		// Union over all threads, so overlapping waits count once.
		if have && cl.start <= cur.hi {
			cur.hi = max(cur.hi, cl.end)
			continue
		}
		if have {
			h.BlockedNs += cur.hi - cur.lo
		}
		cur, have = span{cl.start, cl.end}, true
	}
	if have {
		h.BlockedNs += cur.hi - cur.lo
	}
	h.HostBlocking = len(c.calls)
	d := summarize(durs)
	h.SyncP50Ns, h.SyncP99Ns = d.Median, d.P99
	for i := range c.migrations {
		if m := &c.migrations[i]; demand(int32(c.migClasses.of(m).cause)) {
			h.DemandMigBytes += int64(m.bytes)
		}
	}
}

// headline sets the rest of the headline (headCalls): the episodes',
// unified memory's and steps' figures.
func (a summarizer) headline() {
	r := &a.res
	h := &r.Headline
	for _, e := range r.Episodes {
		h.StormTimeNs += e.DurationNs
		h.StormExcessNs += e.ExcessNs
	}
	if span := a.hi - a.lo; span > 0 {
		h.StormShare = round3(float64(h.StormTimeNs) / float64(span))
		h.BlockedShare = round3(float64(h.BlockedNs) / float64(span))
	}
	u := r.UnifiedMemory
	h.GPUFaults, h.CPUFaults = u.GPUFaults, u.CPUFaults
	h.FaultsPerSec = round3(u.GPUFaultsPerSec + u.CPUFaultsPerSec)
	h.MigratedBytes = u.MigratedBytes
	h.StepP50Ns, h.StepP99Ns = r.Steps.Duration.Median, r.Steps.Duration.P99
}

func (a summarizer) warnings() {
	r := &a.res
	r.Warnings = []string{}
	in := a.info
	if !in.HasGPUFaultTable && !in.HasCPUFaultTable {
		switch {
		case isTrue(in.CollectGPUFaults) || isTrue(in.CollectCPUFaults):
			// Collected, and lazily omitted because there were none.
		case in.CollectGPUFaults != nil:
			r.Warnings = append(r.Warnings, "page-fault collection was off for this capture: fault counts are unknown; enable with --cuda-um-gpu-page-faults=true --cuda-um-cpu-page-faults=true")
		default:
			r.Warnings = append(r.Warnings, "the trace has no page-fault tables and does not say whether faults were collected; fault counts may be missing (nsys --cuda-um-gpu-page-faults=true --cuda-um-cpu-page-faults=true)")
		}
	}
	if a.c.clamped > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d migration records longer than 4.29 s or larger than 4 GiB were clamped to those values", a.c.clamped))
	}
	if n := sumValues(a.c.gclamped); n > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d GPU page-fault records longer than 4.29 s or of a fault count outside 0..2^32-1 were clamped to those bounds", n))
	}
	if len(a.c.migrations) > 0 && !in.HasMigrationCause {
		r.Warnings = append(r.Warnings, "this export has no migrationCause column: migrations cannot be split into fault-driven and requested")
	}
	for _, d := range in.Diagnostics {
		r.Warnings = append(r.Warnings, "nsys: "+d)
	}
	// Values the source replaced or rows it left out, in every scan so
	// far (this runs after the last one).
	if w, ok := a.src.(ingest.Warner); ok {
		for _, x := range w.Warnings() {
			r.Warnings = append(r.Warnings, "input: "+x)
		}
	}
	for _, s := range r.SyncAPIs {
		if s.Count < 20 && s.Count > 1 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %d calls, P95/P99 rest on few samples", s.Name, s.Count))
		}
	}
}

// fmtNs formats a duration for prose.
func fmtNs(ns int64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", float64(ns)/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.1f ms", float64(ns)/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", float64(ns)/1e3)
	}
	return fmt.Sprintf("%d ns", ns)
}

// FormatNs formats a duration in ns for humans (used by reports).
func FormatNs(ns float64) string { return fmtNs(int64(ns)) }

// apiTables are apiStats' tables made ahead (analyzeProcesses), with
// its samples when asked for.
type apiTables struct {
	apis, sync []APIStats
	samples    map[string][]int64
}

// apiStats fills the per-API tables from the packed per-call samples and
// drops them (docs/performance.md, "Tried and dropped": no forced
// collection before its sort buffer). With Options.SyncSamples it keeps
// each host-blocking API's sorted samples (File.Sync).
func (a *analysis) apiStats() {
	c := a.c
	r := &a.res
	if t := c.apiTables; t != nil {
		r.APIs, r.SyncAPIs, a.sync = t.apis, t.sync, t.samples
		return
	}
	if a.opts.SyncSamples {
		a.sync = map[string][]int64{}
	}
	r.APIs = []APIStats{}
	r.SyncAPIs = []APIStats{}
	emit := func(id int32, d Dist, samples func() []int64) {
		name := c.apiNames.At(id)
		s := APIStats{Name: name, Dist: d}
		if cl, ok := HostBlocking[name]; ok {
			s.Kind = cl.Kind
			r.SyncAPIs = append(r.SyncAPIs, s)
			if a.sync != nil {
				a.sync[name] = samples()
			}
		}
		r.APIs = append(r.APIs, s)
	}
	emitSorted := func(id int32, ds []float64) { // ds sorted
		emit(id, summarizeSorted(ds), func() []int64 { return samplesOf(ds) })
	}
	seen := map[int32]bool{}
	var buf []float64
	// The most called API first: its buffer serves every other, and the
	// others' samples are freed as each is done.
	order := make([]int32, 0, len(c.apiDurs))
	for i, durs := range c.apiDurs {
		if durs.Len() > 0 {
			order = append(order, int32(i))
		}
	}
	slices.SortStableFunc(order, func(x, y int32) int { return cmp.Compare(c.apiDurs[y].Len(), c.apiDurs[x].Len()) })
	for _, id := range order {
		i, durs := int(id), c.apiDurs[id]
		seen[id] = true
		if s, ok := newDurSample(durs, c.longAPI[id]); ok {
			emit(id, s.dist(), s.ints)
			s.release()
			c.apiDurs[i] = nil
			continue
		}
		// One buffer serves every API: summarizeSorted keeps nothing.
		ds := sortedDurations(durs, c.longAPI[id], buf)
		buf = ds
		emitSorted(id, ds)
		c.apiDurs[i] = nil
	}
	for id, ls := range c.longAPI {
		if !seen[id] {
			emitSorted(id, sortedDurations(nil, ls, nil))
		}
	}
	c.apiDurs = nil
	byTotal := func(x, y APIStats) int { return cmp.Or(cmp.Compare(y.Total, x.Total), cmp.Compare(x.Name, y.Name)) }
	slices.SortFunc(r.APIs, byTotal)
	slices.SortFunc(r.SyncAPIs, byTotal)
}

// joinGroups joins groupings of consecutive chunks: each key's values in
// chunk order.
func joinGroups[K comparable](parts []map[K][]int64) map[K][]int64 {
	if len(parts) == 1 {
		return parts[0]
	}
	out := map[K][]int64{}
	for _, p := range parts {
		for key, vs := range p {
			out[key] = append(out[key], vs...)
		}
	}
	return out
}

// timeline bins the trace span into TimelineBins equal bins, and by
// process when there are several.
func (a timeliner) timeline() {
	tl := &a.res.Timeline
	tl.StartNs = a.lo
	tl.Bins = []TimelineBin{}
	span := a.hi - a.lo
	if span <= 0 {
		return
	}
	tl.BinNs = (span + TimelineBins - 1) / TimelineBins
	pidSet := map[int64]bool{}
	for k := range a.c.threads {
		pidSet[k.pid] = true
	}
	var pids []int64
	if len(pidSet) >= 2 {
		pids = slices.Sorted(maps.Keys(pidSet))
	}
	lanes := a.fillBins(pids)
	// The whole trace's bins are the sum of its processes' and of the
	// records of none of them (lanes' last).
	tl.Bins = a.newBins()
	for _, l := range lanes {
		addBins(tl.Bins, l)
	}
	a.markStorms(tl.Bins, func(int64) bool { return true })
	for i, p := range pids {
		bins := a.newBins()
		addBins(bins, lanes[i])
		tl.Lanes = append(tl.Lanes, TimelineLane{Pid: p, Bins: bins})
	}
}

// addBins adds the figures of src to dst (bin by bin; not their edges or
// Storm).
func addBins(dst, src []TimelineBin) {
	for i := range src {
		d, s := &dst[i], &src[i]
		d.BlockedNs += s.BlockedNs
		d.Stalls += s.Stalls
		d.GPUFaults += s.GPUFaults
		d.CPUFaults += s.CPUFaults
		d.DemandBytes += s.DemandBytes
	}
}

// fillBins bins the host-blocking calls, faults and fault-driven
// migrations by process, in one pass over each record list, in chunks
// run concurrently: one lane of TimelineBins bins (figures only) per pid
// of pids, in its order, and a last one for the records of any other
// process. The figures are sums of integers, the same in any order.
func (a timeliner) fillBins(pids []int64) [][]TimelineBin {
	binNs := a.res.Timeline.BinNs
	bin := func(t int64) int {
		return min(max(int((t-a.lo)/binNs), 0), TimelineBins-1)
	}
	var index map[int64]int
	if len(pids) > 8 {
		index = make(map[int64]int, len(pids))
		for i, p := range pids {
			index[p] = i
		}
	}
	laneOf := func(pid int64) int {
		if index != nil {
			if i, ok := index[pid]; ok {
				return i
			}
			return len(pids)
		}
		for i, p := range pids {
			if p == pid {
				return i
			}
		}
		return len(pids)
	}
	newLanes := func() [][]TimelineBin {
		l := make([][]TimelineBin, len(pids)+1)
		for i := range l {
			l[i] = make([]TimelineBin, TimelineBins)
		}
		return l
	}
	out := newLanes()
	var mu sync.Mutex
	each := func(n int, fill func(lanes [][]TimelineBin, lo, hi int)) {
		par.Chunks(n, a.opts.chunkOr(minChunk), func(lo, hi int) {
			lanes := newLanes()
			fill(lanes, lo, hi)
			mu.Lock()
			defer mu.Unlock()
			for i := range out {
				addBins(out[i], lanes[i])
			}
		})
	}
	c := a.c
	each(len(c.calls), func(lanes [][]TimelineBin, lo, hi int) {
		for i := lo; i < hi; i++ {
			cl := &c.calls[i]
			bins := lanes[laneOf(cl.pid)]
			if cl.stall {
				bins[bin(cl.start)].Stalls++
			}
			for b := bin(cl.start); b <= bin(cl.end); b++ {
				start := a.lo + int64(b)*binNs
				lo, hi := max(cl.start, start), min(cl.end, start+binNs)
				if hi > lo {
					bins[b].BlockedNs += hi - lo
				}
			}
		}
	})
	each(len(c.gfaults), func(lanes [][]TimelineBin, lo, hi int) {
		for _, g := range c.gfaults[lo:hi] {
			lanes[laneOf(int64(g.pid))][bin(g.start)].GPUFaults += int64(g.n)
		}
	})
	each(len(c.cfaults), func(lanes [][]TimelineBin, lo, hi int) {
		for _, f := range c.cfaults[lo:hi] {
			lanes[laneOf(int64(f.pid))][bin(f.t)].CPUFaults++
		}
	})
	each(len(c.migrations), func(lanes [][]TimelineBin, lo, hi int) {
		for i := range c.migrations[lo:hi] {
			m := &c.migrations[lo+i]
			if k := c.migClasses.of(m); demand(int32(k.cause)) {
				lanes[laneOf(int64(k.pid))][bin(m.start)].DemandBytes += int64(m.bytes)
			}
		}
	})
	return out
}

// markStorms sets Storm on the bins that episodes of the processes keep
// accepts overlap.
func (a timeliner) markStorms(bins []TimelineBin, keep func(pid int64) bool) {
	binNs := a.res.Timeline.BinNs
	if binNs <= 0 {
		return
	}
	bin := func(t int64) int {
		return min(max(int((t-a.lo)/binNs), 0), TimelineBins-1)
	}
	for _, e := range a.res.Episodes {
		if !keep(e.Pid) {
			continue
		}
		for b := bin(e.StartNs); b <= bin(e.EndNs-1); b++ {
			bins[b].Storm = true
		}
	}
}

// laneStorms marks each lane's own episodes; it runs after the episodes
// got their process (multiFigures).
func (a timeliner) laneStorms() {
	for i := range a.res.Timeline.Lanes {
		l := &a.res.Timeline.Lanes[i]
		a.markStorms(l.Bins, func(q int64) bool { return q == l.Pid })
	}
}

// sumValues is the sum of m's values.
func sumValues(m map[int64]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
