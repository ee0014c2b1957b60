package analyze

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/umtrace/umtrace/analyze/internal/chunks"
	"github.com/umtrace/umtrace/ingest"
)

// The kernel table's per-row work is done where its batches are read, as
// the API table's is (apibatch.go): prepKernels groups a batch's kernels
// by stream, and the collector then names them (ids are given in storage
// order) and appends each stream's run (workBatch.commit). The streams' lists
// end as addWork leaves them (TestPreparedKernels).

// workBatch is what prepKernels makes of one batch of kernels.
type workBatch struct {
	groups []workGroup
	work   []gpuWork // the groups' kernels, group after group, each in row order; name is the row until commit
	long   []longRow // kernels whose duration does not fit 32 bits, in row order

	// Scratch, kept with the batch for the next one (workBatches).
	rowGroup []int32
	ids      []int32
	byKey    map[streamKey]int32 // group + 1
	slots    [1 << rowCacheBits]int32
}

// workGroup is one stream's kernels in a batch: work[off:off+n].
type workGroup struct {
	k      streamKey
	span   span
	off, n int32
	fill   int32 // while placing
}

type longRow struct {
	g, row int32
	end, d int64
}

var workBatches = newFreeList[workBatch]()

// prepKernels groups r's kernels by stream (any goroutine; it reads
// nothing the collector writes) and returns what takes them into c, in
// storage order.
func prepKernels(c *collector, r arrow.RecordBatch) func() {
	b := workBatches.get()
	b.prepare(r, ingest.Kernel)
	return func() {
		b.commit(c, r, ingest.Kernel, c.kernels, &c.kernelBy)
		b.reset()
		workBatches.put(b)
	}
}

func (b *workBatch) reset() {
	b.groups, b.work, b.long = b.groups[:0], b.work[:0], b.long[:0]
	clear(b.byKey)
	clear(b.slots[:])
}

// prepare groups r's rows by stream.
func (b *workBatch) prepare(r arrow.RecordBatch, t *ingest.Table) {
	st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
	pid, strm := ingest.I64(r, t, ingest.ColPid), ingest.I64(r, t, ingest.ColStreamID)
	n := int(r.NumRows())
	b.rowGroup = grow(b.rowGroup, n)
	g := int32(-1)
	for i := 0; i < n; i++ {
		if k := (streamKey{pid.Value(i), strm.Value(i)}); g < 0 || b.groups[g].k != k {
			g = b.group(k)
		}
		gr := &b.groups[g]
		s, e := st.Value(i), en.Value(i)
		gr.span.add(s, e)
		gr.n++
		b.rowGroup[i] = g
		if d := e - s; d < 0 || d >= maxDur {
			b.long = append(b.long, longRow{g: g, row: int32(i), end: e, d: d})
		}
	}
	var off int32
	for j := range b.groups {
		gr := &b.groups[j]
		gr.off, gr.fill = off, off
		off += gr.n
	}
	b.work = grow(b.work, n)
	for i := 0; i < n; i++ {
		gr := &b.groups[b.rowGroup[i]]
		s, e := st.Value(i), en.Value(i)
		w := gpuWork{end: e, dur: maxDur, name: int32(i)}
		if d := e - s; d >= 0 && d < maxDur {
			w.dur = uint32(d)
		}
		b.work[gr.fill] = w
		gr.fill++
	}
}

// group is k's group, added when new.
func (b *workBatch) group(k streamKey) int32 {
	sl := &b.slots[k.slot(rowCacheBits)]
	if *sl > 0 && b.groups[*sl-1].k == k {
		return *sl - 1
	}
	if b.byKey == nil {
		b.byKey = map[streamKey]int32{}
	}
	g, ok := b.byKey[k]
	if !ok {
		b.groups = append(b.groups, workGroup{k: k, span: newSpan()})
		g = int32(len(b.groups))
		b.byKey[k] = g
	}
	*sl = g
	return g - 1
}

// commit names the prepared batch's work and appends it to its streams'
// lists: the collector's goroutine, in storage order.
func (b *workBatch) commit(c *collector, r arrow.RecordBatch, t *ingest.Table, dst map[streamKey]*chunks.List[gpuWork], by *byPid[pidWork]) {
	n := int(r.NumRows())
	b.ids = grow(b.ids, n)
	if c.kernelNames.ByIDs() != nil {
		var nameIDs *array.Int64 = ingest.I64(r, t, ingest.ColNameID)
		for i := range n {
			b.ids[i] = c.kernelNames.SIDKey(nameIDs, i)
		}
	} else {
		names := ingest.Str(r, t, ingest.ColName)
		c.kernelNames.Column(names)
		for i := range n {
			b.ids[i] = c.kernelNames.Key(names, i)
		}
	}
	for j := range b.groups {
		gr := &b.groups[j]
		ws := dst[gr.k]
		if ws == nil {
			ws = &chunks.List[gpuWork]{}
			dst[gr.k] = ws
		}
		run := b.work[gr.off : gr.off+gr.n]
		for i := range run {
			run[i].name = b.ids[run[i].name]
		}
		ws.PushAll(run)
		by.get(gr.k.pid).span.add(gr.span.lo, gr.span.hi)
	}
	if len(b.long) > 0 {
		c.longMu.Lock()
		for _, l := range b.long {
			c.longWork[longKey{b.groups[l.g].k, l.end, b.ids[l.row]}] = l.d
		}
		c.longMu.Unlock()
	}
}

// copyBatch is what prepMemcpy makes of one batch of the memcpy table:
// its migrations and each process's span and clamped migrations; the
// copies (few next to migrations, keyed by stream and correlation) are
// left to commit, row by row.
type copyBatch struct {
	procs  []copyProc
	migs   []migration
	copies []int32 // rows, in order
}

type copyProc struct {
	pid     int64
	span    span
	clamped int
}

var copyBatches = newFreeList[copyBatch]()

// prepMemcpy reads r's migrations (any goroutine) and returns what takes
// them and r's copies into c, in storage order.
func prepMemcpy(c *collector, r arrow.RecordBatch) func() {
	b := copyBatches.get()
	b.prepare(r)
	return func() {
		b.commit(c, r)
		b.procs, b.migs, b.copies = b.procs[:0], b.migs[:0], b.copies[:0]
		copyBatches.put(b)
	}
}

func (b *copyBatch) prepare(r arrow.RecordBatch) {
	t := ingest.Memcpy
	st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
	pid := ingest.I64(r, t, ingest.ColPid)
	kind := ingest.I32(r, t, ingest.ColCopyKind)
	by := ingest.I64(r, t, ingest.ColBytes)
	cause := ingest.I32(r, t, ingest.ColMigCause)
	va := ingest.U64(r, t, ingest.ColVirtAddr)
	proc := -1
	for i := 0; i < int(r.NumRows()); i++ {
		s, e, p, kd := st.Value(i), en.Value(i), pid.Value(i), copyKind(kind.Value(i))
		if proc < 0 || b.procs[proc].pid != p {
			proc = b.procIndex(p)
		}
		pr := &b.procs[proc]
		pr.span.add(s, e)
		if kd < 11 || kd > 13 {
			b.copies = append(b.copies, int32(i))
			continue
		}
		m, clamped := newMigration(s, e, p, by.Value(i), kd, cause, va, i)
		if clamped {
			pr.clamped++
		}
		b.migs = append(b.migs, m)
	}
}

func (b *copyBatch) procIndex(p int64) int {
	for j := range b.procs {
		if b.procs[j].pid == p {
			return j
		}
	}
	b.procs = append(b.procs, copyProc{pid: p, span: newSpan()})
	return len(b.procs) - 1
}

// commit takes the prepared batch into c: the collector's goroutine, in
// storage order.
func (b *copyBatch) commit(c *collector, r arrow.RecordBatch) {
	for _, pr := range b.procs {
		pw := c.memcpyBy.get(pr.pid)
		pw.span.add(pr.span.lo, pr.span.hi)
		pw.clamped += pr.clamped
	}
	c.migrations = pushAll(c.migrations, b.migs)
	if len(b.copies) == 0 {
		return
	}
	t := ingest.Memcpy
	st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
	pid, strm := ingest.I64(r, t, ingest.ColPid), ingest.I64(r, t, ingest.ColStreamID)
	corr := ingest.I64(r, t, ingest.ColCorrelationID)
	kind := ingest.I32(r, t, ingest.ColCopyKind)
	for _, row := range b.copies {
		i := int(row)
		c.addCopy(st.Value(i), en.Value(i), streamKey{pid.Value(i), strm.Value(i)}, copyKind(kind.Value(i)), corr, i)
	}
}

// pushAll appends vs to s, growing s as push does.
func pushAll[T any](s, vs []T) []T {
	if len(s)+len(vs) > cap(s) {
		s = slices.Grow(s, max(len(s), len(vs), 256))
	}
	return append(s, vs...)
}
