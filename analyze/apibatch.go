package analyze

import (
	"math"
	"runtime"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/ingest"
)

// The API table is the largest, and its batches reach the collector one
// at a time, in storage order (ids, the calls' order and the first
// runtime call depend on it). Its per-row work is done before that, on
// the goroutine that read the batch (ingest.PreparedScanner): prepAPI
// groups a batch's rows by process and name, and the collector then takes
// the groups in order (apiBatch.commit), a few appends per group instead of a
// dozen lookups per row. What the collector ends with is the same as
// addAPI's, row by row (TestPreparedAPI).

// apiBatch is what prepAPI makes of one batch of API rows.
type apiBatch struct {
	names   ingest.Strings
	procs   []apiProc
	groups  []apiGroup  // by process and name, in the order of their first rows
	short   []uint16    // the groups' durations up to 65535 ns, group after group, each in row order
	wide    []uint32    // the others that fit 32 bits, likewise
	long    []apiLong   // durations that do not fit, in row order
	threads []streamKey // distinct, in the order of their first rows
	graph   []graphLaunch
	calls   []callRec // the host-blocking calls, in row order; api is the name's key until commit
}

// rowScratch is what preparing a batch needs only while it prepares: it
// goes back to rowScratches as soon as the batch is prepared, while the
// batch waits for its turn (a scan holds the batches of several parts).
type rowScratch struct {
	rowGroup []int32
	rowDur   []uint32
	keyGroup []int32 // apiBatch: by process index * names + key, the group + 1
	seen     [1 << rowCacheBits]streamKey
	slots    [1 << rowCacheBits]int32 // workBatch: by stream slot, the group + 1
	byKey    map[streamKey]int32      // workBatch: the group + 1
}

var rowScratches = newFreeList[rowScratch]()

// apiProc is one process's rows in a batch.
type apiProc struct {
	pid     int64
	span    span
	managed int
	hasRT   bool
	first   call // its first runtime call, when hasRT
}

// apiGroup is one process's calls of one name in a batch: their
// durations are short[soff:soff+ns] and wide[woff:woff+nw].
type apiGroup struct {
	proc, key    int32
	soff, ns     int32
	woff, nw     int32
	sfill, wfill int32 // while grouping
}

type apiLong struct {
	proc, key int32
	d         int64
}

// apiBatches recycles apiBatches: a batch's is done with once the
// collector took it.
var apiBatches = newFreeList[apiBatch]()

// freeList keeps values for reuse, up to a few per core: unlike a
// sync.Pool, across collections (the read of easy 12M runs 16, and each
// emptied a pool: 76 MiB more allocated, 4 more collections). collect
// empties the lists when the read ends (releaseScratch).
type freeList[T any] struct{ ch chan *T }

func newFreeList[T any]() freeList[T] {
	return freeList[T]{ch: make(chan *T, 2*runtime.GOMAXPROCS(0)+4)}
}

func (f freeList[T]) get() *T {
	select {
	case v := <-f.ch:
		return v
	default:
		return new(T)
	}
}

func (f freeList[T]) put(v *T) {
	select {
	case f.ch <- v:
	default:
	}
}

func (f freeList[T]) drain() {
	for {
		select {
		case <-f.ch:
		default:
			return
		}
	}
}

// releaseScratch drops the prepared batches kept for reuse: the read is
// done.
func releaseScratch() {
	rowScratches.drain()
	apiBatches.drain()
	workBatches.drain()
	copyBatches.drain()
}

// prepAPI groups r's rows (any goroutine; it reads nothing the collector
// writes) and returns what takes them into c, in storage order.
func prepAPI(c *collector, r arrow.RecordBatch) func() {
	if names := ingest.Str(r, ingest.API, ingest.ColName); names.Keys() == nil || names.DictLen() > maxPrepKeys {
		// Rows without a name, indices not as the Builder makes them, or
		// a dictionary too large for a slot per name and process: row by
		// row.
		return func() { c.addAPI(r) }
	}
	b := apiBatches.get()
	sc := rowScratches.get()
	b.prepare(r, sc)
	rowScratches.put(sc)
	return func() {
		b.commit(c)
		b.reset()
		apiBatches.put(b)
	}
}

func (b *apiBatch) reset() {
	b.names = ingest.Strings{}
	b.procs, b.groups, b.short, b.wide, b.long = b.procs[:0], b.groups[:0], b.short[:0], b.wide[:0], b.long[:0]
	b.threads, b.graph, b.calls = b.threads[:0], b.graph[:0], b.calls[:0]
}

// maxPrepKeys bounds the dictionary of a batch prepAPI groups (a slot per
// name and process).
const maxPrepKeys = 1 << 14

// apiKeys is what a batch's names are, by dictionary key; canon is the
// first key of each key's string (a dictionary may hold a string twice:
// its rows are one group).
type apiKeys struct {
	classes                 []*syncClass
	managed, runtime, graph []bool
	canon                   []int32
}

func newAPIKeys(names ingest.Strings) apiKeys {
	n := names.DictLen()
	k := apiKeys{classes: make([]*syncClass, n), managed: make([]bool, n), runtime: make([]bool, n), graph: make([]bool, n), canon: make([]int32, n)}
	first := make(map[string]int32, n)
	for i := range n {
		s := names.DictValue(i)
		if cl, ok := HostBlocking[s]; ok {
			k.classes[i] = &cl
		}
		k.managed[i], k.runtime[i], k.graph[i] = managedAllocAPIs[s], isRuntimeAPI(s), isGraphLaunch(s)
		c, ok := first[s]
		if !ok {
			c = int32(i)
			first[s] = c
		}
		k.canon[i] = c
	}
	return k
}

// prepare groups r's rows.
func (b *apiBatch) prepare(r arrow.RecordBatch, sc *rowScratch) {
	t := ingest.API
	st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
	pid, tid := ingest.I64(r, t, ingest.ColPid), ingest.I64(r, t, ingest.ColTid)
	corr := ingest.I64(r, t, ingest.ColCorrelationID)
	b.names = ingest.Str(r, t, ingest.ColName)
	keys := newAPIKeys(b.names)
	nk := b.names.DictLen()
	n := int(r.NumRows())
	sc.rowGroup, sc.rowDur = grow(sc.rowGroup, n), grow(sc.rowDur, n)
	sc.keyGroup = sc.keyGroup[:0]
	for k := range sc.seen {
		sc.seen[k] = streamKey{-1, -1}
	}
	proc := -1
	rowKeys := b.names.Keys()
	for i := 0; i < n; i++ {
		k := int(keys.canon[rowKeys[i]])
		s, e := st.Value(i), en.Value(i)
		p := pid.Value(i)
		if proc < 0 || b.procs[proc].pid != p {
			proc = b.procIndex(p, nk, sc)
		}
		pr := &b.procs[proc]
		sc.rowGroup[i] = -1
		if d := e - s; d >= 0 && d < maxDur {
			g := &sc.keyGroup[proc*nk+k]
			if *g == 0 {
				b.groups = append(b.groups, apiGroup{proc: int32(proc), key: int32(k)})
				*g = int32(len(b.groups))
			}
			gr := &b.groups[*g-1]
			if d <= math.MaxUint16 {
				gr.ns++
			} else {
				gr.nw++
			}
			sc.rowGroup[i], sc.rowDur[i] = *g-1, uint32(d)
		} else {
			b.long = append(b.long, apiLong{proc: int32(proc), key: int32(k), d: d})
		}
		pr.span.add(s, e)
		if th := (streamKey{p, tid.Value(i)}); sc.seen[th.slot(rowCacheBits)] != th {
			sc.seen[th.slot(rowCacheBits)] = th
			b.threads = append(b.threads, th)
		}
		if keys.managed[k] {
			pr.managed++
		}
		if keys.graph[k] {
			b.graph = append(b.graph, graphLaunch{start: s, pid: p})
		}
		if keys.runtime[k] {
			if !pr.hasRT {
				pr.hasRT, pr.first = true, call{start: math.MaxInt64}
			}
			if s < pr.first.start || (s == pr.first.start && e < pr.first.end) {
				pr.first = call{start: s, end: e, pid: p, tid: tid.Value(i), api: int32(k)}
			}
		}
		if cl := keys.classes[k]; cl != nil {
			var cr int64
			if !corr.IsNull(i) {
				cr = corr.Value(i)
			}
			b.calls = append(b.calls, callRec{start: s, end: e, pid: p, tid: tid.Value(i), corr: cr, api: int32(k), scope: cl.Scope, explicit: cl.Kind == Explicit})
		}
	}
	b.place(n, sc)
}

// procIndex is p's index in b.procs, added (with its groups' slots) when new.
func (b *apiBatch) procIndex(p int64, nk int, sc *rowScratch) int {
	n := len(b.procs)
	j := findOrAdd(&b.procs, func(x *apiProc) bool { return x.pid == p }, apiProc{pid: p, span: newSpan()})
	if j == n {
		n0 := len(sc.keyGroup)
		sc.keyGroup = slices.Grow(sc.keyGroup, nk)[:n0+nk]
		clear(sc.keyGroup[n0:])
	}
	return j
}

// place puts the rows' durations into the groups' runs, in row order.
func (b *apiBatch) place(n int, sc *rowScratch) {
	var so, wo int32
	for j := range b.groups {
		g := &b.groups[j]
		g.soff, g.woff, g.sfill, g.wfill = so, wo, so, wo
		so += g.ns
		wo += g.nw
	}
	b.short, b.wide = grow(b.short, int(so)), grow(b.wide, int(wo))
	for i := 0; i < n; i++ {
		gi := sc.rowGroup[i]
		if gi < 0 {
			continue
		}
		g := &b.groups[gi]
		if d := sc.rowDur[i]; d <= math.MaxUint16 {
			b.short[g.sfill] = uint16(d)
			g.sfill++
		} else {
			b.wide[g.wfill] = d
			g.wfill++
		}
	}
}

// commit takes the prepared batch into c: the collector's goroutine, in
// storage order.
func (b *apiBatch) commit(c *collector) {
	local := c.apiNames.BatchIDs(b.names)
	pas := make([]*pidAPI, len(b.procs))
	for j := range b.procs {
		pr := &b.procs[j]
		pa := c.apiBy.get(pr.pid)
		pas[j] = pa
		pa.span.add(pr.span.lo, pr.span.hi)
		pa.managed += pr.managed
		if pr.hasRT {
			first := c.firstRT[pr.pid]
			if first == nil {
				first = &call{start: math.MaxInt64}
				c.firstRT[pr.pid] = first
			}
			if f := pr.first; f.start < first.start || (f.start == first.start && f.end < first.end) {
				f.api = local[f.api]
				*first = f
			}
		}
	}
	for j := range b.groups {
		g := &b.groups[j]
		pa, id := pas[g.proc], local[g.key]
		for int(id) >= len(pa.durs) {
			pa.durs = append(pa.durs, &durList{})
		}
		d := pa.durs[id]
		d.short.PushAll(b.short[g.soff : g.soff+g.ns])
		d.wide.PushAll(b.wide[g.woff : g.woff+g.nw])
	}
	for _, l := range b.long {
		pa, id := pas[l.proc], local[l.key]
		if pa.long == nil {
			pa.long = map[int32][]int64{}
		}
		pa.long[id] = append(pa.long[id], l.d)
	}
	for _, th := range b.threads {
		c.threads[th] = true
	}
	c.graphLaunches = append(c.graphLaunches, b.graph...)
	for i := range b.calls {
		b.calls[i].api = local[b.calls[i].api]
	}
	c.callBuf.PushAll(b.calls)
}

// findOrAdd is the index of the first element of *s that match accepts,
// v appended when none does: for a batch's few processes, devices or
// kinds, where a scan of a short slice costs less than a map.
func findOrAdd[T any](s *[]T, match func(*T) bool, v T) int {
	for i := range *s {
		if match(&(*s)[i]) {
			return i
		}
	}
	*s = append(*s, v)
	return len(*s) - 1
}

// grow returns s with length n, reusing its array when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
