package report

import (
	"encoding/csv"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/internal/pqfile"
)

// VerdictError is the verdict of a row whose trace could not be analyzed.
const VerdictError = "error"

// SummaryRow is one trace's line in a summary. Times are ns, sizes bytes.
type SummaryRow struct {
	Trace           string  `json:"trace"` // trace id
	File            string  `json:"file"`  // base name of the file
	SHA256          string  `json:"sha256"`
	Verdict         string  `json:"verdict"`
	Reason          string  `json:"reason"` // verdict reason, or the error for VerdictError
	DurationNs      int64   `json:"duration_ns"`
	StormTimeNs     int64   `json:"storm_time_ns"`
	StormShare      float64 `json:"storm_share"`
	Episodes        int64   `json:"episodes"`
	WorstEpisodeNs  int64   `json:"worst_episode_ns"`      // longest storm episode, 0 without
	WorstEpisodeAt  float64 `json:"worst_episode_start_s"` // its start, seconds from the trace start
	BlockedShare    float64 `json:"blocked_share"`
	SyncP99Ns       float64 `json:"sync_p99_ns"`
	FaultsPerSec    float64 `json:"faults_per_sec"`
	GPUFaults       int64   `json:"gpu_faults"`
	CPUFaults       int64   `json:"cpu_faults"`
	MigratedBytes   int64   `json:"migrated_bytes"`
	DemandMigBytes  int64   `json:"demand_migrated_bytes"`
	StepP50Ns       float64 `json:"step_p50_ns"`
	UmtraceVersion  string  `json:"umtrace_version"`
	ResultSchemaVer int64   `json:"result_schema_version"`
}

// SummaryRowFromResult builds a summary row from an analysis.
func SummaryRowFromResult(id, file, sha, version string, res *analyze.Result) SummaryRow {
	r := SummaryRow{
		Trace: id, File: file, SHA256: sha, Verdict: res.Verdict, Reason: res.Reason,
		DurationNs:      res.Trace.DurationNs,
		StormTimeNs:     res.Headline.StormTimeNs,
		StormShare:      res.Headline.StormShare,
		Episodes:        int64(len(res.Episodes)),
		BlockedShare:    res.Headline.BlockedShare,
		SyncP99Ns:       res.Headline.SyncP99Ns,
		FaultsPerSec:    res.Headline.FaultsPerSec,
		GPUFaults:       res.Headline.GPUFaults,
		CPUFaults:       res.Headline.CPUFaults,
		MigratedBytes:   res.Headline.MigratedBytes,
		DemandMigBytes:  res.Headline.DemandMigBytes,
		StepP50Ns:       res.Headline.StepP50Ns,
		UmtraceVersion:  version,
		ResultSchemaVer: analyze.SchemaVersion,
	}
	for _, e := range res.Episodes {
		if e.DurationNs > r.WorstEpisodeNs {
			r.WorstEpisodeNs, r.WorstEpisodeAt = e.DurationNs, math.Round(float64(e.StartNs-res.Trace.StartNs)/1e6)/1e3
		}
	}
	return r
}

// severity ranks verdicts: lower sorts first.
func severity(v string) int {
	switch v {
	case analyze.VerdictStorm:
		return 0
	case analyze.VerdictInsufficient:
		return 1
	case analyze.VerdictNoStorm:
		return 2
	case VerdictError:
		return 4
	}
	return 3
}

// SortSummaryRows orders rows by severity: storms first (longest storm time
// first), then insufficient_data, then no_storm, then errors; ties by
// trace id.
func SortSummaryRows(rows []SummaryRow) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if sa, sb := severity(a.Verdict), severity(b.Verdict); sa != sb {
			return sa < sb
		}
		if a.StormTimeNs != b.StormTimeNs {
			return a.StormTimeNs > b.StormTimeNs
		}
		return a.Trace < b.Trace
	})
}

// WriteSummaryCSV writes the summary as CSV: one row per trace, failures
// included with verdict "error" and the reason; the columns are the
// summary schema's (SummaryColumnDocs), as in summary.parquet and the
// export's summary table. A text cell that a spreadsheet would run as a
// formula is neutralized (CSVText); a value the trace does not have (every
// figure of a failed trace, the step time without steps, the worst
// episode without episodes) is an empty cell, not 0.
func WriteSummaryCSV(w io.Writer, rows []SummaryRow) error {
	cw := csv.NewWriter(w)
	var head []string
	for _, d := range SummaryColumnDocs {
		head = append(head, d[0])
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, r := range rows {
		vals := r.values()
		rec := make([]string, len(head))
		for i, h := range head {
			if r.missing(h) {
				continue
			}
			switch v := vals[h].(type) {
			case string:
				rec[i] = CSVText(v)
			case int64:
				rec[i] = strconv.FormatInt(v, 10)
			case float64:
				rec[i] = strconv.FormatFloat(v, 'f', -1, 64)
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// missing reports whether column h has no value for r: every figure of
// a failed trace, the step time of a trace without NVTX steps, the worst
// episode of a trace without episodes. Text columns are never missing.
func (r SummaryRow) missing(h string) bool {
	switch h {
	case "trace_id", "file", "sha256", "verdict", "reason", "umtrace_version":
		return false
	}
	switch {
	case r.Verdict == VerdictError:
		return true
	case h == "step_p50_ns":
		return r.StepP50Ns == 0
	case h == "worst_episode_ns", h == "worst_episode_start_s":
		return r.Episodes == 0
	}
	return false
}

// CSVText is a CSV text cell for s: its control characters made visible
// (Visible) and, when s or that starts with =, +, -, @, TAB or CR, a
// leading single quote, so a spreadsheet shows it as text instead of
// running it as a formula (OWASP "CSV injection"). Numbers are written as
// numbers, so a negative figure stays one.
func CSVText(s string) string {
	v := Visible(s)
	if formulaStart(s) || formulaStart(v) {
		return "'" + v
	}
	return v
}

func formulaStart(s string) bool {
	return s != "" && strings.IndexByte("=+-@\t\r", s[0]) >= 0
}

// SummarySchema is the Arrow schema of the Parquet summary (and of the
// export's summary table). The trace id is a column here; in an export
// it is the Hive partition key instead (see SummarySchemaNoID).
var SummarySchema = summarySchema(true)

// SummarySchemaNoID is SummarySchema without the trace column.
var SummarySchemaNoID = summarySchema(false)

// SummaryColumnDocs documents each summary column, in schema order.
var SummaryColumnDocs = [][2]string{
	{"trace_id", "trace id (file base name, sanitized; plus a hash prefix when names clash)"},
	{"verdict", "storm, insufficient_data, no_storm, or error"},
	{"storm_time_ns", "time covered by storm episodes"},
	{"storm_share", "storm time / trace duration"},
	{"episodes", "storm episodes"},
	{"worst_episode_ns", "duration of the longest storm episode (0 without; an empty cell in CSV)"},
	{"worst_episode_start_s", "its start, seconds from the trace start (0 without; an empty cell in CSV)"},
	{"duration_ns", "trace duration"},
	{"blocked_share", "host-blocking time / trace duration"},
	{"sync_p99_ns", "P99 of host-blocking call durations"},
	{"faults_per_sec", "UM page faults (GPU + CPU) per second"},
	{"gpu_faults", "GPU page faults"},
	{"cpu_faults", "CPU page faults"},
	{"migrated_bytes", "UM bytes migrated"},
	{"demand_migrated_bytes", "UM bytes migrated by faults (page fault, speculative prefetch, eviction)"},
	{"step_p50_ns", "median step time (0 without NVTX steps; an empty cell in CSV)"},
	{"file", "file base name"},
	{"sha256", "SHA-256 of the file's content"},
	{"umtrace_version", "umtrace version that analyzed the trace"},
	{"result_schema_version", "analyze JSON schema version"},
	{"reason", "why the verdict, or the error"},
}

func summarySchema(withID bool) *arrow.Schema {
	var fields []arrow.Field
	for _, d := range SummaryColumnDocs {
		var t arrow.DataType
		switch d[0] {
		case "trace_id", "file", "sha256", "verdict", "reason", "umtrace_version":
			t = arrow.BinaryTypes.String
		case "storm_share", "blocked_share", "sync_p99_ns", "faults_per_sec", "step_p50_ns", "worst_episode_start_s":
			t = arrow.PrimitiveTypes.Float64
		default:
			t = arrow.PrimitiveTypes.Int64
		}
		if d[0] == "trace_id" && !withID {
			continue
		}
		fields = append(fields, arrow.Field{Name: d[0], Type: t})
	}
	return arrow.NewSchema(fields, nil)
}

// values maps the summary's column names to r's values.
func (r SummaryRow) values() map[string]any {
	return map[string]any{
		"trace_id": r.Trace, "file": r.File, "sha256": r.SHA256, "verdict": r.Verdict, "reason": r.Reason,
		"duration_ns": r.DurationNs, "storm_time_ns": r.StormTimeNs, "storm_share": r.StormShare,
		"episodes": r.Episodes, "worst_episode_ns": r.WorstEpisodeNs, "worst_episode_start_s": r.WorstEpisodeAt,
		"blocked_share": r.BlockedShare, "sync_p99_ns": r.SyncP99Ns, "faults_per_sec": r.FaultsPerSec,
		"gpu_faults": r.GPUFaults, "cpu_faults": r.CPUFaults, "migrated_bytes": r.MigratedBytes,
		"demand_migrated_bytes": r.DemandMigBytes, "step_p50_ns": r.StepP50Ns,
		"umtrace_version": r.UmtraceVersion, "result_schema_version": r.ResultSchemaVer,
	}
}

// Record returns rows as an Arrow record of schema (SummarySchema or
// SummarySchemaNoID). The caller releases it.
func SummaryRecord(mem memory.Allocator, schema *arrow.Schema, rows []SummaryRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, r := range rows {
		vals := r.values()
		for i, f := range schema.Fields() {
			switch fb := b.Field(i).(type) {
			case *array.StringBuilder:
				fb.Append(vals[f.Name].(string))
			case *array.Float64Builder:
				fb.Append(vals[f.Name].(float64))
			case *array.Int64Builder:
				fb.Append(vals[f.Name].(int64))
			}
		}
	}
	return b.NewRecordBatch()
}

// WriteParquet writes rec as one Parquet file (internal/pqfile: Snappy,
// strings dictionary-encoded, created by "umtrace", so the same rows make
// the same bytes in every build).
func WriteParquet(w io.Writer, rec arrow.RecordBatch) error {
	pw, err := pqfile.NewWriter(w, rec.Schema(), "umtrace")
	if err != nil {
		return err
	}
	if err := pw.Write(rec); err != nil {
		return err
	}
	return pw.Close()
}

// WriteSummaryParquet writes rows (with the trace column) as Parquet.
func WriteSummaryParquet(w io.Writer, rows []SummaryRow) error {
	rec := SummaryRecord(memory.DefaultAllocator, SummarySchema, rows)
	defer rec.Release()
	return WriteParquet(w, rec)
}
