package pqfile

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	pq "github.com/parquet-go/parquet-go"
)

// The tests hold Writer and File to two independent implementations:
// arrow-go's pqarrow (the writer umtrace used before this package) reads
// what Writer writes and writes what File reads, and parquet-go, which
// shares no code with either, reads Writer's files too. Test binaries may
// link them; umtrace's does not.

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
	{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
	{Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "opt_name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "opt_i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "dict", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
}, nil)

// testBatch makes n rows of testSchema; distinct > 0 bounds the distinct
// strings (0: every row its own, past the dictionary limit for big n).
func testBatch(t testing.TB, rng *rand.Rand, n, distinct int, nulls float64) arrow.RecordBatch {
	mem := memory.DefaultAllocator
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	str := func() string {
		if distinct > 0 {
			return fmt.Sprintf("kernel_%d<%s>", rng.IntN(distinct), strings.Repeat("x", rng.IntN(5)))
		}
		return fmt.Sprintf("row %d %x é", rng.Int64(), rng.Uint64())
	}
	null := func() bool { return rng.Float64() < nulls }
	for range n {
		b.Field(0).(*array.Int32Builder).Append(rng.Int32() - math.MaxInt32/2)
		b.Field(1).(*array.Int64Builder).Append(rng.Int64() - math.MaxInt64/2)
		if null() {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Uint64Builder).Append(rng.Uint64())
		}
		f := rng.NormFloat64() * 1e6
		switch rng.IntN(50) {
		case 0:
			f = math.Copysign(0, -1)
		case 1:
			f = 0
		case 2:
			f = math.Inf(1)
		}
		b.Field(3).(*array.Float64Builder).Append(f)
		b.Field(4).(*array.StringBuilder).Append(str())
		if null() {
			b.Field(5).AppendNull()
		} else {
			b.Field(5).(*array.StringBuilder).Append(str())
		}
		if null() {
			b.Field(6).AppendNull()
		} else {
			b.Field(6).(*array.Int64Builder).Append(int64(rng.IntN(3)))
		}
		if null() {
			b.Field(7).AppendNull()
		} else if err := b.Field(7).(*array.BinaryDictionaryBuilder).AppendString(str()); err != nil {
			t.Fatal(err)
		}
	}
	return b.NewRecordBatch()
}

func writeFile(t testing.TB, recs ...arrow.RecordBatch) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, recs[0].Schema(), "umtrace-test")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// cell is row r of arr as a comparable value (nil for null).
func cell(arr arrow.Array, r int) any {
	if arr.IsNull(r) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Int32:
		return int64(a.Value(r))
	case *array.Int64:
		return a.Value(r)
	case *array.Uint64:
		return int64(a.Value(r))
	case *array.Float64:
		return math.Float64bits(a.Value(r))
	case *array.String:
		return a.Value(r)
	case *array.Dictionary:
		return a.Dictionary().(*array.String).Value(a.GetValueIndex(r))
	}
	panic(fmt.Sprintf("type %T", arr))
}

// valueCell is row r of v.
func valueCell(v *Values, typ Type, r int) any {
	if v.Null != nil && v.Null[r] {
		return nil
	}
	switch typ {
	case Float64:
		return math.Float64bits(v.Floats[r])
	case String:
		return v.Strings[r]
	}
	return v.Ints[r]
}

type shape struct {
	name     string
	rows     []int // rows of each batch
	distinct int
	nulls    float64
}

var shapes = []shape{
	{name: "one row", rows: []int{1}, distinct: 3},
	{name: "small", rows: []int{17, 1, 300}, distinct: 5, nulls: 0.3},
	{name: "all null", rows: []int{40}, distinct: 5, nulls: 1},
	{name: "pages", rows: []int{pageRows*2 + 123}, distinct: 1000, nulls: 0.05},
	{name: "no dictionary", rows: []int{30000, 5}, distinct: 0, nulls: 0.5},
	{name: "one string", rows: []int{5000}, distinct: 1},
}

// shapeBatches makes sh's batches from seed (k, salt), released when t ends.
func shapeBatches(t *testing.T, sh shape, k, salt uint64) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(k, salt))
	var recs []arrow.RecordBatch
	for _, n := range sh.rows {
		r := testBatch(t, rng, n, sh.distinct, sh.nulls)
		t.Cleanup(r.Release)
		recs = append(recs, r)
	}
	return recs
}

// TestArrowReadsWriter: pqarrow reads Writer's files back to the values
// written, with the types written.
func TestArrowReadsWriter(t *testing.T) {
	for k, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			recs := shapeBatches(t, sh, uint64(k), 9)
			data := writeFile(t, recs...)
			tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), parquet.NewReaderProperties(nil), pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Release()
			for i, f := range testSchema.Fields() {
				got := tbl.Schema().Field(i)
				wantType := f.Type
				if _, ok := f.Type.(*arrow.DictionaryType); ok {
					wantType = arrow.BinaryTypes.String
				}
				if got.Name != f.Name || !arrow.TypeEqual(got.Type, wantType) || got.Nullable != f.Nullable {
					t.Errorf("column %d: arrow reads %s %s nullable=%v, wrote %s %s nullable=%v", i, got.Name, got.Type, got.Nullable, f.Name, wantType, f.Nullable)
				}
				var gotCells []any
				for _, ch := range tbl.Column(i).Data().Chunks() {
					for r := range ch.Len() {
						gotCells = append(gotCells, cell(ch, r))
					}
				}
				var wantCells []any
				for _, rec := range recs {
					for r := range int(rec.NumRows()) {
						wantCells = append(wantCells, cell(rec.Column(i), r))
					}
				}
				if !reflect.DeepEqual(gotCells, wantCells) {
					t.Errorf("column %s: arrow reads other values than were written", f.Name)
				}
			}
		})
	}
}

// TestParquetGoReadsWriter: parquet-go opens Writer's files and reads
// every row's values.
func TestParquetGoReadsWriter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rec := testBatch(t, rng, pageRows+77, 40, 0.2)
	defer rec.Release()
	data := writeFile(t, rec, rec)
	f, err := pq.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.NumRows() != 2*rec.NumRows() {
		t.Fatalf("parquet-go reads %d rows, wrote %d", f.NumRows(), 2*rec.NumRows())
	}
	rows := make([]pq.Row, 100)
	var k int
	for _, rg := range f.RowGroups() {
		rr := rg.Rows()
		for {
			n, err := rr.ReadRows(rows)
			for _, row := range rows[:n] {
				r := k % int(rec.NumRows())
				for _, v := range row {
					c := v.Column()
					want := cell(rec.Column(c), r)
					var got any
					if !v.IsNull() {
						switch testSchema.Field(c).Type.ID() {
						case arrow.FLOAT64:
							got = math.Float64bits(v.Double())
						case arrow.STRING, arrow.DICTIONARY:
							got = string(v.ByteArray())
						case arrow.INT32:
							got = int64(v.Int32())
						default:
							got = v.Int64()
						}
					}
					if got != want {
						t.Fatalf("row %d column %d: parquet-go reads %v, wrote %v", k, c, got, want)
					}
				}
				k++
			}
			if err != nil {
				break
			}
		}
		rr.Close()
	}
	if k != int(f.NumRows()) {
		t.Fatalf("parquet-go read %d rows of %d", k, f.NumRows())
	}
}

// TestFileReadsArrow: File reads what pqarrow writes, in its dictionary
// and plain encodings, data pages v1 and v2, Snappy and uncompressed.
func TestFileReadsArrow(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	rec := testBatch(t, rng, 3*1024+5, 30, 0.25)
	defer rec.Release()
	for _, o := range []struct {
		name  string
		props []parquet.WriterProperty
	}{
		{"default", nil},
		{"snappy v2", []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDataPageVersion(parquet.DataPageV2)}},
		{"plain", []parquet.WriterProperty{parquet.WithDictionaryDefault(false), parquet.WithDataPageSize(4096)}},
		{"small row groups", []parquet.WriterProperty{parquet.WithMaxRowGroupLength(1000), parquet.WithCompression(compress.Codecs.Snappy)}},
		{"gzip", []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Gzip)}},
		{"zstd v2", []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDataPageVersion(parquet.DataPageV2)}},
	} {
		t.Run(o.name, func(t *testing.T) {
			var buf bytes.Buffer
			fw, err := pqarrow.NewFileWriter(testSchema, &buf, parquet.NewWriterProperties(o.props...), pqarrow.DefaultWriterProps())
			if err != nil {
				t.Fatal(err)
			}
			if err := fw.Write(rec); err != nil {
				t.Fatal(err)
			}
			if err := fw.Close(); err != nil {
				t.Fatal(err)
			}
			checkFile(t, buf.Bytes(), rec)
		})
	}
}

// checkFile reads data with File and compares it with rec.
func checkFile(t *testing.T, data []byte, recs ...arrow.RecordBatch) {
	t.Helper()
	f, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	if f.NumRows != n || len(f.Columns) != len(testSchema.Fields()) {
		t.Fatalf("File reads %d rows, %d columns; want %d, %d", f.NumRows, len(f.Columns), n, len(testSchema.Fields()))
	}
	for i, fd := range testSchema.Fields() {
		c := f.Columns[i]
		if c.Name != fd.Name || c.Type != TypeOf(fd.Type) || c.Nullable != fd.Nullable {
			t.Errorf("column %d: File reads %s %s nullable=%v, want %s %s nullable=%v", i, c.Name, c.Type, c.Nullable, fd.Name, TypeOf(fd.Type), fd.Nullable)
		}
		v, err := f.Read(i)
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for _, rec := range recs {
			for r := range int(rec.NumRows()) {
				if got, want := valueCell(v, c.Type, k), cell(rec.Column(i), r); got != want {
					t.Fatalf("column %s row %d: File reads %v, wrote %v", c.Name, k, got, want)
				}
				k++
			}
		}
		if rows(v) != k || v.Null != nil && len(v.Null) != k {
			t.Fatalf("column %s: %d values, %d nulls for %d rows", c.Name, rows(v), len(v.Null), k)
		}
	}
}

// TestRoundTrip: File reads Writer's files back.
func TestRoundTrip(t *testing.T) {
	for k, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			recs := shapeBatches(t, sh, uint64(k), 11)
			data := writeFile(t, recs...)
			checkFile(t, data, recs...)
			if again := writeFile(t, recs...); !bytes.Equal(again, data) {
				t.Error("the same batches written twice differ")
			}
		})
	}
}

// TestEmpty: a file of no rows has the schema and no row groups.
func TestEmpty(t *testing.T) {
	rec := testBatch(t, rand.New(rand.NewPCG(1, 1)), 0, 1, 0)
	defer rec.Release()
	data := writeFile(t, rec)
	checkFile(t, data, rec)
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), parquet.NewReaderProperties(nil), pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if tbl.NumRows() != 0 || tbl.NumCols() != int64(len(testSchema.Fields())) {
		t.Errorf("arrow reads %d rows, %d columns", tbl.NumRows(), tbl.NumCols())
	}
}

// TestStatistics: the chunk statistics arrow reads are the batch's min
// and max (signed, unsigned for uint64, -0 and +0 for zeros).
func TestStatistics(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	rec := testBatch(t, rng, 2000, 5, 0.1)
	defer rec.Release()
	data := writeFile(t, rec)
	r, err := fileReader(data)
	if err != nil {
		t.Fatal(err)
	}
	md := r.MetaData().RowGroup(0)
	for i, name := range []string{"i32", "i64", "u64", "f64"} {
		cc, err := md.ColumnChunk(i)
		if err != nil {
			t.Fatal(err)
		}
		st, err := cc.Statistics()
		if err != nil || st == nil || !st.HasMinMax() {
			t.Fatalf("%s: no statistics (%v)", name, err)
		}
		lo, hi := minMax(rec.Column(i))
		if got := fmt.Sprint(statMin(st), statMax(st)); got != fmt.Sprint(lo, hi) {
			t.Errorf("%s: statistics %s, want %v %v", name, got, lo, hi)
		}
		if st.NullCount() != int64(rec.Column(i).NullN()) {
			t.Errorf("%s: null count %d, want %d", name, st.NullCount(), rec.Column(i).NullN())
		}
	}
}

// TestRLE: the hybrid encoding decodes to the values encoded, for runs
// and literals of every length around the group and run limits.
func TestRLE(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 3000 {
		width := rng.IntN(21)
		n := rng.IntN(1200)
		vs := make([]uint32, 0, n)
		for len(vs) < n {
			v := uint32(rng.Uint64() & (1<<width - 1))
			for range 1 + rng.IntN([]int{1, 9, 600}[rng.IntN(3)]) {
				vs = append(vs, v)
			}
		}
		enc := appendRLE(nil, vs, width)
		got, err := readRLE(nil, enc, width, len(vs))
		if err != nil || !reflect.DeepEqual(got, vs) && len(vs) > 0 {
			t.Fatalf("trial %d (width %d, %d values): %v", trial, width, len(vs), err)
		}
	}
}

// FuzzOpen: damaged files give errors, not panics or runaway memory.
func FuzzOpen(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	rec := testBatch(f, rng, 300, 7, 0.3)
	defer rec.Release()
	f.Add(writeFile(f, rec))
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := Open(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		if pf.NumRows > 1<<20 {
			return // the reader's caller bounds rows
		}
		for i := range pf.Columns {
			pf.Read(i)
		}
	})
}

func fileReader(data []byte) (*file.Reader, error) {
	return file.NewParquetReader(bytes.NewReader(data))
}

func statMin(st metadata.TypedStatistics) any { return statVal(st, true) }
func statMax(st metadata.TypedStatistics) any { return statVal(st, false) }

func statVal(st metadata.TypedStatistics, lo bool) any {
	switch s := st.(type) {
	case *metadata.Int32Statistics:
		if lo {
			return int64(s.Min())
		}
		return int64(s.Max())
	case *metadata.Int64Statistics:
		if lo {
			if s.Descr().ConvertedType() == schema.ConvertedTypes.Uint64 {
				return uint64(s.Min())
			}
			return s.Min()
		}
		if s.Descr().ConvertedType() == schema.ConvertedTypes.Uint64 {
			return uint64(s.Max())
		}
		return s.Max()
	case *metadata.Float64Statistics:
		if lo {
			return math.Float64bits(s.Min())
		}
		return math.Float64bits(s.Max())
	}
	return nil
}

// minMax is arr's min and max as statistics give them.
func minMax(arr arrow.Array) (any, any) {
	switch a := arr.(type) {
	case *array.Int32:
		lo, hi := int64(math.MaxInt32), int64(math.MinInt32)
		for _, v := range a.Int32Values() {
			lo, hi = min(lo, int64(v)), max(hi, int64(v))
		}
		return lo, hi
	case *array.Int64:
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for _, v := range a.Int64Values() {
			lo, hi = min(lo, v), max(hi, v)
		}
		return lo, hi
	case *array.Uint64:
		lo, hi := uint64(math.MaxUint64), uint64(0)
		for i, v := range a.Uint64Values() {
			if a.IsValid(i) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		return lo, hi
	case *array.Float64:
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range a.Float64Values() {
			lo, hi = min(lo, v), max(hi, v)
		}
		if lo == 0 {
			lo = math.Copysign(0, -1)
		}
		if hi == 0 {
			hi = 0
		}
		return math.Float64bits(lo), math.Float64bits(hi)
	}
	return nil, nil
}
