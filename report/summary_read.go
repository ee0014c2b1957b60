package report

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// field returns a pointer to the field of r that column name holds: a
// *string, *int64 or *float64 (nil for an unknown name). It is the
// inverse of values.
func (r *SummaryRow) field(name string) any {
	switch name {
	case "trace_id":
		return &r.Trace
	case "file":
		return &r.File
	case "sha256":
		return &r.SHA256
	case "verdict":
		return &r.Verdict
	case "reason":
		return &r.Reason
	case "duration_ns":
		return &r.DurationNs
	case "storm_time_ns":
		return &r.StormTimeNs
	case "storm_share":
		return &r.StormShare
	case "episodes":
		return &r.Episodes
	case "worst_episode_ns":
		return &r.WorstEpisodeNs
	case "worst_episode_start_s":
		return &r.WorstEpisodeAt
	case "blocked_share":
		return &r.BlockedShare
	case "sync_p99_ns":
		return &r.SyncP99Ns
	case "faults_per_sec":
		return &r.FaultsPerSec
	case "gpu_faults":
		return &r.GPUFaults
	case "cpu_faults":
		return &r.CPUFaults
	case "migrated_bytes":
		return &r.MigratedBytes
	case "demand_migrated_bytes":
		return &r.DemandMigBytes
	case "step_p50_ns":
		return &r.StepP50Ns
	case "umtrace_version":
		return &r.UmtraceVersion
	case "result_schema_version":
		return &r.ResultSchemaVer
	}
	return nil
}

// ReadSummaryParquet reads a summary written by WriteSummaryParquet
// (SummarySchema: batch's summary.parquet) back into rows, in file order.
// Every value is kept exactly (strings byte for byte, floats bit for
// bit), so rows read back render the same summaries as the rows written.
// A file whose columns are not SummarySchema's is an error.
func ReadSummaryParquet(r parquet.ReaderAtSeeker) ([]SummaryRow, error) {
	tbl, err := pqarrow.ReadTable(context.Background(), r, parquet.NewReaderProperties(memory.DefaultAllocator), pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	want := SummarySchema.Fields()
	got := tbl.Schema().Fields()
	if len(got) != len(want) {
		return nil, fmt.Errorf("not a umtrace summary: %d columns, want %d", len(got), len(want))
	}
	for i, f := range want {
		if got[i].Name != f.Name || !arrow.TypeEqual(got[i].Type, f.Type) {
			return nil, fmt.Errorf("not a umtrace summary: column %d is %s %s, want %s %s", i, got[i].Name, got[i].Type, f.Name, f.Type)
		}
	}
	rows := make([]SummaryRow, tbl.NumRows())
	for i, f := range want {
		k := 0
		for _, chunk := range tbl.Column(i).Data().Chunks() {
			for j := 0; j < chunk.Len(); j++ {
				if chunk.IsNull(j) {
					return nil, fmt.Errorf("not a umtrace summary: null %s in row %d", f.Name, k)
				}
				switch p := rows[k].field(f.Name).(type) {
				case *string:
					*p = strings.Clone(chunk.(*array.String).Value(j)) // the table is released
				case *int64:
					*p = chunk.(*array.Int64).Value(j)
				case *float64:
					*p = chunk.(*array.Float64).Value(j)
				}
				k++
			}
		}
	}
	return rows, nil
}
