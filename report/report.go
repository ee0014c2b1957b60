// Package report renders an analyze.Result as a terminal summary, a
// markdown incident report, JSON or HTML. Output depends only on the
// Result, so the same trace always gives byte-identical reports.
package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/umtrace/umtrace/analyze"
)

// Formats lists the supported output formats.
var Formats = []string{"text", "md", "json", "html"}

// Generate writes res to w in the given format. Text, markdown and HTML are
// rendered into a buffer first, so w receives nothing on error; JSON is
// streamed (it can be large), and fails only if w does.
func Generate(w io.Writer, res *analyze.Result, format string) error {
	switch format {
	case "text", "":
		return Render(w, TerminalDoc(res), "text")
	case "md", "markdown", "html":
		return Render(w, AnalyzeDoc(res), format)
	case "json":
		// Streamed straight to w: JSON for a long trace is large.
		return EncodeJSON(w, NewTraceDocument(res))
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

// ms formats ns as milliseconds with 3 decimals.
func ms(ns float64) string { return fmt.Sprintf("%.3f", ns/1e6) }

func msI(ns int64) string { return ms(float64(ns)) }

// sec formats a trace time as seconds from the trace start.
func sec(ns, start int64) string { return fmt.Sprintf("%.3f s", float64(ns-start)/1e9) }

// secDur formats a duration as seconds with 3 decimals (no unit).
func secDur(ns int64) string { return fmt.Sprintf("%.3f", float64(ns)/1e9) }

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func verdictWord(v string) string {
	switch v {
	case analyze.VerdictStorm:
		return "STORM"
	case analyze.VerdictNoStorm:
		return "no storm"
	}
	return "insufficient data"
}

// demandBytes sums the fault-driven migrations of ms.
func demandBytes(ms []analyze.MigrationAgg) int64 {
	var b int64
	for _, m := range ms {
		if analyze.DemandCause(m.Cause) {
			b += m.Bytes
		}
	}
	return b
}

func stepsCovered(e analyze.Episode) string {
	if e.FirstStep < 0 {
		return "–"
	}
	if e.FirstStep == e.LastStep {
		return fmt.Sprint(e.FirstStep)
	}
	return fmt.Sprintf("%d–%d", e.FirstStep, e.LastStep)
}
