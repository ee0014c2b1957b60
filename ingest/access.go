package ingest

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Typed column views of a record batch of table t. They panic if the batch
// does not have t's schema, which would be a programming error.

// I64 returns column col of rec as int64s.
func I64(rec arrow.RecordBatch, t *Table, col string) *array.Int64 {
	return rec.Column(t.Index(col)).(*array.Int64)
}

// I32 returns column col of rec as int32s.
func I32(rec arrow.RecordBatch, t *Table, col string) *array.Int32 {
	return rec.Column(t.Index(col)).(*array.Int32)
}

// U64 returns column col of rec as uint64s.
func U64(rec arrow.RecordBatch, t *Table, col string) *array.Uint64 {
	return rec.Column(t.Index(col)).(*array.Uint64)
}

// Strings is a view of a dictionary-encoded string column.
type Strings struct {
	idx  *array.Dictionary
	dict *array.String
}

// Str returns column col of rec as strings.
func Str(rec arrow.RecordBatch, t *Table, col string) Strings {
	d := rec.Column(t.Index(col)).(*array.Dictionary)
	return Strings{idx: d, dict: d.Dictionary().(*array.String)}
}

// Len is the number of rows.
func (s Strings) Len() int { return s.idx.Len() }

// Value returns row i's string ("" when null).
func (s Strings) Value(i int) string {
	if s.idx.IsNull(i) {
		return ""
	}
	return s.dict.Value(s.idx.GetValueIndex(i))
}

// Key returns row i's index into the batch's dictionary (-1 when null). Keys
// are only meaningful within one batch; DictLen and DictValue expose the
// dictionary so callers can intern each distinct string once per batch.
func (s Strings) Key(i int) int {
	if s.idx.IsNull(i) {
		return -1
	}
	return s.idx.GetValueIndex(i)
}

// Keys returns every row's index into the batch's dictionary, as stored,
// when the column has no nulls and 32-bit indices (as the Builder makes
// them); nil otherwise (use Key). For loops over every row: Key's
// lookup, through the index type, cost more than the rest of such loops.
func (s Strings) Keys() []int32 {
	ix, ok := s.idx.Indices().(*array.Int32)
	if !ok || s.idx.NullN() > 0 {
		return nil
	}
	return ix.Int32Values()
}

// DictLen is the number of distinct strings in the batch's dictionary.
func (s Strings) DictLen() int { return s.dict.Len() }

// DictValue returns dictionary entry k.
func (s Strings) DictValue(k int) string { return s.dict.Value(k) }
