package report

import (
	"fmt"
	"io"

	"github.com/umtrace/umtrace/internal/pqfile"
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
func ReadSummaryParquet(r interface {
	io.ReaderAt
	io.Seeker
}) ([]SummaryRow, error) {
	size, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	f, err := pqfile.Open(r, size)
	if err != nil {
		return nil, err
	}
	want := SummarySchema.Fields()
	if len(f.Columns) != len(want) {
		return nil, fmt.Errorf("not a umtrace summary: %d columns, want %d", len(f.Columns), len(want))
	}
	for i, w := range want {
		if c := f.Columns[i]; c.Name != w.Name || c.Type != pqfile.TypeOf(w.Type) {
			return nil, fmt.Errorf("not a umtrace summary: column %d is %s %s, want %s %s", i, c.Name, c.Type, w.Name, pqfile.TypeOf(w.Type))
		}
	}
	if f.NumRows > maxSummaryRows {
		return nil, fmt.Errorf("not a umtrace summary: %d rows", f.NumRows)
	}
	rows := make([]SummaryRow, f.NumRows)
	for i, w := range want {
		v, err := f.Read(i)
		if err != nil {
			return nil, err
		}
		for k := range rows {
			if v.Null != nil && v.Null[k] {
				return nil, fmt.Errorf("not a umtrace summary: null %s in row %d", w.Name, k)
			}
			switch p := rows[k].field(w.Name).(type) {
			case *string:
				*p = v.Strings[k]
			case *int64:
				*p = v.Ints[k]
			case *float64:
				*p = v.Floats[k]
			}
		}
	}
	return rows, nil
}

// maxSummaryRows bounds the rows of a summary read (one per trace).
const maxSummaryRows = 1 << 24
