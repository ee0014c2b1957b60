package report

import (
	"bytes"
	"math"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestReadSummaryParquetRoundTrip: rows read back from summary.parquet
// equal the rows written, invalid UTF-8, control characters and the
// smallest and largest floats included (batch --merge relies on it).
func TestReadSummaryParquetRoundTrip(t *testing.T) {
	rows := []SummaryRow{
		{Trace: "a", File: "a\xff\x00.sqlite", SHA256: "00ff", Verdict: "storm", Reason: "=1+2\r\n\ttab", DurationNs: math.MaxInt64,
			StormTimeNs: -1, StormShare: 1.0 / 3, Episodes: 7, WorstEpisodeNs: 5, WorstEpisodeAt: 1e-300, BlockedShare: math.SmallestNonzeroFloat64,
			SyncP99Ns: math.MaxFloat64, FaultsPerSec: 0.1 + 0.2, GPUFaults: 1, CPUFaults: 2, MigratedBytes: 3, DemandMigBytes: 4,
			StepP50Ns: 123456.789, UmtraceVersion: "0.1.0", ResultSchemaVer: 9},
		{Trace: "b", Verdict: VerdictError, Reason: "empty"},
	}
	var buf bytes.Buffer
	if err := WriteSummaryParquet(&buf, rows); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSummaryParquet(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("read back:\n%+v\nwrote:\n%+v", got, rows)
	}
	var again bytes.Buffer
	if err := WriteSummaryParquet(&again, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Error("rewriting the rows read back gives other bytes")
	}
	empty := new(bytes.Buffer)
	WriteSummaryParquet(empty, nil)
	if got, err := ReadSummaryParquet(bytes.NewReader(empty.Bytes())); err != nil || len(got) != 0 {
		t.Errorf("empty summary: %v, %v", got, err)
	}
	if _, err := ReadSummaryParquet(bytes.NewReader([]byte("not parquet"))); err == nil {
		t.Error("no error for a file that is not Parquet")
	}
}

// TestReadSummaryParquetFromPqarrow: shard summaries written before
// internal/pqfile (by arrow-go's pqarrow with the properties umtrace used
// then: Snappy, created-by "umtrace", data pages v1, dictionaries) still
// merge, and give the rows they were written from.
func TestReadSummaryParquetFromPqarrow(t *testing.T) {
	var rows []SummaryRow
	for i := range 3000 { // several pages of a dictionary column
		rows = append(rows, SummaryRow{Trace: string(rune('a'+i%26)) + "-" + string(rune('0'+i%10)), File: "run.sqlite", Verdict: []string{"storm", "clean", VerdictError}[i%3],
			DurationNs: int64(i) * 1e6, StormShare: float64(i) / 3000, Episodes: int64(i % 7), SyncP99Ns: float64(i) * 1.5, UmtraceVersion: "0.8.0", ResultSchemaVer: 8})
	}
	rec := SummaryRecord(memory.DefaultAllocator, SummarySchema, rows)
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithCreatedBy("umtrace"))
	fw, err := pqarrow.NewFileWriter(rec.Schema(), &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSummaryParquet(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("read %d rows, wrote %d; first read %+v, written %+v", len(got), len(rows), got[0], rows[0])
	}
}
