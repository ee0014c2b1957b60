package report

import (
	"fmt"
	"io"
	"math"

	"github.com/umtrace/umtrace/analyze"
)

// BatchDoc is the batch summary: the verdict counts, a severity chart,
// one table row per analyzed trace, then the failed inputs with their
// reasons. rows must be sorted (SortSummaryRows). The table's headers are
// the summary columns (summary.csv, summary.parquet, the export's summary
// table), with times and sizes written for people.
func BatchDoc(title string, rows []SummaryRow) *Doc {
	var ok, fails []SummaryRow
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.Verdict]++
		if r.Verdict == VerdictError {
			fails = append(fails, r)
		} else {
			ok = append(ok, r)
		}
	}
	d := &Doc{Title: title}
	d.h(1, T(title))
	d.p(Tf("%d traces: %d storm, %d insufficient_data, %d no_storm, %d failed.",
		len(rows), counts[analyze.VerdictStorm], counts[analyze.VerdictInsufficient], counts[analyze.VerdictNoStorm], counts[VerdictError]))
	if len(ok) > 0 {
		if c, ok := severityChart(ok); ok {
			d.add(c)
		}
		var trows [][]Inline
		for _, r := range ok {
			worst, at := "—", "—"
			if r.WorstEpisodeNs > 0 {
				worst, at = analyze.FormatNs(float64(r.WorstEpisodeNs)), fmt.Sprintf("%.3f s", r.WorstEpisodeAt)
			}
			trows = append(trows, Cells(r.Trace, r.Verdict, analyze.FormatNs(float64(r.StormTimeNs)), pct(r.StormShare), fmt.Sprint(r.Episodes),
				worst, at, analyze.FormatNs(r.SyncP99Ns), fmt.Sprintf("%.1f", r.FaultsPerSec), analyze.FormatBytes(r.MigratedBytes)))
		}
		d.add(Table{Head: []string{"trace", "verdict", "storm_time", "storm_share", "episodes", "worst_episode", "worst_episode_start_s", "sync_p99", "faults_per_sec", "migrated_bytes"},
			Align: []Align{Left, Left, Right, Right, Right, Right, Right, Right, Right, Right}, Rows: trows})
		d.p(T("Columns as in summary.csv, summary.parquet and the export's summary table (exact values there); times from the trace start in seconds, sizes in binary units (MiB, GiB)."))
	}
	if len(fails) > 0 {
		d.h(2, T("Failed inputs"))
		var frows [][]Inline
		for _, r := range fails {
			frows = append(frows, Cells(r.Trace, r.Reason))
		}
		d.add(Table{Head: []string{"trace", "reason"}, Rows: frows})
	}
	return d
}

// WriteSummaryJSON writes the batch summary rows as JSON (sorted keys,
// versioned).
func WriteSummaryJSON(w io.Writer, title string, rows []SummaryRow) error {
	if rows == nil {
		rows = []SummaryRow{}
	}
	return EncodeJSON(w, SummaryDocument{JSONSchemaVersion, title, rows})
}

// SummaryDocument is batch's summary.json (docs/schema/batch-summary.schema.json).
type SummaryDocument struct {
	SchemaVersion int          `json:"schema_version"`
	Title         string       `json:"title"`
	Rows          []SummaryRow `json:"rows"`
}

// maxSeverityRows is the most traces the severity chart lists.
const maxSeverityRows = 60

// severityChart draws each trace's storm share (bar) and fault rate
// (label), coloured by verdict, in severity order.
func severityChart(rows []SummaryRow) (Chart, bool) {
	if len(rows) == 0 {
		return Chart{}, false
	}
	n := min(len(rows), maxSeverityRows)
	const rh = 20.0
	left := 260.0
	w := chartW - left - 150
	s := newSVG("batch-severity", "Storm share per trace", chartW, legendH+float64(n)*rh+axisH)
	s.legend(left, 14, [][2]string{{"storm", colStorm}, {"insufficient data", colCPU}, {"no storm", colMig}})
	mx := 0.0
	for _, r := range rows[:n] {
		mx = math.Max(mx, r.StormShare)
	}
	mx = math.Max(niceStep(mx, 1), 0.05)
	y := legendH + 2
	for _, r := range rows[:n] {
		col := colMig
		switch r.Verdict {
		case analyze.VerdictStorm:
			col = colStorm
		case analyze.VerdictInsufficient:
			col = colCPU
		}
		s.text(left-8, y+rh-6, "end", "#222", short(r.Trace, 40), "")
		bw := w * r.StormShare / mx
		s.rect(left, y+3, math.Max(bw, 2), rh-6, col, ` class="sev"`)
		s.text(left+math.Max(bw, 2)+6, y+rh-6, "start", "#444", fmt.Sprintf("%s, %.0f faults/s", pct(r.StormShare), r.FaultsPerSec), ` font-size="10"`)
		y += rh
	}
	s.line(left, legendH, left, y, colAxis, 0.8, "")
	for _, v := range []float64{0, mx / 2, mx} {
		s.text(left+w*v/mx, y+14, "middle", "#555", pct(v), ` font-size="10"`)
	}
	s.text(left+w, y+28, "end", "#555", "storm time / trace duration", "")
	caption := "Severity across traces: storm share per trace, coloured by verdict, most severe first."
	if len(rows) > n {
		caption += fmt.Sprintf(" The first %d of %d traces.", n, len(rows))
	}
	return Chart{ID: "batch-severity", Caption: caption, SVG: s.String()}, true
}
