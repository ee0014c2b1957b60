package analyze

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/umtrace/umtrace/analyze/internal/chunks"
	"github.com/umtrace/umtrace/ingest"
)

// The kernel table's per-row work is done where its batches are read, as
// the API table's is (apibatch.go): prepKernels groups a batch's kernels
// by stream, and the collector then names them (ids are given in storage
// order) and appends each stream's run (workBatch.commit). The streams' lists
// end as the row-by-row path left them (TestPreparedKernels).

// workBatch is what prepKernels makes of one batch of kernels: its rows
// by stream (4 bytes a kernel while the batch waits for its turn).
type workBatch struct {
	groups []workGroup
	rows   []int32   // the groups' rows, group after group, each in order
	long   []longRow // kernels whose duration does not fit 32 bits, in row order
}

// workGroup is one stream's kernels in a batch: rows[off:off+n].
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

// commitScratch is what the kernel table's commits reuse: they run one
// at a time (the collector's goroutine for the table).
type commitScratch struct {
	ids  []int32
	work []gpuWork
}

var workBatches = newFreeList[workBatch]()

// prepKernels groups r's kernels by stream (any goroutine; it reads
// nothing the collector writes) and returns what takes them into c, in
// storage order.
func prepKernels(c *collector, r arrow.RecordBatch) func() {
	b := workBatches.get()
	sc := rowScratches.get()
	b.prepare(r, ingest.Kernel, sc)
	rowScratches.put(sc)
	return func() {
		b.commit(c, r, ingest.Kernel, c.kernels, &c.kernelBy)
		b.groups, b.rows, b.long = b.groups[:0], b.rows[:0], b.long[:0]
		workBatches.put(b)
	}
}

// prepare groups r's rows by stream.
func (b *workBatch) prepare(r arrow.RecordBatch, t *ingest.Table, sc *rowScratch) {
	st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
	pid, strm := ingest.I64(r, t, ingest.ColPid), ingest.I64(r, t, ingest.ColStreamID)
	n := int(r.NumRows())
	sc.rowGroup = grow(sc.rowGroup, n)
	clear(sc.slots[:])
	if sc.byKey == nil {
		sc.byKey = map[streamKey]int32{}
	}
	clear(sc.byKey)
	g := int32(-1)
	for i := 0; i < n; i++ {
		if k := (streamKey{pid.Value(i), strm.Value(i)}); g < 0 || b.groups[g].k != k {
			g = b.group(k, sc)
		}
		gr := &b.groups[g]
		s, e := st.Value(i), en.Value(i)
		gr.span.add(s, e)
		gr.n++
		sc.rowGroup[i] = g
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
	b.rows = grow(b.rows, n)
	for i := 0; i < n; i++ {
		gr := &b.groups[sc.rowGroup[i]]
		b.rows[gr.fill] = int32(i)
		gr.fill++
	}
}

// group is k's group, added when new.
func (b *workBatch) group(k streamKey, sc *rowScratch) int32 {
	sl := &sc.slots[k.slot(rowCacheBits)]
	if *sl > 0 && b.groups[*sl-1].k == k {
		return *sl - 1
	}
	g, ok := sc.byKey[k]
	if !ok {
		b.groups = append(b.groups, workGroup{k: k, span: newSpan()})
		g = int32(len(b.groups))
		sc.byKey[k] = g
	}
	*sl = g
	return g - 1
}

// commit names the prepared batch's kernels and appends them to their
// streams' lists: the collector's goroutine, in storage order.
func (b *workBatch) commit(c *collector, r arrow.RecordBatch, t *ingest.Table, dst map[streamKey]*chunks.List[gpuWork], by *byPid[pidWork]) {
	n := int(r.NumRows())
	sc := &c.commitScratch
	sc.ids = grow(sc.ids, n)
	if c.kernelNames.ByIDs() != nil {
		nameIDs := ingest.I64(r, t, ingest.ColNameID)
		for i := range n {
			sc.ids[i] = c.kernelNames.SIDKey(nameIDs, i)
		}
	} else {
		names := ingest.Str(r, t, ingest.ColName)
		c.kernelNames.Column(names)
		for i := range n {
			sc.ids[i] = c.kernelNames.Key(names, i)
		}
	}
	st, en := ingest.I64(r, t, ingest.ColStart).Int64Values(), ingest.I64(r, t, ingest.ColEnd).Int64Values()
	for j := range b.groups {
		gr := &b.groups[j]
		ws := dst[gr.k]
		if ws == nil {
			ws = &chunks.List[gpuWork]{}
			dst[gr.k] = ws
		}
		sc.work = sc.work[:0]
		for _, row := range b.rows[gr.off : gr.off+gr.n] {
			w := gpuWork{end: en[row], dur: maxDur, name: sc.ids[row]}
			if d := en[row] - st[row]; d >= 0 && d < maxDur {
				w.dur = uint32(d)
			}
			sc.work = append(sc.work, w)
		}
		ws.PushAll(sc.work)
		by.get(gr.k.pid).span.add(gr.span.lo, gr.span.hi)
	}
	if len(b.long) > 0 {
		c.longMu.Lock()
		for _, l := range b.long {
			c.longWork[longKey{b.groups[l.g].k, l.end, sc.ids[l.row]}] = l.d
		}
		c.longMu.Unlock()
	}
}

// copyBatch is what prepMemcpy makes of one batch of the memcpy table:
// each process's span and clamped migrations, and which rows are
// migrations and which copies (few next to migrations, keyed by stream
// and correlation); the commit reads both kinds of rows, in order.
type copyBatch struct {
	procs   []copyProc
	migs    []migration // in row order; their classes are indexes into classes
	classes migClasses
	ids     []uint32 // at commit: by index in classes, the collector's
	copies  []int32  // rows, in order
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
		b.classes.reset()
		copyBatches.put(b)
	}
}

func (b *copyBatch) prepare(r arrow.RecordBatch) {
	t := ingest.Memcpy
	st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
	pid := ingest.I64(r, t, ingest.ColPid)
	kind := ingest.I32(r, t, ingest.ColCopyKind)
	by := ingest.I64(r, t, ingest.ColBytes)
	var cause *array.Int32
	var va *array.Uint64
	proc := -1
	for i := 0; i < int(r.NumRows()); i++ {
		s, e, p, kd := st.Value(i), en.Value(i), pid.Value(i), copyKind(kind.Value(i))
		if proc < 0 || b.procs[proc].pid != p {
			proc = findOrAdd(&b.procs, func(x *copyProc) bool { return x.pid == p }, copyProc{pid: p, span: newSpan()})
		}
		pr := &b.procs[proc]
		pr.span.add(s, e)
		if kd < 11 || kd > 13 {
			b.copies = append(b.copies, int32(i))
			continue
		}
		if cause == nil {
			cause, va = ingest.I32(r, t, ingest.ColMigCause), ingest.U64(r, t, ingest.ColVirtAddr)
		}
		m, clamped := newMigration(&b.classes, s, e, p, by.Value(i), kd, cause, va, i)
		if clamped {
			pr.clamped++
		}
		b.migs = append(b.migs, m)
	}
}

// commit takes the prepared batch into c: the collector's goroutine, in
// storage order.
func (b *copyBatch) commit(c *collector, r arrow.RecordBatch) {
	for _, pr := range b.procs {
		pw := c.memcpyBy.get(pr.pid)
		pw.span.add(pr.span.lo, pr.span.hi)
		pw.clamped += pr.clamped
	}
	t := ingest.Memcpy
	st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
	pid, strm := ingest.I64(r, t, ingest.ColPid), ingest.I64(r, t, ingest.ColStreamID)
	corr := ingest.I64(r, t, ingest.ColCorrelationID)
	kind := ingest.I32(r, t, ingest.ColCopyKind)
	b.ids = b.ids[:0]
	for _, k := range b.classes.list {
		b.ids = append(b.ids, c.migClasses.id(k))
	}
	retag(b.migs, b.ids)
	c.migrations = pushAll(c.migrations, b.migs)
	for _, row := range b.copies {
		i := int(row)
		c.addCopy(st.Value(i), en.Value(i), streamKey{pid.Value(i), strm.Value(i)}, copyKind(kind.Value(i)), corr, i)
	}
}
