package tracemodel

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Builder builds record batches of one table with typed appends. Columns are
// addressed by position (use Table.Index once, outside the row loop).
type Builder struct {
	T    *Table
	rb   *array.RecordBuilder
	i64  []*array.Int64Builder
	i32  []*array.Int32Builder
	u64  []*array.Uint64Builder
	str  []*array.BinaryDictionaryBuilder
	skip []bool // columns whose appends become nulls (see Project)
	rows int
}

// NewBuilder returns a Builder for t using mem.
func NewBuilder(mem memory.Allocator, t *Table) *Builder {
	b := &Builder{T: t, rb: array.NewRecordBuilder(mem, t.Schema())}
	n := len(t.Columns)
	b.i64 = make([]*array.Int64Builder, n)
	b.i32 = make([]*array.Int32Builder, n)
	b.u64 = make([]*array.Uint64Builder, n)
	b.str = make([]*array.BinaryDictionaryBuilder, n)
	for i, col := range t.Columns {
		switch col.Kind {
		case Int64:
			b.i64[i] = b.rb.Field(i).(*array.Int64Builder)
		case Int32:
			b.i32[i] = b.rb.Field(i).(*array.Int32Builder)
		case Uint64:
			b.u64[i] = b.rb.Field(i).(*array.Uint64Builder)
		case String:
			b.str[i] = b.rb.Field(i).(*array.BinaryDictionaryBuilder)
		}
	}
	return b
}

// Project makes appends to columns not named in cols append nulls
// instead, so producers skip work for columns no consumer reads (string
// columns cost a hash per row). An empty cols keeps every column.
func (b *Builder) Project(cols []string) {
	if len(cols) == 0 {
		b.skip = nil
		return
	}
	b.skip = make([]bool, len(b.T.Columns))
	for i := range b.skip {
		b.skip[i] = true
	}
	for _, c := range cols {
		b.skip[b.T.Index(c)] = false
	}
}

// Reserve reserves room for n more rows.
func (b *Builder) Reserve(n int) { b.rb.Reserve(n) }

// Int64 appends v to column i.
func (b *Builder) Int64(i int, v int64) {
	if b.skip != nil && b.skip[i] {
		b.i64[i].AppendNull()
		return
	}
	b.i64[i].Append(v)
}

// Int32 appends v to column i.
func (b *Builder) Int32(i int, v int32) {
	if b.skip != nil && b.skip[i] {
		b.i32[i].AppendNull()
		return
	}
	b.i32[i].Append(v)
}

// Uint64 appends v to column i.
func (b *Builder) Uint64(i int, v uint64) {
	if b.skip != nil && b.skip[i] {
		b.u64[i].AppendNull()
		return
	}
	b.u64[i].Append(v)
}

// String appends v to column i. The dictionary builder copies v's bytes
// into its memo table only when v is new, so no per-row copy is made here.
func (b *Builder) String(i int, v string) {
	if b.skip != nil && b.skip[i] {
		b.str[i].AppendNull()
		return
	}
	_ = b.str[i].Append(unsafe.Slice(unsafe.StringData(v), len(v)))
}

// Null appends a null to column i.
func (b *Builder) Null(i int) { b.rb.Field(i).AppendNull() }

// EndRow marks the end of a row (for Rows).
func (b *Builder) EndRow() { b.rows++ }

// Rows is the number of rows appended since the last NewBatch.
func (b *Builder) Rows() int { return b.rows }

// NewBatch returns the rows appended so far as a record batch and resets the
// builder. The caller owns the batch and must Release it.
func (b *Builder) NewBatch() arrow.RecordBatch {
	b.rows = 0
	return b.rb.NewRecordBatch()
}

// Release releases the builder.
func (b *Builder) Release() { b.rb.Release() }
