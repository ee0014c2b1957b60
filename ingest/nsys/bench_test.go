package nsys

import (
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/testshared"
)

// BenchmarkScan reports ingest rows/s per table. It reads the trace named by
// UMTRACE_BENCH_TRACE (make bench generates one), else the bundled storm trace.
func BenchmarkScan(b *testing.B) {
	path := os.Getenv("UMTRACE_BENCH_TRACE")
	if path == "" {
		path = testshared.Testdata("traces", "um_pingpong_default.sqlite")
	}
	r, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for _, t := range ingest.Tables {
		if r.SourceTable(t) == "" {
			continue
		}
		b.Run(t.Name, func(b *testing.B) {
			var rows int64
			for i := 0; i < b.N; i++ {
				err := r.Scan(t, func(rec arrow.RecordBatch) error { rows += rec.NumRows(); return nil })
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
