package ingest

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestTake: the rows taken, in the order asked (repeats too), with their
// values and nulls in every column kind; a string column keeps the batch's
// SharedDict (same DictID), a column projected away stays all null, and a
// batch of one row or none works.
func TestTake(t *testing.T) {
	sd := NewSharedDict([]byte("alphabetagamma"), []int32{0, 5, 9, 14})
	b := NewBuilder(memory.DefaultAllocator, Memcpy)
	defer b.Release()
	b.Project([]string{ColStart, ColPid, ColCorrelationID, ColCopyKind, ColMigCause, ColVirtAddr})
	iStart, iPid, iCorr, iKind := Memcpy.Index(ColStart), Memcpy.Index(ColPid), Memcpy.Index(ColCorrelationID), Memcpy.Index(ColCopyKind)
	iCause, iVA := Memcpy.Index(ColMigCause), Memcpy.Index(ColVirtAddr)
	const n = 1000
	for i := range n {
		b.Int64(iStart, int64(i)*10)
		b.Int64(iPid, int64(i%3))
		if i%7 == 0 {
			b.Null(iCorr)
		} else {
			b.Int64(iCorr, int64(i)+1)
		}
		b.Int32(iKind, int32(i%14))
		if i%5 == 0 {
			b.Null(iCause)
		} else {
			b.Int32(iCause, int32(i%6))
		}
		b.Uint64(iVA, uint64(i)<<20|0xfff)
		b.EndRow()
	}
	r := b.NewBatch()
	defer r.Release()

	g := NewBuilder(memory.DefaultAllocator, Kernel)
	defer g.Release()
	g.Project([]string{ColName})
	in := Kernel.Index(ColName)
	for i := range n {
		if i%4 == 3 {
			g.Null(in)
		} else {
			g.DictIndex(in, sd, int32(i%3))
		}
		g.EndRow()
	}
	kr := g.NewBatch()
	defer kr.Release()

	for _, rows := range [][]int32{{}, {999}, {0, 3, 6, 7, 998}, {5, 5, 1, 0, 14, 700}} {
		out := Take(r, rows)
		if out.NumRows() != int64(len(rows)) || out.NumCols() != r.NumCols() {
			t.Fatalf("%v: %d rows, %d columns", rows, out.NumRows(), out.NumCols())
		}
		for c := 0; c < int(r.NumCols()); c++ {
			a, o := r.Column(c), out.Column(c)
			for k, i := range rows {
				if a.IsNull(int(i)) != o.IsNull(k) || a.ValueStr(int(i)) != o.ValueStr(k) {
					t.Fatalf("rows %v column %s row %d: %q (null %v), want %q (null %v)", rows, Memcpy.Columns[c].Name, k,
						o.ValueStr(k), o.IsNull(k), a.ValueStr(int(i)), a.IsNull(int(i)))
				}
			}
		}
		if len(rows) > 0 && out.Column(Memcpy.Index(ColBytes)).NullN() != len(rows) {
			t.Errorf("%v: a projected-away column is not all null", rows)
		}
		out.Release()

		ko := Take(kr, rows)
		s, so := Str(kr, Kernel, ColName), Str(ko, Kernel, ColName)
		if len(rows) > 0 && (!so.Shared() || so.DictID() != s.DictID()) {
			t.Errorf("%v: the taken batch lost the shared dictionary", rows)
		}
		for k, i := range rows {
			if so.Value(k) != s.Value(int(i)) || so.Key(k) != s.Key(int(i)) {
				t.Errorf("%v row %d: %q key %d, want %q key %d", rows, k, so.Value(k), so.Key(k), s.Value(int(i)), s.Key(int(i)))
			}
		}
		if _, ok := ko.Column(Kernel.Index(ColStart)).(*array.Int64); !ok {
			t.Errorf("%v: start column is %T", rows, ko.Column(Kernel.Index(ColStart)))
		}
		ko.Release()
	}
}
