package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/compare"
	"github.com/umtrace/umtrace/analyze/gate"
	"github.com/umtrace/umtrace/analyze/multirank"
)

// Write is the one way every command writes a report: v is what to
// report, format one of the formats its kind has. Every JSON document goes
// through EncodeJSON with a schema_version and has a JSON Schema under
// docs/schema (docs/json.md):
//
//	*analyze.Result      analyze, one trace          text md html json   analyze.schema.json (kind trace)
//	*multirank.Result    analyze, a job              text md html json   analyze.schema.json (kind job)
//	*Separate            analyze, separate traces    text md html json   analyze.schema.json (kind separate)
//	Diff                 diff                        text md html json   diff.schema.json
//	Gate                 gate                        text md html json junit  gate.schema.json
//	Summary              batch summary               text md html json csv parquet  batch-summary.schema.json
//	Sanitizer            sanitizer                   text md html json   sanitizer.schema.json
//	Redact               redact --report             text json           redact-report.schema.json
//
// (synth's truth files and reproduce's steps.json are written by their
// packages with encoding/json; their schemas are synth-truth.schema.json and
// reproducer-steps.schema.json.)
//
// Text, markdown and HTML are rendered into a buffer first, so w receives
// nothing on error; the analyze JSON documents are streamed.
func Write(w io.Writer, v any, format string) error {
	switch x := v.(type) {
	case *analyze.Result:
		return Generate(w, x, format)
	case *multirank.Result:
		return GenerateJob(w, x, format)
	case *Separate:
		return GenerateSeparate(w, x, format)
	case Diff:
		if format == "json" {
			return WriteDiffJSON(w, x.Diff)
		}
		return renderAs(w, func() *Doc { return DiffDoc(x.Diff, x.Before, x.After) }, format)
	case Gate:
		switch format {
		case "json":
			return WriteGateJSON(w, x.Outcome, x.Thresholds, x.Baseline)
		case "junit":
			return WriteGateJUnit(w, x.Outcome)
		}
		return renderAs(w, func() *Doc { return GateDoc(x.Outcome, x.Thresholds, x.Baseline) }, format)
	case Summary:
		switch format {
		case "json":
			return WriteSummaryJSON(w, x.Title, x.Rows)
		case "csv":
			return WriteSummaryCSV(w, x.Rows)
		case "parquet":
			return WriteSummaryParquet(w, x.Rows)
		}
		return renderAs(w, func() *Doc { return BatchDoc(x.Title, x.Rows) }, format)
	case Sanitizer:
		if format == "json" {
			return WriteSanitizerJSON(w, x.Logs)
		}
		return renderAs(w, func() *Doc { return SanitizerDoc(x.Logs) }, format)
	case Redact:
		return writeRedact(w, x, format)
	}
	return fmt.Errorf("report.Write: nothing writes a %T", v)
}

// renderAs renders the document doc makes in a document format.
func renderAs(w io.Writer, doc func() *Doc, format string) error {
	switch format {
	case "text", "", "md", "markdown", "html":
		return Render(w, doc(), format)
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

// Diff is diff's report: the comparison and, when known, the two analyses
// (their distributions are charted).
type Diff struct {
	Diff          *compare.Diff
	Before, After *analyze.Result
}

// Gate is gate's report.
type Gate struct {
	Outcome    *gate.Outcome
	Thresholds gate.Thresholds
	Baseline   string // the baseline's id, "" without
}

// Summary is batch's summary.
type Summary struct {
	Title string
	Rows  []SummaryRow
}

// Sanitizer is sanitizer's report: one summary per log.
type Sanitizer struct{ Logs []SanitizerLogSummary }

// Redact is redact --report's report: what was replaced where, counts
// only (never the values).
type Redact struct {
	SchemaVersion     int                 `json:"schema_version"`
	Output            string              `json:"output"` // the redacted copy's base name
	EnvRowsDeleted    int                 `json:"env_rows_deleted"`
	EnvEntriesDropped int                 `json:"env_entries_dropped"`
	ValuesMasked      int                 `json:"values_masked"`
	Replaced          []RedactReplacement `json:"replaced"`
}

// RedactReplacement is one table column's replacements by one rule.
type RedactReplacement struct {
	Table  string `json:"table"`
	Column string `json:"column"`
	Rule   string `json:"rule"`
	Count  int    `json:"count"`
}

func writeRedact(w io.Writer, r Redact, format string) error {
	r.SchemaVersion = JSONSchemaVersion
	if r.Replaced == nil {
		r.Replaced = []RedactReplacement{}
	}
	switch format {
	case "json":
		return EncodeJSON(w, r)
	case "text", "":
		n := 0
		for _, x := range r.Replaced {
			n += x.Count
		}
		var b strings.Builder
		fmt.Fprintf(&b, "redact report for %s: %d replacements in %d places (counts only, never the values)\n", r.Output, n, len(r.Replaced))
		rows := [][]string{{"TABLE", "COLUMN", "RULE", "COUNT"}}
		for _, x := range r.Replaced {
			rows = append(rows, []string{x.Table, x.Column, x.Rule, fmt.Sprint(x.Count)})
		}
		width := make([]int, 4)
		for _, row := range rows {
			for i, c := range row {
				width[i] = max(width[i], len(c))
			}
		}
		for _, row := range rows {
			line := ""
			for i, c := range row {
				if i < len(row)-1 {
					line += c + strings.Repeat(" ", width[i]-len(c)+2)
				} else {
					line += c
				}
			}
			b.WriteString(line + "\n")
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	return fmt.Errorf("unknown format %q for the redact report (want text or json)", format)
}
