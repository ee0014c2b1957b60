// Package pqfile writes and reads the Parquet files umtrace makes: flat
// schemas of int32, int64, uint64, float64 and utf8 columns, required or
// nullable, Snappy-compressed, strings dictionary-encoded. It is a small
// subset of the format (https://parquet.apache.org/docs/file-format/),
// written here because arrow-go's Parquet packages link its compute
// kernels, Flight and gRPC into every binary that imports them: 30 MB of
// code that stayed resident in every run, the smallest one included
// (docs/performance.md, "Ninth session").
//
// The tests read what Writer writes with arrow-go's and parquet-go's
// readers, and read their files with File.
package pqfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/klauspost/compress/snappy"
)

// Parquet's enums (parquet.thrift).
const (
	physInt32     = 1
	physInt64     = 2
	physDouble    = 5
	physByteArray = 6

	encPlain          = 0
	encPlainDict      = 2
	encRLE            = 3
	encRLEDict        = 8
	codecUncompressed = 0
	codecSnappy       = 1
	codecGzip         = 2 // read only
	codecZstd         = 6 // read only

	pageData   = 0
	pageDict   = 2
	pageDataV2 = 3

	repRequired = 0
	repOptional = 1

	convUTF8   = 0
	convUint64 = 14
)

// Type is a column's value type.
type Type int

const (
	Unsupported Type = iota
	Int32
	Int64
	Uint64
	Float64
	String
)

func (t Type) String() string {
	return [...]string{"unsupported", "int32", "int64", "uint64", "float64", "utf8"}[t]
}

// TypeOf maps an Arrow type to a column Type (a utf8 dictionary is
// String: Writer writes its strings).
func TypeOf(dt arrow.DataType) Type {
	switch dt.ID() {
	case arrow.INT32:
		return Int32
	case arrow.INT64:
		return Int64
	case arrow.UINT64:
		return Uint64
	case arrow.FLOAT64:
		return Float64
	case arrow.STRING:
		return String
	case arrow.DICTIONARY:
		if dt.(*arrow.DictionaryType).ValueType.ID() == arrow.STRING {
			return String
		}
	}
	return Unsupported
}

func (t Type) physical() int32 {
	switch t {
	case Int32:
		return physInt32
	case Int64, Uint64:
		return physInt64
	case Float64:
		return physDouble
	}
	return physByteArray
}

// pageRows is the most rows a data page holds.
const pageRows = 1 << 16

// maxDictBytes is the largest dictionary a column chunk is encoded with;
// a chunk of more distinct strings is written plain.
const maxDictBytes = 1 << 20

// Writer writes Arrow record batches of one schema as a Parquet file:
// each Write is a row group.
type Writer struct {
	w         io.Writer
	off       int64
	cols      []colSpec
	groups    []rowGroup
	rows      int64
	createdBy string
	err       error
	// reused per chunk
	page, comp []byte
	defs, idx  []uint32
}

type colSpec struct {
	name     string
	typ      Type
	optional bool
}

type rowGroup struct {
	rows, bytes, comp, off int64
	chunks                 []chunkMeta
}

type chunkMeta struct {
	off, dictOff, dataOff int64 // dictOff -1 without a dictionary
	values, size, comp    int64
	encodings             []int32
	nulls                 int64
	min, max              []byte // plain-encoded; nil without
}

// NewWriter starts a file of schema's columns on w; createdBy goes into
// the footer.
func NewWriter(w io.Writer, schema *arrow.Schema, createdBy string) (*Writer, error) {
	pw := &Writer{w: w, createdBy: createdBy}
	for _, f := range schema.Fields() {
		t := TypeOf(f.Type)
		if t == Unsupported {
			return nil, fmt.Errorf("parquet: column %s: type %s is not supported", f.Name, f.Type)
		}
		pw.cols = append(pw.cols, colSpec{name: f.Name, typ: t, optional: f.Nullable})
	}
	pw.write([]byte("PAR1"))
	return pw, pw.err
}

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	n, err := w.w.Write(b)
	w.off += int64(n)
	w.err = err
}

// Write writes rec (of the writer's schema) as one row group; a batch of
// no rows writes nothing.
func (w *Writer) Write(rec arrow.RecordBatch) error {
	if w.err != nil {
		return w.err
	}
	if int(rec.NumCols()) != len(w.cols) {
		return fmt.Errorf("parquet: batch of %d columns, schema has %d", rec.NumCols(), len(w.cols))
	}
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	g := rowGroup{rows: int64(n), off: w.off}
	for i, c := range w.cols {
		arr := rec.Column(i)
		if TypeOf(arr.DataType()) != c.typ {
			return fmt.Errorf("parquet: column %s: %s, schema has %s", c.name, arr.DataType(), c.typ)
		}
		if !c.optional && arr.NullN() > 0 {
			return fmt.Errorf("parquet: column %s: %d nulls in a required column", c.name, arr.NullN())
		}
		m := w.chunk(c, arr)
		g.bytes += m.size
		g.comp += m.comp
		g.chunks = append(g.chunks, m)
	}
	w.groups = append(w.groups, g)
	w.rows += int64(n)
	return w.err
}

// chunk writes one column chunk: a dictionary page for strings that fit
// one, then data pages of up to pageRows rows.
func (w *Writer) chunk(c colSpec, arr arrow.Array) chunkMeta {
	m := chunkMeta{off: w.off, dictOff: -1, values: int64(arr.Len()), nulls: int64(arr.NullN())}
	var dict map[string]uint32
	if c.typ == String {
		dict = w.dictionary(arr, &m)
	}
	m.dataOff = w.off
	enc := int32(encPlain)
	m.encodings = []int32{encPlain, encRLE}
	if dict != nil {
		enc = encRLEDict
		m.encodings = append(m.encodings, encRLEDict)
	}
	st := stats{typ: c.typ}
	for lo := 0; lo < arr.Len(); lo += pageRows {
		hi := min(arr.Len(), lo+pageRows)
		body := w.page[:0]
		if c.optional {
			w.defs = w.defs[:0]
			for r := lo; r < hi; r++ {
				w.defs = append(w.defs, uint32(boolInt(arr.IsValid(r))))
			}
			body = append(body, 0, 0, 0, 0)
			body = appendRLE(body, w.defs, 1)
			binary.LittleEndian.PutUint32(body[:4], uint32(len(body)-4)) // the levels' length first
		}
		if dict != nil {
			w.idx = w.idx[:0]
			for r := lo; r < hi; r++ {
				if arr.IsValid(r) {
					w.idx = append(w.idx, dict[stringAt(arr, r)])
				}
			}
			width := bitWidth(uint32(max(len(dict), 1) - 1))
			body = append(body, byte(width))
			body = appendRLE(body, w.idx, width)
		} else {
			body = appendPlain(body, c.typ, arr, lo, hi, &st)
		}
		w.page = body
		h := &encoder{}
		h.begin()
		w.pageHeader(h, pageData, body)
		h.structField(5)
		h.i32(1, int32(hi-lo))
		h.i32(2, enc)
		h.i32(3, encRLE)
		h.i32(4, encRLE)
		h.end()
		h.end()
		w.flushPage(h.b, &m, len(body))
	}
	if dict == nil && st.set && c.typ != String {
		st.encode()
		m.min, m.max = st.min, st.max
	}
	return m
}

// dictionary writes the dictionary page of string column arr and returns
// its entries' indices; nil (and nothing written) when the distinct
// strings exceed maxDictBytes.
func (w *Writer) dictionary(arr arrow.Array, m *chunkMeta) map[string]uint32 {
	dict := map[string]uint32{}
	body := w.page[:0]
	for r := 0; r < arr.Len(); r++ {
		if arr.IsNull(r) {
			continue
		}
		s := stringAt(arr, r)
		if _, ok := dict[s]; ok {
			continue
		}
		dict[s] = uint32(len(dict))
		body = binary.LittleEndian.AppendUint32(body, uint32(len(s)))
		body = append(body, s...)
		if len(body) > maxDictBytes {
			w.page = body
			return nil
		}
	}
	w.page = body
	m.dictOff = w.off
	h := &encoder{}
	h.begin()
	w.pageHeader(h, pageDict, body)
	h.structField(7)
	h.i32(1, int32(len(dict)))
	h.i32(2, encPlain)
	h.end()
	h.end()
	w.flushPage(h.b, m, len(body))
	return dict
}

// pageHeader writes a PageHeader's first fields and compresses body into
// w.comp.
func (w *Writer) pageHeader(h *encoder, typ int32, body []byte) {
	w.comp = snappy.Encode(w.comp[:cap(w.comp)], body)
	h.i32(1, typ)
	h.i32(2, int32(len(body)))
	h.i32(3, int32(len(w.comp)))
}

func (w *Writer) flushPage(header []byte, m *chunkMeta, size int) {
	w.write(header)
	w.write(w.comp)
	m.size += int64(len(header) + size)
	m.comp += int64(len(header) + len(w.comp))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// stringAt is row r of a utf8 or utf8-dictionary array (valid).
func stringAt(arr arrow.Array, r int) string {
	if d, ok := arr.(*array.Dictionary); ok {
		return d.Dictionary().(*array.String).Value(d.GetValueIndex(r))
	}
	return arr.(*array.String).Value(r)
}

// appendPlain appends the valid values of arr[lo:hi] PLAIN-encoded.
func appendPlain(b []byte, t Type, arr arrow.Array, lo, hi int, st *stats) []byte {
	le := binary.LittleEndian
	for r := lo; r < hi; r++ {
		if arr.IsNull(r) {
			continue
		}
		switch t {
		case Int32:
			v := arr.(*array.Int32).Value(r)
			st.int(int64(v))
			b = le.AppendUint32(b, uint32(v))
		case Int64:
			v := arr.(*array.Int64).Value(r)
			st.int(v)
			b = le.AppendUint64(b, uint64(v))
		case Uint64:
			v := arr.(*array.Uint64).Value(r)
			st.uint(v)
			b = le.AppendUint64(b, v)
		case Float64:
			v := arr.(*array.Float64).Value(r)
			st.float(v)
			b = le.AppendUint64(b, math.Float64bits(v))
		case String:
			s := stringAt(arr, r)
			b = le.AppendUint32(b, uint32(len(s)))
			b = append(b, s...)
		}
	}
	return b
}

// stats is a numeric chunk's min and max, in the column's sort order
// (signed, unsigned for uint64, NaN left out of floats), plain-encoded.
type stats struct {
	typ      Type
	set      bool
	min, max []byte
	i0, i1   int64
	u0, u1   uint64
	f0, f1   float64
}

func (s *stats) int(v int64)   { s.set = widen(s.set, v, &s.i0, &s.i1) }
func (s *stats) uint(v uint64) { s.set = widen(s.set, v, &s.u0, &s.u1) }

func (s *stats) float(v float64) {
	if !math.IsNaN(v) {
		s.set = widen(s.set, v, &s.f0, &s.f1)
	}
}

// widen widens [lo, hi] to hold v (to [v, v] when !set) and reports true.
func widen[T int64 | uint64 | float64](set bool, v T, lo, hi *T) bool {
	if !set || v < *lo {
		*lo = v
	}
	if !set || v > *hi {
		*hi = v
	}
	return true
}

// encode sets min and max from the running values. A zero min is written
// -0 and a zero max +0, as the format asks (either zero compares equal).
func (s *stats) encode() {
	le := binary.LittleEndian
	switch s.typ {
	case Int32:
		s.min, s.max = le.AppendUint32(nil, uint32(s.i0)), le.AppendUint32(nil, uint32(s.i1))
	case Int64:
		s.min, s.max = le.AppendUint64(nil, uint64(s.i0)), le.AppendUint64(nil, uint64(s.i1))
	case Uint64:
		s.min, s.max = le.AppendUint64(nil, s.u0), le.AppendUint64(nil, s.u1)
	case Float64:
		if s.f0 == 0 {
			s.f0 = math.Copysign(0, -1)
		}
		if s.f1 == 0 {
			s.f1 = 0
		}
		s.min, s.max = le.AppendUint64(nil, math.Float64bits(s.f0)), le.AppendUint64(nil, math.Float64bits(s.f1))
	}
}

// Close writes the footer. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	e := &encoder{}
	e.begin()
	e.i32(1, 2)
	e.list(2, tStruct, len(w.cols)+1)
	e.begin()
	e.str(4, "schema")
	e.i32(5, int32(len(w.cols)))
	e.end()
	for _, c := range w.cols {
		e.begin()
		e.i32(1, c.typ.physical())
		e.i32(3, int32(boolInt(c.optional)*repOptional+boolInt(!c.optional)*repRequired))
		e.str(4, c.name)
		switch c.typ {
		case String:
			e.i32(6, convUTF8)
			e.structField(10)
			e.structField(1) // STRING
			e.end()
			e.end()
		case Uint64:
			e.i32(6, convUint64)
			e.structField(10)
			e.structField(10) // INTEGER
			e.field(1, tByte)
			e.b = append(e.b, 64)
			e.bool(2, false)
			e.end()
			e.end()
		}
		e.end()
	}
	e.i64(3, w.rows)
	e.list(4, tStruct, len(w.groups))
	for _, g := range w.groups {
		e.begin()
		e.list(1, tStruct, len(g.chunks))
		for i, m := range g.chunks {
			c := w.cols[i]
			e.begin()
			e.i64(2, m.off)
			e.structField(3)
			e.i32(1, c.typ.physical())
			e.list(2, tI32, len(m.encodings))
			for _, x := range m.encodings {
				e.varint(int64(x))
			}
			e.list(3, tBinary, 1)
			e.uvarint(uint64(len(c.name)))
			e.b = append(e.b, c.name...)
			e.i32(4, codecSnappy)
			e.i64(5, m.values)
			e.i64(6, m.size)
			e.i64(7, m.comp)
			e.i64(9, m.dataOff)
			if m.dictOff >= 0 {
				e.i64(11, m.dictOff)
			}
			e.structField(12)
			e.i64(3, m.nulls)
			if m.max != nil {
				e.binary(5, m.max)
				e.binary(6, m.min)
			}
			e.end()
			e.end()
			e.end()
		}
		e.i64(2, g.bytes)
		e.i64(3, g.rows)
		e.i64(5, g.off)
		e.i64(6, g.comp)
		e.end()
	}
	e.str(6, w.createdBy)
	e.list(7, tStruct, len(w.cols))
	for range w.cols {
		e.begin()
		e.structField(1) // TYPE_ORDER
		e.end()
		e.end()
	}
	e.end()
	w.write(e.b)
	w.write(binary.LittleEndian.AppendUint32(nil, uint32(len(e.b))))
	w.write([]byte("PAR1"))
	return w.err
}
