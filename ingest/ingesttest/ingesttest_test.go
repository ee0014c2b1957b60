package ingesttest

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/ingest"
)

// TestScan: rows come back in order with their values, columns left out
// as nulls (nullable) or zeros, Info follows the tables, and scans are
// counted.
func TestScan(t *testing.T) {
	tr := New("t.sqlite").
		Call(7, 8, "cudaMalloc", 10, 30).
		Add(ingest.API, APICall(7, 9, "cudaFree", 40, 45).With(ingest.ColCorrelationID, 3))
	var rows int
	err := tr.Scan(ingest.API, func(r arrow.RecordBatch) error {
		rows += int(r.NumRows())
		names, corr := ingest.Str(r, ingest.API, ingest.ColName), ingest.I64(r, ingest.API, ingest.ColCorrelationID)
		tid, rv := ingest.I64(r, ingest.API, ingest.ColTid), ingest.I32(r, ingest.API, ingest.ColReturnValue)
		if names.Value(0) != "cudaMalloc" || names.Value(1) != "cudaFree" || tid.Value(1) != 9 {
			t.Errorf("rows %q %q tid %d", names.Value(0), names.Value(1), tid.Value(1))
		}
		if !corr.IsNull(0) || corr.Value(1) != 3 || rv.IsNull(0) || rv.Value(0) != 0 {
			t.Errorf("correlation id null %v / %d, return value %d: want null, 3, 0", corr.IsNull(0), corr.Value(1), rv.Value(0))
		}
		return nil
	})
	if err != nil || rows != 2 {
		t.Fatalf("%d rows, %v", rows, err)
	}
	if err := tr.Scan(ingest.Kernel, func(arrow.RecordBatch) error { t.Error("a batch of a table without rows"); return nil }); err != nil {
		t.Fatal(err)
	}
	in := tr.Info()
	if !in.HasCUDA || in.HasNVTX || !in.Tables["api"] || in.SpanStartNs != 10 || in.SpanEndNs != 45 {
		t.Errorf("info %+v", in)
	}
	if tr.Scans(ingest.API) != 1 || tr.Scans(ingest.Kernel) != 1 || tr.Scans(ingest.NVTX) != 0 {
		t.Errorf("scans api %d kernel %d nvtx %d", tr.Scans(ingest.API), tr.Scans(ingest.Kernel), tr.Scans(ingest.NVTX))
	}
}
