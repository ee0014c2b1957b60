package analyze

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/umtrace/umtrace/analyze/internal/chunks"
	"github.com/umtrace/umtrace/ingest"
)

// The kernel table's per-row work is done where its batches are read, as
// the API table's is (apibatch.go): prepKernels groups a batch's kernels
// by stream, and the collector then names them (ids are given in storage
// order) and appends each stream's run (commitWork). The streams' lists
// end as addWork leaves them (TestPreparedKernels).

// workBatch is what prepKernels makes of one batch of kernels.
type workBatch struct {
	groups []workGroup
	work   []gpuWork // the groups' kernels, group after group, each in row order; name is the row until commitWork
	long   []longRow // kernels whose duration does not fit 32 bits, in row order

	// Scratch, kept for the next batch (workBatches).
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

var workBatches = sync.Pool{New: func() any { return &workBatch{byKey: map[streamKey]int32{}} }}

// prepKernels groups r's kernels by stream (any goroutine; it reads
// nothing the collector writes) and returns what takes them into c, in
// storage order.
func (c *collector) prepKernels(r arrow.RecordBatch) func() {
	b := workBatches.Get().(*workBatch)
	b.prepare(r, ingest.Kernel)
	return func() {
		c.commitWork(r, b, ingest.Kernel, c.kernels, &c.kernelBy)
		b.reset()
		workBatches.Put(b)
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
	g, ok := b.byKey[k]
	if !ok {
		b.groups = append(b.groups, workGroup{k: k, span: newSpan()})
		g = int32(len(b.groups))
		b.byKey[k] = g
	}
	*sl = g
	return g - 1
}

// commitWork names a prepared batch's work and appends it to its streams'
// lists: the collector's goroutine, in storage order.
func (c *collector) commitWork(r arrow.RecordBatch, b *workBatch, t *ingest.Table, dst map[streamKey]*chunks.List[gpuWork], by *byPid[pidWork]) {
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
