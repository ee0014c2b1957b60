package ingest

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Take returns a new batch of the rows of r at rows (any order, repeats
// allowed), column for column: values and nulls are copied, string columns
// keep r's dictionary (a SharedDict stays shared: same DictID), and a
// column that is all null (left out by a projection) stays all null
// without a copy. Consumers that split a scan by process use it to hand
// each one only its rows.
func Take(r arrow.RecordBatch, rows []int32) arrow.RecordBatch {
	n := len(rows)
	cols := make([]arrow.Array, r.NumCols())
	for c := range cols {
		cols[c] = takeArray(r.Column(c), rows)
	}
	out := array.NewRecordBatch(r.Schema(), cols, int64(n))
	for _, a := range cols {
		a.Release()
	}
	return out
}

func takeArray(a arrow.Array, rows []int32) arrow.Array {
	n := len(rows)
	dt := a.DataType()
	if a.Len() > 0 && a.NullN() == a.Len() {
		return nullArray(dt, n)
	}
	d := a.Data()
	width := 8
	switch t := dt.(type) {
	case *arrow.DictionaryType:
		width = t.IndexType.(arrow.FixedWidthDataType).BitWidth() / 8
	case arrow.FixedWidthDataType:
		width = t.BitWidth() / 8
	}
	vals := d.Buffers()[1].Bytes()[d.Offset()*width:]
	out := make([]byte, n*width)
	switch width {
	case 8:
		src := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(vals))), a.Len())
		dst := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(out))), n)
		for i, k := range rows {
			dst[i] = src[k]
		}
	case 4:
		src := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(vals))), a.Len())
		dst := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(out))), n)
		for i, k := range rows {
			dst[i] = src[k]
		}
	default:
		panic("ingest.Take: unsupported column width")
	}
	var valid *memory.Buffer
	nulls := 0
	if a.NullN() > 0 {
		bits := make([]byte, (n+7)/8)
		for i, k := range rows {
			if a.IsValid(int(k)) {
				bitutil.SetBit(bits, i)
			} else {
				nulls++
			}
		}
		if nulls > 0 {
			valid = memory.NewBufferBytes(bits)
		}
	}
	nd := array.NewData(dt, n, []*memory.Buffer{valid, memory.NewBufferBytes(out)}, nil, nulls, 0)
	defer nd.Release()
	if dd := d.Dictionary(); dd != nil {
		nd.SetDictionary(dd)
	}
	return array.MakeFromData(nd)
}
