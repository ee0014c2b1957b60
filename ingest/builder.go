package ingest

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Builder builds record batches of one table with typed appends. Columns are
// addressed by position (use Table.Index once, outside the row loop).
//
// Fixed-width columns are written straight into buffers the size of a
// batch, taken from and given back to a pool when the batch is released:
// tens of millions of rows then cost a few batches of memory, not a
// garbage-collected allocation per batch (Arrow's builders also round
// capacity up to twice a power of two and copy when trimming).
type Builder struct {
	T      *Table
	schema *arrow.Schema
	mem    memory.Allocator
	cols   []column
	rows   int
}

// column is one column under construction.
type column struct {
	kind  Kind
	skip  bool // left out by Project: appends are dropped
	n     int  // values appended
	nulls int
	i64   []int64 // the values, a view of buf (one of i64, i32, u64)
	i32   []int32
	u64   []uint64
	buf   []byte
	valid []byte      // validity bitmap; nil while every value is valid
	dict  *dictionary // string columns: i32 holds the indexes into it
	// shared is the batch's dictionary while every value appended to the
	// column in this batch came from it (DictIndex); nil otherwise.
	shared *SharedDict
}

// dictionary is a string column's dictionary for the current batch.
type dictionary struct {
	// vals are the batch's values, views of arena (chunks from
	// arenaPool, given back at reset) or, for a long value, a copy of
	// its own; size is their bytes. The keys of byStr are the same
	// views, so a value given to add may be a view of the caller's
	// buffers (the page reader's): add copies what it keeps, and a batch
	// costs one exact-size copy of its distinct values (array).
	vals  []string
	arena []*[]byte
	size  int
	byStr map[string]int32
	// byID caches the index of each small id (StringID) for the batch
	// stamped gen: an array lookup per row instead of a hash.
	byID []uint64 // gen<<32 | index
	gen  uint64
}

// maxCachedID bounds byID: StringIds are dense, from 0.
const maxCachedID = 1 << 22

// maxPooledIDs bounds the byID a pooled dictionary keeps.
const maxPooledIDs = 1 << 16

// arenaChunk is the size of the dictionaries' arena chunks; a value of
// more than a quarter of it gets an allocation of its own.
const arenaChunk = 256 << 10

var arenaPool = sync.Pool{New: func() any { b := make([]byte, 0, arenaChunk); return &b }}

// dictPool recycles the dictionaries of released builders: a page read
// makes a builder per part, and a part of 200-byte names is about one
// batch, so each new dictionary's map grew from empty to the batch's
// thousands of names, rehashing on the way (0.6 of name-diverse's
// 10 CPU-s; docs/performance.md, fourth session).
var dictPool = sync.Pool{New: func() any { return &dictionary{byStr: map[string]int32{}, gen: 1} }}

func (d *dictionary) reset() {
	d.vals = d.vals[:0]
	d.size = 0
	clear(d.byStr)
	for _, c := range d.arena {
		arenaPool.Put(c)
	}
	clear(d.arena)
	d.arena = d.arena[:0]
	d.gen++
}

// keep returns a copy of v that lives until reset.
func (d *dictionary) keep(v string) string {
	if len(v) == 0 {
		return ""
	}
	if len(v) > arenaChunk/4 {
		return strings.Clone(v)
	}
	var c *[]byte
	if n := len(d.arena); n > 0 {
		c = d.arena[n-1]
	}
	if c == nil || cap(*c)-len(*c) < len(v) {
		c = arenaPool.Get().(*[]byte)
		*c = (*c)[:0]
		d.arena = append(d.arena, c)
	}
	o := len(*c)
	*c = append(*c, v...)
	return unsafe.String(&(*c)[o], len(v))
}

// len is the number of values.
func (d *dictionary) len() int { return len(d.vals) }

// add returns v's index, adding a copy of it if new.
func (d *dictionary) add(v string) int32 {
	if k, ok := d.byStr[v]; ok {
		return k
	}
	k := int32(len(d.vals))
	v = d.keep(v)
	d.vals = append(d.vals, v)
	d.size += len(v)
	d.byStr[v] = k
	return k
}

// NewBuilder returns a Builder for t. mem is kept for the callers that
// pass one; every buffer of a batch is Go memory (fixed-width columns from
// a pool, string dictionaries exact-size copies).
func NewBuilder(mem memory.Allocator, t *Table) *Builder {
	b := &Builder{T: t, schema: t.Schema(), mem: mem, cols: make([]column, len(t.Columns))}
	for i, col := range t.Columns {
		b.cols[i].kind = col.Kind
		if col.Kind == String {
			b.cols[i].dict = dictPool.Get().(*dictionary)
		}
	}
	return b
}

// Project drops appends to columns not named in cols: in the batches they
// are all null and cost no memory, so producers and consumers skip work for
// columns no consumer reads (string columns cost a hash per row). An empty
// cols keeps every column. Call it before the first append.
func (b *Builder) Project(cols []string) {
	for i := range b.cols {
		b.cols[i].skip = len(cols) > 0
	}
	for _, c := range cols {
		b.cols[b.T.Index(c)].skip = false
	}
}

func (k Kind) width() int {
	switch k {
	case Int32, String: // strings: int32 dictionary indexes
		return 4
	}
	return 8
}

// Reserve makes room for n more rows in every column.
func (b *Builder) Reserve(n int) {
	for i := range b.cols {
		c := &b.cols[i]
		if !c.skip && c.n+n > c.capacity() {
			c.grow(c.n + n)
		}
	}
}

func (c *column) capacity() int {
	if w := c.kind.width(); w > 0 {
		return len(c.buf) / w
	}
	return 0
}

// grow gives c room for at least n values, keeping those it has.
func (c *column) grow(n int) {
	w := c.kind.width()
	buf := pool.Allocate(n * w)
	copy(buf, c.buf[:c.n*w])
	var valid []byte
	if c.valid != nil {
		valid = pool.Allocate((n + 7) / 8)
		m := copy(valid, c.valid[:(c.n+7)/8])
		clear(valid[m:])
		pool.Free(c.valid)
	}
	if c.buf != nil {
		pool.Free(c.buf)
	}
	c.buf, c.valid = buf, valid
	switch c.kind {
	case Int64:
		c.i64 = unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(buf))), n)
	case Int32, String:
		c.i32 = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(buf))), n)
	case Uint64:
		c.u64 = unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(buf))), n)
	}
}

// appended records one value at position c.n, valid or not.
func (c *column) appended(valid bool) {
	if !valid {
		if c.valid == nil {
			c.valid = pool.Allocate((c.capacity() + 7) / 8)
			clear(c.valid)
			for i := 0; i < c.n; i++ {
				c.valid[i>>3] |= 1 << (i & 7)
			}
		}
		c.nulls++
	} else if c.valid != nil {
		c.valid[c.n>>3] |= 1 << (c.n & 7)
	}
	c.n++
}

// Int64 appends v to column i.
func (b *Builder) Int64(i int, v int64) {
	if c := &b.cols[i]; !c.skip {
		put(c, &c.i64, v)
	}
}

// Int32 appends v to column i.
func (b *Builder) Int32(i int, v int32) {
	if c := &b.cols[i]; !c.skip {
		put(c, &c.i32, v)
	}
}

// Uint64 appends v to column i.
func (b *Builder) Uint64(i int, v uint64) {
	if c := &b.cols[i]; !c.skip {
		put(c, &c.u64, v)
	}
}

// put appends a valid v to c, whose values view (c.i64, c.i32 or c.u64)
// is view; grow replaces the view when the buffer is full.
func put[T int64 | int32 | uint64](c *column, view *[]T, v T) {
	if c.n == len(*view) {
		c.grow(max(2*c.n, 64))
	}
	(*view)[c.n] = v
	c.appended(true)
}

// Int64s appends n valid values to column i and returns them, to be
// written by the caller before the batch is made: the block fillers'
// way into the column buffers, a column at a time instead of a call per
// value. nil when the column is left out (Project).
func (b *Builder) Int64s(i, n int) []int64 {
	if c := &b.cols[i]; !c.skip {
		return putN(c, &c.i64, n)
	}
	return nil
}

// Int32s is Int64s for an Int32 column.
func (b *Builder) Int32s(i, n int) []int32 {
	if c := &b.cols[i]; !c.skip {
		return putN(c, &c.i32, n)
	}
	return nil
}

// Uint64s is Int64s for a Uint64 column.
func (b *Builder) Uint64s(i, n int) []uint64 {
	if c := &b.cols[i]; !c.skip {
		return putN(c, &c.u64, n)
	}
	return nil
}

// putN appends n valid values to c (their slots, returned, hold whatever
// the buffer held: the caller writes them).
func putN[T int64 | int32 | uint64](c *column, view *[]T, n int) []T {
	if c.n+n > len(*view) {
		c.grow(max(2*c.n, c.n+n, 64))
	}
	out := (*view)[c.n : c.n+n : c.n+n]
	if c.valid != nil {
		for j := c.n; j < c.n+n; j++ {
			c.valid[j>>3] |= 1 << (j & 7)
		}
	}
	c.n += n
	return out
}

// String appends v to column i.
func (b *Builder) String(i int, v string) {
	c := &b.cols[i]
	if c.skip {
		return
	}
	c.own()
	b.Int32(i, c.dict.add(v))
}

// DictIndex appends entry k of d to string column i. While a batch's values
// of the column all come from one SharedDict, the batch's dictionary is d
// itself (no copy); a value from elsewhere in the same batch (String,
// StringID, another dictionary) turns the column's batch to a dictionary
// of its own. k must be in d's range.
func (b *Builder) DictIndex(i int, d *SharedDict, k int32) {
	c := &b.cols[i]
	if c.skip {
		return
	}
	switch {
	case c.shared == d:
	case c.shared == nil && c.dict.len() == 0 && c.n == c.nulls:
		c.shared = d // the first value of the batch (nulls index nothing)
	default:
		c.own()
		b.Int32(i, c.dict.add(d.arr.Value(int(k))))
		return
	}
	b.Int32(i, k)
}

// own turns a column whose batch so far indexes a SharedDict to a
// dictionary of its own.
func (c *column) own() {
	sd := c.shared
	if sd == nil {
		return
	}
	c.shared = nil
	remap := map[int32]int32{}
	for j := 0; j < c.n; j++ {
		if c.valid != nil && c.valid[j>>3]&(1<<(j&7)) == 0 {
			continue
		}
		k := c.i32[j]
		nk, ok := remap[k]
		if !ok {
			nk = c.dict.add(sd.arr.Value(int(k)))
			remap[k] = nk
		}
		c.i32[j] = nk
	}
}

// StringID appends the string with id to column i, calling name(id) only
// the first time the id appears in a batch: for columns of StringIds
// references, most rows cost an array lookup instead of a hash. name must
// return the same string for the same id.
func (b *Builder) StringID(i int, id int64, name func(int64) string) {
	c := &b.cols[i]
	if c.skip {
		return
	}
	c.own()
	d := c.dict
	if id < 0 || id >= maxCachedID {
		b.Int32(i, d.add(name(id)))
		return
	}
	if int(id) >= len(d.byID) {
		d.byID = append(d.byID, make([]uint64, int(id)+1-len(d.byID))...)
	}
	if e := d.byID[id]; e>>32 == d.gen {
		b.Int32(i, int32(uint32(e)))
		return
	}
	k := d.add(name(id))
	d.byID[id] = d.gen<<32 | uint64(uint32(k))
	b.Int32(i, k)
}

// Null appends a null to column i.
func (b *Builder) Null(i int) {
	c := &b.cols[i]
	switch {
	case c.skip:
		return
	case c.n == c.capacity():
		c.grow(max(2*c.n, 64))
	}
	switch c.kind {
	case Int64:
		c.i64[c.n] = 0
	case Int32, String:
		c.i32[c.n] = 0
	case Uint64:
		c.u64[c.n] = 0
	}
	c.appended(false)
}

// EndRow marks the end of a row (for Rows).
func (b *Builder) EndRow() { b.rows++ }

// EndRows marks the end of n rows (a block filled a column at a time).
func (b *Builder) EndRows(n int) { b.rows += n }

// Rows is the number of rows appended since the last NewBatch.
func (b *Builder) Rows() int { return b.rows }

// NewBatch returns the rows appended so far as a record batch and resets the
// builder. The caller owns the batch and must Release it. Every column
// must have one value per row.
func (b *Builder) NewBatch() arrow.RecordBatch {
	n := b.rows
	b.rows = 0
	arrs := make([]arrow.Array, len(b.cols))
	for i := range b.cols {
		c := &b.cols[i]
		switch {
		case c.skip:
			arrs[i] = nullArray(b.schema.Field(i).Type, n)
			continue
		case c.n != n:
			panic(fmt.Sprintf("ingest: %s.%s has %d values in a batch of %d rows", b.T.Name, b.T.Columns[i].Name, c.n, n))
		default:
			var valid *memory.Buffer
			if c.valid != nil {
				valid = memory.NewBufferWithAllocator(c.valid[:(n+7)/8], pool)
			} else if c.buf == nil {
				c.grow(0) // an empty batch still needs a buffer
			}
			data := memory.NewBufferWithAllocator(c.buf[:n*c.kind.width()], pool)
			d := array.NewData(b.schema.Field(i).Type, n, []*memory.Buffer{valid, data}, nil, c.nulls, 0)
			switch {
			case c.shared != nil:
				d.SetDictionary(c.shared.arr.Data())
				c.shared = nil
			case c.dict != nil:
				dict := c.dict.array()
				d.SetDictionary(dict.Data())
				dict.Release()
				c.dict.reset()
			}
			arrs[i] = array.MakeFromData(d)
			d.Release()
			if valid != nil {
				valid.Release()
			}
			data.Release()
			c.buf, c.valid, c.i64, c.i32, c.u64 = nil, nil, nil, nil, nil
		}
		c.n, c.nulls = 0, 0
	}
	rec := array.NewRecordBatch(b.schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}

// Release releases the builder.
func (b *Builder) Release() {
	for i := range b.cols {
		c := &b.cols[i]
		if c.buf != nil {
			pool.Free(c.buf)
		}
		if c.valid != nil {
			pool.Free(c.valid)
		}
		c.buf, c.valid = nil, nil
		if c.dict != nil {
			c.dict.reset()
			// A StringIds cache of a large id space is not kept for
			// the next builder: a pooled dictionary would hold it whole
			// (16 MB for name-diverse's 2M kernel name ids) while idle.
			if cap(c.dict.byID) > maxPooledIDs {
				c.dict.byID = nil
			}
			dictPool.Put(c.dict)
			c.dict = nil
		}
	}
}

// array returns the dictionary's strings as an Arrow array.
func (d *dictionary) array() arrow.Array {
	// One buffer of the values back to back, not zeroed first (a
	// strings.Builder's Grow), and their offsets: what an Arrow string
	// builder makes, without its zeroing and doubling.
	var sb strings.Builder
	sb.Grow(d.size)
	offs := make([]int32, len(d.vals)+1)
	for i, v := range d.vals {
		sb.WriteString(v)
		offs[i+1] = int32(sb.Len())
	}
	var data []byte
	if all := sb.String(); len(all) > 0 {
		data = unsafe.Slice(unsafe.StringData(all), len(all))
	}
	ad := array.NewData(arrow.BinaryTypes.String, len(d.vals), []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offs)), memory.NewBufferBytes(data)}, nil, 0, 0)
	defer ad.Release()
	return array.NewStringData(ad)
}

// pool recycles the fixed-width buffers of released batches. 8 MiB is
// enough for the parts a scan reads at once (readAheadBytes of batches in
// flight); why not more: docs/performance.md, "The batch buffer pool".
var pool = &recycler{free: map[int][][]byte{}, max: 8 << 20}

// recycler is a memory.Allocator that keeps freed buffers, by capacity, for
// reuse (up to max bytes; beyond that the garbage collector takes them).
// Its buffers are not zeroed: Builder writes every byte it hands out.
type recycler struct {
	mu   sync.Mutex
	free map[int][][]byte
	held int
	max  int
}

// ReleaseBuffers drops the batch buffers kept for reuse (up to 8 MiB):
// for a consumer that is done scanning and holds on to what it read.
func ReleaseBuffers() {
	pool.mu.Lock()
	clear(pool.free)
	pool.held = 0
	pool.mu.Unlock()
}

func (r *recycler) Allocate(n int) []byte {
	r.mu.Lock()
	if l := r.free[n]; len(l) > 0 {
		b := l[len(l)-1]
		r.free[n] = l[:len(l)-1]
		r.held -= n
		r.mu.Unlock()
		return b
	}
	r.mu.Unlock()
	return make([]byte, n)
}

func (r *recycler) Free(b []byte) {
	b = b[:cap(b)]
	r.mu.Lock()
	if r.held+len(b) <= r.max {
		r.free[len(b)] = append(r.free[len(b)], b)
		r.held += len(b)
	}
	r.mu.Unlock()
}

func (r *recycler) Reallocate(n int, b []byte) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := r.Allocate(n)
	copy(nb, b)
	r.Free(b)
	return nb
}

// nullArray returns an all-null array of n rows that shares one zeroed
// buffer for its validity bitmap and values (and, for strings, an empty
// dictionary) instead of allocating them.
func nullArray(t arrow.DataType, n int) arrow.Array {
	width := 8
	if fw, ok := t.(arrow.FixedWidthDataType); ok {
		width = fw.BitWidth() / 8
	}
	if d, ok := t.(*arrow.DictionaryType); ok {
		width = d.IndexType.(arrow.FixedWidthDataType).BitWidth() / 8
	}
	zero := zeros(n * width)
	bits := memory.NewBufferBytes(zero[:(n+7)/8])
	vals := memory.NewBufferBytes(zero[:n*width])
	if d, ok := t.(*arrow.DictionaryType); ok {
		dict := array.MakeArrayOfNull(memory.DefaultAllocator, d.ValueType, 0)
		defer dict.Release()
		data := array.NewData(t, n, []*memory.Buffer{bits, vals}, nil, n, 0)
		data.SetDictionary(dict.Data())
		defer data.Release()
		return array.MakeFromData(data)
	}
	data := array.NewData(t, n, []*memory.Buffer{bits, vals}, nil, n, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

var (
	zeroMu  sync.Mutex
	zeroBuf []byte
)

// zeros returns n zero bytes that nobody writes to.
func zeros(n int) []byte {
	zeroMu.Lock()
	defer zeroMu.Unlock()
	if len(zeroBuf) < n {
		zeroBuf = make([]byte, max(n, 1<<20))
	}
	return zeroBuf[:n]
}
