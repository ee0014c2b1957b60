package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/umtrace/umtrace/ingest"

	"github.com/umtrace/umtrace/analyze/internal/chunks"
	"github.com/umtrace/umtrace/analyze/internal/intern"
	"github.com/umtrace/umtrace/analyze/internal/par"
)

// The collect phase streams every table once, in parallel, into compact
// structures: only what the analysis needs, never a copy of a whole table.

type pidCorr struct{ pid, corr int64 }
type streamKey struct{ pid, stream int64 }

// call is one host-blocking API call.
type call struct {
	start, end int64
	pid, tid   int64
	corr       int64
	// Filled by the analysis.
	overlap float64
	stream  int64   // stream synced, or -1 for device-wide
	waited  gpuWork // GPU work waited for; name noWork when none
	// The small fields last, so that a call is 80 bytes, not 96: there
	// can be millions.
	api      int32 // id in collector.apiNames
	scope    SyncScope
	explicit bool // an explicit sync (HostBlocking's Kind); no strings here, so the GC need not scan calls
	stall    bool // filled by the analysis
}

// callRec is a call as collect reads it, in 48 bytes: the fields the
// analysis fills (overlap, stream, waited, stall) are not carried through
// the read, the analysis' memory peak (name-diverse 12M: 157k calls, 5 MB).
type callRec struct {
	start, end int64
	pid, tid   int64
	corr       int64
	api        int32
	scope      SyncScope
	explicit   bool
}

// callsOf returns the calls of recs, in order, dropping each block once
// copied; the blocks are copied on several goroutines, each to its place
// (on one, the copy was 10 ms of the read's end on 16 cores, the others
// idle).
func callsOf(recs *chunks.List[callRec]) []call {
	out := make([]call, recs.Len())
	bs := recs.Take()
	at := make([]int, len(bs)+1) // block k's first call
	for k, b := range bs {
		at[k+1] = at[k] + len(b)
	}
	par.Chunks(len(bs), 2, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			o := out[at[k]:at[k+1]]
			for i := range bs[k] {
				r := &bs[k][i]
				o[i] = call{start: r.start, end: r.end, pid: r.pid, tid: r.tid, corr: r.corr, api: r.api, scope: r.scope, explicit: r.explicit}
			}
			bs[k] = nil
		}
	})
	return out
}

// graphLaunch is one CUDA graph launch call.
type graphLaunch struct{ start, pid int64 }

// isGraphLaunch reports whether an API launches a CUDA graph.
func isGraphLaunch(name string) bool { return name == "cudaGraphLaunch" || name == "cuGraphLaunch" }

// noWork marks a call that waited for no GPU work.
const noWork = -2000

func (c *call) dur() int64 { return c.end - c.start }

// gpuWork is one kernel, copy or memset on a stream, in 16 bytes. name >= 0
// is a kernel name id; negative values encode copies (-1-copyKind) and
// memsets (memsetCode). dur saturates at maxDur; the exact duration of such
// (rare, > 4.29 s) work is in collector.longWork.
type gpuWork struct {
	end  int64
	dur  uint32
	name int32
}

const maxDur = math.MaxUint32

type longKey struct {
	k    streamKey
	end  int64
	name int32
}

const memsetCode = -1000

// migration is one UM migration in 24 bytes (32 with its process,
// direction and cause as fields: 10 MB more at name-diverse 12M's memory
// peak, with its 1.3M migrations). What few values those three take, with
// the address's top bits, are the migration's class, held once in the
// collector's migClasses: tagged is the class's index in its top
// 64-migAddrBits bits and the address's low migAddrBits bits below them.
// dur and bytes saturate at 2^32-1 (4.29 s, 4 GiB per record);
// collector.clamped counts such records.
type migration struct {
	start  int64
	tagged uint64
	dur    uint32
	bytes  uint32
}

// migAddrBits is how many of an address's low bits a migration holds; the
// rest is its class's (a 16 TiB region: a process's managed memory is in
// one or two).
const (
	migAddrBits   = 44
	migAddrMask   = 1<<migAddrBits - 1
	maxMigClasses = 1 << (64 - migAddrBits)
)

// class is m's index in its collector's migClasses.
func (m *migration) class() uint32 { return uint32(m.tagged >> migAddrBits) }

// migClass is what a migration's class stands for.
type migClass struct {
	pid    int32
	kind   int8   // 11 HtoD, 12 DtoH, 13 DtoD
	cause  int8   // -1 when the export has none
	addrHi uint32 // the address's bits above migAddrBits
}

// migClasses holds the classes of a collector's migrations, by index. The
// zero value is empty.
type migClasses struct {
	list []migClass
	ids  map[migClass]uint32 // list's index, once it is longer than migScan
	full bool                // a class past maxMigClasses was asked for
}

// migScan is the longest list of classes id scans instead of a map (a
// trace's migrations have a few: a map lookup per migration cost more).
const migScan = 16

// of is m's class.
func (t *migClasses) of(m *migration) *migClass { return &t.list[m.tagged>>migAddrBits] }

// addr is m's address.
func (t *migClasses) addr(m *migration) uint64 {
	return uint64(t.list[m.tagged>>migAddrBits].addrHi)<<migAddrBits | m.tagged&migAddrMask
}

// id returns k's index, adding it when new; past maxMigClasses classes it
// returns 0 and marks t full (collect then fails).
func (t *migClasses) id(k migClass) uint32 {
	if t.ids == nil {
		for i, x := range t.list {
			if x == k {
				return uint32(i)
			}
		}
	} else if id, ok := t.ids[k]; ok {
		return id
	}
	if len(t.list) == maxMigClasses {
		t.full = true
		return 0
	}
	id := uint32(len(t.list))
	t.list = append(t.list, k)
	switch {
	case t.ids != nil:
		t.ids[k] = id
	case len(t.list) > migScan:
		t.ids = make(map[migClass]uint32, 2*len(t.list))
		for i, x := range t.list {
			t.ids[x] = uint32(i)
		}
	}
	return id
}

// reset empties t, keeping its list's memory.
func (t *migClasses) reset() { t.list, t.ids, t.full = t.list[:0], nil, false }

// make returns the migration of these fields, its class added to t when
// new.
func (t *migClasses) make(start int64, dur, bytes uint32, pid int32, kind, cause int8, addr uint64) migration {
	id := t.id(migClass{pid: pid, kind: kind, cause: cause, addrHi: uint32(addr >> migAddrBits)})
	return migration{start: start, tagged: uint64(id)<<migAddrBits | addr&migAddrMask, dur: dur, bytes: bytes}
}

// retag moves ms from one table of classes to another: ids[i] is the
// first table's class i's index in the second.
func retag(ms []migration, ids []uint32) {
	for i := range ms {
		m := &ms[i]
		m.tagged = uint64(ids[m.class()])<<migAddrBits | m.tagged&migAddrMask
	}
}

func (m *migration) end() int64 { return m.start + int64(m.dur) }

// gfault is one GPU page-fault group in 32 bytes (48 with int64 fields:
// 300k of them at 12M rows). dur is its end minus its start, 0 for an end
// before the start (every figure took those as 0 long); dur and n
// saturate at 2^32-1 (4.29 s, 4.29G faults a group), and
// collector.gclamped counts such records by process. pid is nsys's 24-bit
// process id, dev the deviceId.
type gfault struct {
	start int64
	addr  uint64
	dur   uint32
	n     uint32
	pid   int32
	dev   int32 // per-device figures and lanes
}

func (g *gfault) end() int64 { return g.start + int64(g.dur) }

// newGFault returns the fault group of the row's fields, and whether a
// field was clamped.
func newGFault(start, end, pid int64, addr uint64, n, dev int64) (gfault, bool) {
	d := max(end-start, 0)
	clamped := d > maxDur || n < 0 || n > math.MaxUint32
	return gfault{start: start, addr: addr, dur: uint32(min(d, maxDur)), n: uint32(min(max(n, 0), math.MaxUint32)), pid: int32(pid), dev: int32(dev)}, clamped
}

// cfault is one CPU page fault in 24 bytes; pid is nsys's 24-bit process
// id.
type cfault struct {
	t    int64
	addr uint64
	pid  int32
	site int32
}

// nvtxRange is one NVTX range; its name is collector.nvtxNames'
// (rangeName), so that millions of ranges hold no pointer for the garbage
// collector to follow. The collector holds its ranges as rangeRecs; wide
// gives this form (the chosen steps keep it).
type nvtxRange struct {
	start, end int64
	proc       int32 // the process: collector.rangePids[proc]
	nameID     int32 // -1 for a null name
}

// rangeRec is one NVTX range as collected, in 16 bytes (24 as an
// nvtxRange: 2.5M ranges in name-diverse traces): its end as a duration
// (longRange: the end is in the collector's longEnds under its key) and
// its process and name as a key into the collector's rangeKeys (a name's
// ranges are mostly one process's: a key per name, more only for names
// several processes use, and one per long range).
type rangeRec struct {
	start int64
	dur   uint32
	key   uint32
}

// longRange marks a rangeRec whose duration does not fit (4.29 s or more,
// or an end before its start): its end is in longEnds[key].
const longRange = math.MaxUint32

// rangeKey is what a rangeRec's key stands for.
type rangeKey struct {
	proc   int32 // collector.rangePids[proc]
	nameID int32 // -1 for a null name
}

// rangeTable holds the NVTX ranges collect read, in table order, and what
// names them: each range's key stands for its (process, name) pair.
type rangeTable struct {
	ranges    []rangeRec
	rangeBuf  chunks.List[rangeRec] // ranges while collecting, where ranges was not sized up front
	rangeKeys []rangeKey            // by rangeRec.key
	longEnds  map[uint32]int64      // the ends of long ranges, by their keys
	rangePids []int64               // by rangeKey.proc
	rangeProc map[int64]int32       // the other way round, while collecting
	nameKey   []uint32              // while collecting: by name id + 1, the key of its first process's ranges + 1
	pairKey   map[rangeKey]uint32   // while collecting: keys of names' other processes
	nvtxNames *rangeNameTable
}

// rangeView is what a job's collectives need of the collected ranges.
type rangeView struct {
	ranges   []rangeRec
	keys     []rangeKey
	longEnds map[uint32]int64
	pids     []int64
}

// rangeEnd is r's end.
func rangeEnd(r *rangeRec, longEnds map[uint32]int64) int64 {
	if r.dur == longRange {
		return longEnds[r.key]
	}
	return r.start + int64(r.dur)
}

// wide returns r as an nvtxRange.
func (c *rangeTable) wide(r *rangeRec) nvtxRange {
	k := c.rangeKeys[r.key]
	return nvtxRange{start: r.start, end: rangeEnd(r, c.longEnds), proc: k.proc, nameID: k.nameID}
}

// rangePid is r's process.
func (c *rangeTable) rangePid(r *rangeRec) int64 { return c.rangePids[c.rangeKeys[r.key].proc] }

// rangeNameID is r's name id (-1 for a null name).
func (c *rangeTable) rangeNameID(r *rangeRec) int32 { return c.rangeKeys[r.key].nameID }

// newRange returns the range [s, e) of key's process and name; a long one
// gets a key of its own, which holds its end.
func (c *rangeTable) newRange(s, e int64, key uint32) rangeRec {
	if d := e - s; d >= 0 && d < longRange {
		return rangeRec{start: s, dur: uint32(d), key: key}
	}
	pn := c.rangeKeys[key]
	k := c.addRangeKey(pn.proc, pn.nameID)
	if c.longEnds == nil {
		c.longEnds = map[uint32]int64{}
	}
	c.longEnds[k] = e
	return rangeRec{start: s, dur: longRange, key: k}
}

// rangeKeyOf returns the key of process proc's ranges named id.
func (c *rangeTable) rangeKeyOf(proc, id int32) uint32 {
	i := int(id) + 1
	if i >= len(c.nameKey) {
		c.nameKey = append(c.nameKey, make([]uint32, i+1-len(c.nameKey))...)
	}
	k := c.nameKey[i]
	if k == 0 {
		k = c.addRangeKey(proc, id) + 1
		c.nameKey[i] = k
		return k - 1
	}
	if c.rangeKeys[k-1].proc == proc {
		return k - 1
	}
	// A name several processes use: a key per pair.
	if c.pairKey == nil {
		c.pairKey = map[rangeKey]uint32{}
	}
	pk := rangeKey{proc, id}
	k2, ok := c.pairKey[pk]
	if !ok {
		k2 = c.addRangeKey(proc, id)
		c.pairKey[pk] = k2
	}
	return k2
}

func (c *rangeTable) addRangeKey(proc, id int32) uint32 {
	if len(c.rangeKeys) >= longRange {
		panic("analyze: more than 2^32-1 NVTX range keys")
	}
	c.rangeKeys = append(c.rangeKeys, rangeKey{proc, id})
	return uint32(len(c.rangeKeys) - 1)
}

// rangeName is r's name ("" for a null one).
func (c *rangeTable) rangeName(r nvtxRange) string {
	if r.nameID < 0 {
		return ""
	}
	return c.nvtxNames.name(r.nameID)
}

type alloc struct {
	addr  uint64
	pid   int64
	bytes int64
	kind  int32
}

type span struct{ lo, hi int64 }

func (s *span) add(lo, hi int64) {
	if lo < s.lo {
		s.lo = lo
	}
	if hi > s.hi {
		s.hi = hi
	}
}

func newSpan() span { return span{math.MaxInt64, math.MinInt64} }

type collector struct {
	apiTables *apiTables // the per-API tables, made ahead (analyzeProcesses); nil: apiStats makes them

	// API
	apiNames *intern.Table
	// API: the duration of every call, by API id; calls of 4.29 s or more
	// keep their exact duration in longAPI instead. The pass collects them
	// by process (apiBy, with each process's call span and managed
	// allocations); finish puts the whole trace's together.
	apiDurs []*durList
	longAPI map[int32][]int64
	apiBy   byPid[pidAPI]
	// calls is filled from callBuf when the pass ends: a list grown by
	// doubling would carry up to half its size spare through the analysis.
	calls   []call
	callBuf chunks.List[callRec]
	managed int
	// graphLaunches are the CUDA graph launches (cudaGraphLaunch,
	// cuGraphLaunch): a periodic mark of iterations (stepinfer.go).
	graphLaunches []graphLaunch
	threads       map[streamKey]bool // (pid, tid)
	// firstRT is each process's first CUDA runtime call (startup.go).
	firstRT map[int64]*call
	apiSpan span
	// GPU work
	kernelNames *intern.Table
	kernels     map[streamKey]*chunks.List[gpuWork]
	copies      map[streamKey]*chunks.List[gpuWork]
	memsets     map[streamKey]*chunks.List[gpuWork]
	copyStream  map[pidCorr]int64 // explicit copy or memset → stream
	setStream   map[pidCorr]int64
	gpuSpan     span
	// The GPU tables' spans and clamped migrations, by process (one
	// goroutine reads each table); finish sums them into gpuSpan and
	// clamped, and keeps each process's in pidGPU for split.
	kernelBy, memcpyBy, memsetBy byPid[pidWork]
	pidGPU                       map[int64]pidWork
	longMu                       sync.Mutex
	// Split (procsplit.go): a process's collector knows the whole file's
	// (whole): its analysis hands it its merged GPU work, which the whole
	// trace's takes as sortedWork instead of merging those streams again;
	// splitMu guards the whole trace's work maps meanwhile. Done, a
	// process's analysis gives back its calls' annotations and its
	// fault-driven activity (output): each call's overlap, stream and
	// waited work, and the union, are the same in the whole analysis,
	// which takes them (annotated: written into calls by annotate;
	// procUnion) instead of computing them.
	whole      *collector
	sortedWork map[streamKey][]gpuWork
	splitMu    sync.Mutex
	ords       *procOrds // each record's process, while split runs
	annotated  bool      // every process's analysis annotated its calls
	procUnion  map[int64][]span
	longWork   map[longKey]int64
	// What the kernel table's commits reuse (workbatch.go).
	commitScratch commitScratch
	// Sync records
	syncStream map[pidCorr]int64
	// UM
	migrations []migration
	migClasses migClasses // the migrations' classes
	clamped    int        // migrations whose duration or size exceeded 32 bits
	gfaults    []gfault
	gclamped   map[int64]int // GPU fault records clamped to 32 bits, by process (one goroutine reads the table)
	cfaults    []cfault
	siteNames  *intern.Table
	allocs     []alloc
	// Per-device and memory figures (devices.go), fed by the same pass.
	multi *multiData
	// NVTX ranges (rangeTable), threads, GPUs
	rangeTable
	// For a job (collectives): per NVTX name id what a job needs of it,
	// and per process the rank its NVTX rows name (its collective ranges
	// are taken from ranges after the analysis, collectiveRanges).
	nvtxMeta    []nvtxMeta
	nvtxRow     int64
	nvtxRanks   byPid[pidRank]
	threadNames map[streamKey]string
	gpus        []string
}

// needed lists the columns the collector reads from each table; a
// ColumnScanner may leave the others null.
var needed = map[*ingest.Table][]string{
	ingest.API:      {ingest.ColStart, ingest.ColEnd, ingest.ColPid, ingest.ColTid, ingest.ColCorrelationID, ingest.ColName},
	ingest.Kernel:   {ingest.ColStart, ingest.ColEnd, ingest.ColPid, ingest.ColStreamID, ingest.ColName},
	ingest.Memcpy:   {ingest.ColStart, ingest.ColEnd, ingest.ColPid, ingest.ColStreamID, ingest.ColCorrelationID, ingest.ColBytes, ingest.ColCopyKind, ingest.ColMigCause, ingest.ColVirtAddr},
	ingest.Memset:   {ingest.ColStart, ingest.ColEnd, ingest.ColPid, ingest.ColStreamID, ingest.ColCorrelationID},
	ingest.Sync:     {ingest.ColPid, ingest.ColStreamID, ingest.ColCorrelationID},
	ingest.GPUFault: {ingest.ColStart, ingest.ColEnd, ingest.ColPid, ingest.ColDeviceID, ingest.ColAddress, ingest.ColNumFaults},
	ingest.CPUFault: {ingest.ColStart, ingest.ColPid, ingest.ColAddress, ingest.ColFunction, ingest.ColModule, ingest.ColSourceFile, ingest.ColSourceLine},
	ingest.NVTX:     {ingest.ColStart, ingest.ColEnd, ingest.ColPid, ingest.ColEventType, ingest.ColName},
	ingest.MemUsage: {ingest.ColAddress, ingest.ColPid, ingest.ColBytes, ingest.ColMemKind, ingest.ColOperation},
}

// idCols is cols with the kernel name as ids (ingest.ColNameID).
func idCols(cols []string) []string {
	out := slices.Clone(cols)
	for i, c := range out {
		if c == ingest.ColName {
			out[i] = ingest.ColNameID
		}
	}
	return out
}

// tap is an extra consumer of a table's batches in collect's one pass, with
// the columns it reads.
type tap struct {
	cols []string
	fn   func(arrow.RecordBatch)
	prep func(arrow.RecordBatch) func() // as feed's; nil: none
}

// part is one consumer of collect's pass: a collector fed every row.
type part struct {
	c *collector
}

// collect reads every table of src, once: the collector's own records and
// the per-device figures' taps (newMultiData) from the same batches.
func collect(src ingest.Source) (*collector, error) {
	p := &part{}
	if err := collectParts(src, []*part{p}); err != nil {
		return nil, err
	}
	return p.c, nil
}

func newCollector() *collector {
	c := &collector{
		apiNames: intern.New(), kernelNames: intern.New(), siteNames: intern.New(), rangeTable: rangeTable{nvtxNames: newRangeNameTable()},
		threads: map[streamKey]bool{}, kernels: map[streamKey]*chunks.List[gpuWork]{}, copies: map[streamKey]*chunks.List[gpuWork]{},
		memsets: map[streamKey]*chunks.List[gpuWork]{}, copyStream: map[pidCorr]int64{}, setStream: map[pidCorr]int64{},
		syncStream: map[pidCorr]int64{}, threadNames: map[streamKey]string{},
		apiSpan: newSpan(), gpuSpan: newSpan(), longAPI: map[int32][]int64{}, longWork: map[longKey]int64{},
		firstRT: map[int64]*call{},
	}
	c.apiBy.mk = newPidAPI
	c.nvtxRanks.mk = newPidRank
	c.kernelBy.mk, c.memcpyBy.mk, c.memsetBy.mk = newPidWork, newPidWork, newPidWork
	return c
}

// cudaPids lists the processes with GPU work (kernels, copies) or a
// host-blocking CUDA call, sorted.
func (c *collector) cudaPids() []int64 {
	set := map[int64]bool{}
	for k := range c.kernels {
		set[k.pid] = true
	}
	for k := range c.copies {
		set[k.pid] = true
	}
	// A process with CUDA API calls but no GPU work is one only if some
	// call blocked the host (an allocation, a free, a sync): torchrun's
	// launcher imports torch and makes a driver query
	// (cuModuleGetLoadingMode) and nothing else; it is no rank.
	apiOnly := map[int64]bool{}
	for k := range c.threads {
		if !set[k.pid] {
			apiOnly[k.pid] = true
		}
	}
	for i := 0; i < len(c.calls) && len(apiOnly) > 0; i++ {
		if p := c.calls[i].pid; apiOnly[p] {
			set[p] = true
			delete(apiOnly, p)
		}
	}
	out := make([]int64, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// feed is one part's consumer of one table: prep (optional) runs on each
// batch where it was read, and what it returns is run where fn runs, in
// storage order, before fn (ingest.PreparedScanner); done (optional) runs
// once the table is read, to drop what only its reading needs while the
// other tables are still read.
type feed struct {
	fn   func(arrow.RecordBatch)
	prep func(arrow.RecordBatch) func()
	done func()
	cols []string
}

// feeds returns the part's consumers, by table, and a function that
// finishes the part's collector after the pass.
func (p *part) feeds(src ingest.Source) (map[*ingest.Table]feed, func()) {
	c := newCollector()
	p.c = c
	if est, ok := src.(ingest.RowEstimator); ok {
		// The estimates at once: each reads its table's rowid span and
		// its page plan's leaves (10-20 ms one after another, before any
		// scan starts).
		tables := []*ingest.Table{ingest.Memcpy, ingest.GPUFault, ingest.CPUFault, ingest.Sync, ingest.NVTX}
		n := make([]int64, len(tables))
		parallelN(len(tables), make(chan struct{}, len(tables)), func(i int) { n[i] = est.EstimateRows(tables[i]) })
		c.migrations = make([]migration, 0, n[0])
		c.gfaults = make([]gfault, 0, n[1])
		c.cfaults = make([]cfault, 0, n[2])
		// Sized: grown a doubling at a time, address-diverse's 138k sync
		// records' map was most of addSync's time.
		c.syncStream = make(map[pidCorr]int64, n[3])
		// Ranges straight into their list (most NVTX rows are ranges):
		// filled from blocks at the end, two copies of every range were
		// live at once.
		c.ranges = make([]rangeRec, 0, n[4])
	}
	out := map[*ingest.Table]feed{
		ingest.API:      {prep: func(r arrow.RecordBatch) func() { return prepAPI(c, r) }, done: dropScratch(apiBatches.drain)},
		ingest.Kernel:   {prep: func(r arrow.RecordBatch) func() { return prepKernels(c, r) }, done: dropScratch(workBatches.drain)},
		ingest.Memcpy:   {prep: func(r arrow.RecordBatch) func() { return prepMemcpy(c, r) }, done: dropScratch(copyBatches.drain)},
		ingest.Memset:   {fn: c.addMemsets},
		ingest.Sync:     {fn: c.addSync},
		ingest.GPUFault: {fn: c.addGPUFault},
		ingest.CPUFault: {fn: c.addCPUFault},
		ingest.NVTX:     {fn: c.addNVTX, done: c.rangesRead},
		ingest.MemUsage: {fn: c.addMemUsage},
		ingest.Thread:   {fn: c.addThread},
		ingest.GPU:      {fn: c.addGPU},
	}
	names := intern.NameTable(src)
	for t, f := range out {
		f.cols = needed[t]
		if t == ingest.Kernel && names != nil {
			f.cols = idCols(f.cols)
		}
		out[t] = f
	}
	c.kernelNames.ByID(names)
	md, taps := newMultiData(names)
	c.multi = md
	for t, tp := range taps {
		f := out[t]
		out[t] = feed{fn: both(f.fn, tp.fn), prep: bothPrep(f.prep, tp.prep), done: f.done, cols: union(f.cols, tp.cols)}
	}
	return out, func() {
		c.nameKernels()
		md.finish()
		c.calls = callsOf(&c.callBuf)
		c.rangesRead() // again where the source had no NVTX table
		c.migClasses.ids = nil
		for _, in := range []*intern.Table{c.apiNames, c.kernelNames, c.siteNames} {
			in.Done()
		}
		c.finishByPid()
	}
}

// dropScratch is a prepared table's done: its prepared batches kept for
// reuse (drain) and the batch buffer pool are dropped as its read ends,
// while the tables still read hold the analysis' peak (the NVTX table,
// read last, reuses none of their sizes).
func dropScratch(drain func()) func() {
	return func() {
		drain()
		ingest.ReleaseBuffers()
	}
}

// rangesRead ends the NVTX table's reading: the ranges into their list,
// and the lookups that only adding ranges needs dropped (15 MB for
// name-diverse's 200k names). It runs when the table is read, so that the
// tables still being read do not hold them to the end of the read (the
// analysis' memory peak), and again when the pass ends.
func (c *rangeTable) rangesRead() {
	switch {
	case c.rangeBuf.Len() > 0:
		c.ranges = c.rangeBuf.DrainTo(make([]rangeRec, 0, c.rangeBuf.Len()))
	case cap(c.ranges)-len(c.ranges) > len(c.ranges)/4+4096:
		c.ranges = slices.Clone(c.ranges) // the estimate was far off (NVTX marks)
	}
	c.rangeProc, c.nameKey, c.pairKey = nil, nil, nil
	c.nvtxNames.done()
}

// both is a consumer that runs a, then b (either may be nil).
func both(a, b func(arrow.RecordBatch)) func(arrow.RecordBatch) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(r arrow.RecordBatch) { a(r); b(r) }
}

// bothPrep is a prep that runs a and b, and whose commit runs theirs in
// that order (either may be nil).
func bothPrep(a, b func(arrow.RecordBatch) func()) func(arrow.RecordBatch) func() {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(r arrow.RecordBatch) func() {
		ca, cb := a(r), b(r)
		return func() { ca(); cb() }
	}
}

// collectParts reads every table of src once and feeds each batch to
// every part. (A file of several processes is read once too: its records
// carry their pid, and split derives each process's collector.)
func collectParts(src ingest.Source, parts []*part) error {
	var order []*ingest.Table
	byTable := map[*ingest.Table]*collectJob{}
	finish := make([]func(), len(parts))
	for i, p := range parts {
		fs, fin := p.feeds(src)
		finish[i] = fin
		for t, f := range fs {
			j := byTable[t]
			if j == nil {
				j = &collectJob{t: t, fns: make([]func(arrow.RecordBatch), len(parts)), preps: make([]func(arrow.RecordBatch) func(), len(parts)), dones: make([]func(), len(parts))}
				byTable[t] = j
				order = append(order, t)
			}
			j.fns[i], j.preps[i], j.dones[i] = f.fn, f.prep, f.done
			// nil columns: all of them.
			if f.cols == nil {
				j.all = true
			}
			j.cols = union(j.cols, f.cols)
		}
	}
	// Tables in a fixed order (the big ones first), whatever the maps gave.
	slices.SortStableFunc(order, func(x, y *ingest.Table) int {
		return cmp.Or(cmp.Compare(tableRank(x), tableRank(y)), cmp.Compare(x.Name, y.Name))
	})
	errs := make([]error, len(order))
	var wg sync.WaitGroup
	// Bound concurrency: SQLite readers are CPU-bound, and the large
	// tables dominate; four at a time keeps two cores busy without
	// holding many batches in memory at once. With four cores or more,
	// every table at once: the small ones no longer wait for a large one
	// to end (address-diverse 12M on 16 cores: the read 0.29 -> 0.22 s,
	// docs/performance.md, "Tenth session").
	sem := make(chan struct{}, 4)
	if !fewCores() {
		sem = make(chan struct{}, len(order)+1)
	}
	for i, t := range order {
		j := byTable[t]
		if j.all {
			j.cols = nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			prep, take := j.feed()
			fn := func(r arrow.RecordBatch) error { return take(r, prep(r)) }
			switch s := src.(type) {
			case ingest.PreparedScanner:
				errs[i] = s.ScanPrepared(t, j.cols, prep, take)
			case ingest.ColumnScanner:
				errs[i] = s.ScanColumns(t, j.cols, fn)
			default:
				errs[i] = src.Scan(t, fn)
			}
			if errs[i] == nil {
				for _, d := range j.dones {
					if d != nil {
						d()
					}
				}
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("reading %s: %w", order[i].Name, err)
		}
	}
	for _, f := range finish {
		f()
	}
	for _, p := range parts {
		if p.c.migClasses.full {
			return fmt.Errorf("reading %s: UM migrations of more than %d classes (process, direction, cause, 16 TiB address region): more than umtrace holds", ingest.Memcpy.Name, maxMigClasses)
		}
	}
	// The batch buffers and prepared batches kept for reuse are done
	// with: drop them before the analysis.
	ingest.ReleaseBuffers()
	releaseScratch()
	return nil
}

// collectOrder is the order collect starts its table reads in.
var collectOrder = []*ingest.Table{ingest.API, ingest.Kernel, ingest.Memcpy, ingest.Memset, ingest.Sync,
	ingest.GPUFault, ingest.CPUFault, ingest.NVTX, ingest.MemUsage, ingest.Thread, ingest.GPU}

func tableRank(t *ingest.Table) int {
	if i := slices.Index(collectOrder, t); i >= 0 {
		return i
	}
	return len(collectOrder)
}

// collectJob is the read of one table in collect's pass.
type collectJob struct {
	t     *ingest.Table
	cols  []string
	fns   []func(arrow.RecordBatch)        // by part; nil where a part does not read the table
	preps []func(arrow.RecordBatch) func() // by part; nil where a part prepares nothing
	dones []func()                         // by part; nil where a part has nothing to drop
	all   bool                             // some part reads every column
}

// feed returns the scan's callbacks (ingest.PreparedScanner): prep
// prepares a batch for every part that prepares, take hands it to the
// parts with what prep made of it.
func (j *collectJob) feed() (prep func(arrow.RecordBatch) any, take func(arrow.RecordBatch, any) error) {
	prep = func(r arrow.RecordBatch) any {
		var commits []func()
		for i, p := range j.preps {
			if p != nil {
				if commits == nil {
					commits = make([]func(), len(j.preps))
				}
				commits[i] = p(r)
			}
		}
		return commits
	}
	take = func(r arrow.RecordBatch, v any) error {
		commits, _ := v.([]func())
		for i, fn := range j.fns {
			if commits != nil && commits[i] != nil {
				commits[i]()
			}
			if fn != nil {
				fn(r)
			}
		}
		return nil
	}
	return prep, take
}

// rowCacheBits sizes the per-batch caches of threads and streams that
// the per-row loops look up instead of a map: 1024 entries, where a
// process's dozens of threads or streams shared the entries of a
// 64-entry cache and 40% of address-diverse's API rows (36 threads, 64
// streams) missed it.
const rowCacheBits = 10

func (c *collector) addAPI(r arrow.RecordBatch) {
	t := ingest.API
	st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
	pid, tid := ingest.I64(r, t, ingest.ColPid), ingest.I64(r, t, ingest.ColTid)
	corr := ingest.I64(r, t, ingest.ColCorrelationID)
	names := ingest.Str(r, t, ingest.ColName)
	local := c.apiNames.BatchIDs(names)
	classes := make([]*syncClass, len(local))
	managed := make([]bool, len(local))
	runtime := make([]bool, len(local))
	graph := make([]bool, len(local))
	// Threads seen, by a hash of the thread: rows not in time order
	// change thread at almost every row, and a map write per row cost
	// more than the rest of the loop.
	var seen [1 << rowCacheBits]streamKey
	for k := range seen {
		seen[k] = streamKey{-1, -1}
	}
	for k, id := range local {
		n := c.apiNames.At(id)
		if cl, ok := HostBlocking[n]; ok {
			classes[k] = &cl
		}
		managed[k] = managedAllocAPIs[n]
		runtime[k] = isRuntimeAPI(n)
		graph[k] = isGraphLaunch(n)
	}
	var first *call // firstRT of the last process seen
	firstPid := int64(-1)
	for i := 0; i < int(r.NumRows()); i++ {
		k := names.Key(i)
		id := local[k]
		s, e := st.Value(i), en.Value(i)
		p := pid.Value(i)
		pa := c.apiBy.get(p)
		if d := e - s; d >= 0 && d < maxDur {
			for int(id) >= len(pa.durs) {
				pa.durs = append(pa.durs, &durList{})
			}
			pa.durs[id].push(uint32(d))
		} else {
			if pa.long == nil {
				pa.long = map[int32][]int64{}
			}
			pa.long[id] = append(pa.long[id], d)
		}
		pa.span.add(s, e)
		if k := (streamKey{p, tid.Value(i)}); seen[k.slot(rowCacheBits)] != k {
			c.threads[k] = true
			seen[k.slot(rowCacheBits)] = k
		}
		if managed[k] {
			pa.managed++
		}
		if graph[k] {
			c.graphLaunches = append(c.graphLaunches, graphLaunch{start: s, pid: p})
		}
		if runtime[k] {
			if p != firstPid || first == nil {
				first, firstPid = c.firstRT[p], p
				if first == nil {
					first = &call{start: math.MaxInt64}
					c.firstRT[p] = first
				}
			}
			if s < first.start || (s == first.start && e < first.end) {
				*first = call{start: s, end: e, pid: p, tid: tid.Value(i), api: id}
			}
		}
		if cl := classes[k]; cl != nil {
			var cr int64
			if !corr.IsNull(i) {
				cr = corr.Value(i)
			}
			c.callBuf.Push(callRec{start: s, end: e, pid: p, tid: tid.Value(i), corr: cr, api: id, scope: cl.Scope, explicit: cl.Kind == Explicit})
		}
	}
}

// addMemsets takes a batch of memsets (the kernels and copies have their
// prepared paths: workbatch.go).
func (c *collector) addMemsets(r arrow.RecordBatch) {
	t := ingest.Memset
	st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
	pid, strm := ingest.I64(r, t, ingest.ColPid), ingest.I64(r, t, ingest.ColStreamID)
	corr := ingest.I64(r, t, ingest.ColCorrelationID)
	// A stream's list through a small cache: rows of a stream come in
	// runs in a sorted export, but shuffled ones change stream at almost
	// every row, and a map lookup per row (hashing a 16-byte key) cost
	// more than the rest of the loop.
	type slot struct {
		k  streamKey
		ws *chunks.List[gpuWork]
		sp *span
	}
	var cache [1 << rowCacheBits]slot
	var k streamKey
	var ws *chunks.List[gpuWork]
	var sp *span
	for i := 0; i < int(r.NumRows()); i++ {
		if nk := (streamKey{pid.Value(i), strm.Value(i)}); ws == nil || nk != k {
			e := &cache[nk.slot(rowCacheBits)]
			if e.ws == nil || e.k != nk {
				e.k, e.ws = nk, c.memsets[nk]
				if e.ws == nil {
					e.ws = &chunks.List[gpuWork]{}
					c.memsets[nk] = e.ws
				}
				e.sp = &c.memsetBy.get(nk.pid).span
			}
			k, ws, sp = nk, e.ws, e.sp
		}
		s, e := st.Value(i), en.Value(i)
		ws.Push(c.newWork(k, s, e, memsetCode))
		sp.add(s, e)
		if !corr.IsNull(i) {
			c.setStream[pidCorr{k.pid, corr.Value(i)}] = k.stream
		}
	}
}

// renameKernels replaces every kernel name key k, in kernels and long's
// keys, by intern.KeyID(ids, k): SIDKey's keys by their ids, or lazily
// interned names' ids by their canonical ids (Dedupe), in blocks on the
// cores. It returns long renamed.
func renameKernels(kernels map[streamKey]*chunks.List[gpuWork], long map[longKey]int64, ids []int32) map[longKey]int64 {
	var blocks [][]gpuWork
	for _, ws := range kernels {
		blocks = append(blocks, ws.Blocks()...)
	}
	par.Chunks(len(blocks), 8, func(lo, hi int) {
		for _, b := range blocks[lo:hi] {
			for i := range b {
				b[i].name = intern.KeyID(ids, b[i].name)
			}
		}
	})
	out := make(map[longKey]int64, len(long))
	for k, d := range long {
		k.name = intern.KeyID(ids, k.name)
		out[k] = d
	}
	return out
}

// nameKernels turns the kernels' name keys into their ids once the pass
// is done (intern.Table.SIDKey, Dedupe).
func (c *collector) nameKernels() {
	if c.kernelNames.ByIDs() != nil {
		c.longWork = renameKernels(c.kernels, c.longWork, c.kernelNames.KeyIDs())
	} else if canon := c.kernelNames.Dedupe(); canon != nil {
		c.longWork = renameKernels(c.kernels, c.longWork, canon)
	}
}

// push appends v to s, doubling the capacity when s is full: append grows
// large slices by a quarter, which for millions of records costs five
// times their size in allocation and copying.
func push[T any](s []T, v T) []T {
	if len(s) == cap(s) {
		s = slices.Grow(s, max(len(s), 256))
	}
	return append(s, v)
}

// pushAll is push for several values.
func pushAll[T any](s []T, vs []T) []T {
	if len(s)+len(vs) > cap(s) {
		s = slices.Grow(s, max(len(s), len(vs), 256))
	}
	return append(s, vs...)
}

// newWork packs GPU work, keeping exact durations of 4.29 s or more aside.
func (c *collector) newWork(k streamKey, start, end int64, name int32) gpuWork {
	d := end - start
	if d >= 0 && d < maxDur {
		return gpuWork{end: end, dur: uint32(d), name: name}
	}
	c.longMu.Lock()
	c.longWork[longKey{k, end, name}] = d
	c.longMu.Unlock()
	return gpuWork{end: end, dur: maxDur, name: name}
}

// copyKind is a row's copy kind; 0 (unknown) for one out of range:
// sources range-check copy kinds, and one that did not must not turn a
// copy into a kernel name id (-1-kd >= 0).
func copyKind(kd int32) int32 {
	if kd < 0 || kd > maxCopyKind {
		return 0
	}
	return kd
}

// newMigration is the migration of a row of the memcpy table (kind kd,
// 11 to 13), its class added to t, and whether its duration or size was
// clamped to 32 bits.
func newMigration(t *migClasses, s, e, p, bytes int64, kd int32, cause *array.Int32, va *array.Uint64, i int) (migration, bool) {
	d, b := e-s, bytes
	clamped := d < 0 || d >= maxDur || b < 0 || b >= maxDur
	if clamped {
		d, b = min(max(d, 0), maxDur), min(max(b, 0), maxDur)
	}
	cv := int8(-1)
	if !cause.IsNull(i) {
		cv = 0 // unknown, also for values out of range
		if v := cause.Value(i); v >= 0 && v < numCauses {
			cv = int8(v)
		}
	}
	var addr uint64
	if !va.IsNull(i) {
		addr = va.Value(i)
	}
	return t.make(s, uint32(d), uint32(b), int32(p), int8(kd), cv, addr), clamped
}

// addCopy adds an explicit copy (row i) of stream k.
func (c *collector) addCopy(s, e int64, k streamKey, kd int32, corr *array.Int64, i int) {
	ws := c.copies[k]
	if ws == nil {
		ws = &chunks.List[gpuWork]{}
		c.copies[k] = ws
	}
	ws.Push(c.newWork(k, s, e, -1-kd))
	if !corr.IsNull(i) {
		c.copyStream[pidCorr{k.pid, corr.Value(i)}] = k.stream
	}
}

func (c *collector) addSync(r arrow.RecordBatch) {
	t := ingest.Sync
	pid, strm := ingest.I64(r, t, ingest.ColPid), ingest.I64(r, t, ingest.ColStreamID)
	corr := ingest.I64(r, t, ingest.ColCorrelationID)
	for i := 0; i < int(r.NumRows()); i++ {
		if !corr.IsNull(i) {
			c.syncStream[pidCorr{pid.Value(i), corr.Value(i)}] = strm.Value(i)
		}
	}
}

func (c *collector) addGPUFault(r arrow.RecordBatch) {
	t := ingest.GPUFault
	st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
	pid, n := ingest.I64(r, t, ingest.ColPid), ingest.I64(r, t, ingest.ColNumFaults)
	addr, dev := ingest.U64(r, t, ingest.ColAddress), ingest.I64(r, t, ingest.ColDeviceID)
	for i := 0; i < int(r.NumRows()); i++ {
		g, clamped := newGFault(st.Value(i), en.Value(i), pid.Value(i), addr.Value(i), n.Value(i), dev.Value(i))
		if clamped {
			if c.gclamped == nil {
				c.gclamped = map[int64]int{}
			}
			c.gclamped[int64(g.pid)]++
		}
		c.gfaults = push(c.gfaults, g)
	}
}

func (c *collector) addCPUFault(r arrow.RecordBatch) {
	t := ingest.CPUFault
	st, pid := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColPid)
	addr := ingest.U64(r, t, ingest.ColAddress)
	fn, mod, file := ingest.Str(r, t, ingest.ColFunction), ingest.Str(r, t, ingest.ColModule), ingest.Str(r, t, ingest.ColSourceFile)
	line := ingest.I32(r, t, ingest.ColSourceLine)
	cache := map[[4]int32]int32{}
	for i := 0; i < int(r.NumRows()); i++ {
		key := [4]int32{int32(fn.Key(i)), int32(mod.Key(i)), int32(file.Key(i)), line.Value(i)}
		site, ok := cache[key]
		if !ok {
			site = c.siteNames.ID(siteLabel(fn.Value(i), mod.Value(i), file.Value(i), line.Value(i)))
			cache[key] = site
		}
		c.cfaults = push(c.cfaults, cfault{t: st.Value(i), pid: int32(pid.Value(i)), addr: addr.Value(i), site: site})
	}
}

func siteLabel(fn, mod, file string, line int32) string {
	if fn == "" {
		fn = "[unknown]"
	}
	s := fn
	if file != "" {
		s += fmt.Sprintf(" (%s:%d)", file, line)
	}
	if mod != "" {
		s += " in " + baseName(mod)
	}
	return s
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// NVTX event types that are ranges with a duration.
var rangeTypes = map[int32]bool{59: true, 60: true, 70: true, 71: true}

func (c *collector) addNVTX(r arrow.RecordBatch) {
	t := ingest.NVTX
	st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
	pid := ingest.I64(r, t, ingest.ColPid)
	et := ingest.I32(r, t, ingest.ColEventType)
	if c.rangeProc == nil {
		c.rangeProc = map[int64]int32{}
	}
	lastPid, lastProc := int64(0), int32(-1) // rows of a process come in runs
	names := ingest.Str(r, t, ingest.ColName)
	// Names are interned: millions of ranges share a few thousand names.
	// The batch's names already in the table are looked up first, over
	// the cores (read-only); new ones get their ids in the row loop, in
	// the order rows first name them.
	// A name not found keeps its two hashes for the row loop, and what
	// a job needs of it (a rank it names, whether it is a collective's):
	// scans of each new name that cost the row loop a fifth of its time
	// on 200-byte names.
	local := make([]int32, names.DictLen())
	hashes := make([][2]uint64, len(local))
	metas := make([]nvtxMeta, len(local))
	par.Chunks(len(local), 2048, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			v := names.DictValue(k)
			var id int32
			id, hashes[k][0], hashes[k][1] = c.nvtxNames.lookupHashed(v)
			local[k] = id
			if id < 0 {
				metas[k] = nvtxMeta{rank: RankFromText(v), coll: IsCollectiveRange(v)}
			}
		}
	})
	// Each entry's range key, for the process it was last found for.
	keyOf := make([]uint32, len(local))
	keyProc := make([]int32, len(local))
	nullKey, nullProc := uint32(0), int32(-1)
	for i := 0; i < int(r.NumRows()); i, c.nvtxRow = i+1, c.nvtxRow+1 {
		isRange := !en.IsNull(i) && rangeTypes[et.Value(i)]
		id := int32(-1)
		if k := names.Key(i); k >= 0 {
			if local[k] < 0 {
				v := names.DictValue(k)
				local[k] = c.nvtxNames.idHashed(v, hashes[k][0], hashes[k][1])
				if int(local[k]) == len(c.nvtxMeta) {
					// A new name (ids are handed out in order).
					c.nvtxMeta = append(c.nvtxMeta, metas[k])
				}
			}
			id = local[k]
			// A job's: the rank a process's rows name.
			if m := &c.nvtxMeta[id]; m.rank >= 0 {
				if pr := c.nvtxRanks.get(pid.Value(i)); pr.rank < 0 {
					pr.rank, pr.row = m.rank, c.nvtxRow
				}
			}
		}
		if !isRange {
			continue
		}
		if p := pid.Value(i); lastProc < 0 || p != lastPid {
			pr, ok := c.rangeProc[p]
			if !ok {
				pr = int32(len(c.rangePids))
				c.rangePids = append(c.rangePids, p)
				c.rangeProc[p] = pr
			}
			lastPid, lastProc = p, pr
		}
		var key uint32
		if k := names.Key(i); k >= 0 {
			if keyProc[k] != lastProc+1 {
				keyOf[k], keyProc[k] = c.rangeKeyOf(lastProc, id), lastProc+1
			}
			key = keyOf[k]
		} else {
			if nullProc != lastProc {
				nullKey, nullProc = c.rangeKeyOf(lastProc, -1), lastProc
			}
			key = nullKey
		}
		r := c.newRange(st.Value(i), en.Value(i), key)
		if cap(c.ranges) > 0 {
			c.ranges = append(c.ranges, r)
		} else {
			c.rangeBuf.Push(r)
		}
	}
}

func (c *collector) addMemUsage(r arrow.RecordBatch) {
	t := ingest.MemUsage
	addr, by := ingest.U64(r, t, ingest.ColAddress), ingest.I64(r, t, ingest.ColBytes)
	kind, op := ingest.I32(r, t, ingest.ColMemKind), ingest.I32(r, t, ingest.ColOperation)
	pid := ingest.I64(r, t, ingest.ColPid)
	for i := 0; i < int(r.NumRows()); i++ {
		if op.Value(i) == 0 && kind.Value(i) == 4 {
			c.allocs = append(c.allocs, alloc{addr: addr.Value(i), pid: pid.Value(i), bytes: by.Value(i), kind: kind.Value(i)})
		}
	}
}

func (c *collector) addThread(r arrow.RecordBatch) {
	t := ingest.Thread
	pid, tid := ingest.I64(r, t, ingest.ColPid), ingest.I64(r, t, ingest.ColTid)
	names := ingest.Str(r, t, ingest.ColName)
	for i := 0; i < int(r.NumRows()); i++ {
		c.threadNames[streamKey{pid.Value(i), tid.Value(i)}] = strings.Clone(names.Value(i))
	}
}

func (c *collector) addGPU(r arrow.RecordBatch) {
	names := ingest.Str(r, ingest.GPU, ingest.ColName)
	for i := 0; i < names.Len(); i++ {
		c.gpus = append(c.gpus, strings.Clone(names.Value(i)))
	}
}

// union returns the columns of a and b, each once, a's first.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
