package report

import (
	"bytes"
	"math"
	"reflect"
	"testing"
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
