package report

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/compare"
)

// JSONSchemaVersion is the schema_version of the diff, gate, batch
// summary and sanitizer JSON documents (docs/json.md).
const JSONSchemaVersion = 1

// DiffDocument is diff's JSON document (docs/schema/diff.schema.json).
type DiffDocument struct {
	SchemaVersion int `json:"schema_version"`
	compare.Diff
}

// WriteDiffJSON writes the comparison as JSON (sorted keys, versioned).
func WriteDiffJSON(w io.Writer, d *compare.Diff) error {
	return EncodeJSON(w, DiffDocument{JSONSchemaVersion, *d})
}

// diffValue formats a metric value in its unit.
func diffValue(unit string, v *float64) string {
	if v == nil {
		return "—"
	}
	x := *v
	switch unit {
	case "ns":
		if x < 0 {
			return "-" + analyze.FormatNs(-x)
		}
		return analyze.FormatNs(x)
	case "share":
		return strconv.FormatFloat(100*x, 'f', 1, 64) + "%"
	case "bytes":
		if x < 0 {
			return "-" + analyze.FormatBytes(int64(-x))
		}
		return analyze.FormatBytes(int64(x))
	case "per_sec":
		return strconv.FormatFloat(x, 'f', 1, 64) + "/s"
	}
	return strconv.FormatFloat(x, 'f', 0, 64)
}

func diffChange(r compare.Row) string {
	if r.Change == nil {
		return "—"
	}
	change := diffValue(r.Unit, r.Change)
	if r.Unit == "share" {
		change = strconv.FormatFloat(100**r.Change, 'f', 1, 64) + " pp"
	}
	if *r.Change > 0 {
		change = "+" + change
	}
	if r.RelChange != nil {
		change += fmt.Sprintf(" (%+.1f%%)", 100**r.RelChange)
	}
	return change
}

// FormatP prints a p-value with 3 significant digits, and "p<0.001"
// below that: a p of 1e-300 says no more than one of 1e-4, and "p=0"
// claims a certainty no test gives.
func FormatP(p float64) string {
	if p < 0.001 {
		return "p<0.001"
	}
	return "p=" + strconv.FormatFloat(p, 'g', 3, 64)
}

// diffSignificance is a row's significance cell: the test, its p-value
// and effect size or interval, and the samples; or why it was not tested.
func diffSignificance(r compare.Row) string {
	switch {
	case r.P != nil && r.Test == "mann_whitney_u":
		return fmt.Sprintf("%s (MWU, δ=%+.2f, n=%d/%d)", FormatP(*r.P), *r.EffectSize, r.NBefore, r.NAfter)
	case r.P != nil && r.Test == "harrell_davis":
		return fmt.Sprintf("%s (HD, 95%% CI %s…%s, n=%d/%d)", FormatP(*r.P), diffSigned(r.Unit, r.CILow), diffSigned(r.Unit, r.CIHigh), r.NBefore, r.NAfter)
	case r.MinN > 0:
		return fmt.Sprintf("— (n=%d/%d: too few samples, needs %d a side)", r.NBefore, r.NAfter, r.MinN)
	case r.NBefore > 0 || r.NAfter > 0:
		return fmt.Sprintf("— (n=%d/%d, too few to test)", r.NBefore, r.NAfter)
	}
	return "— (single total)"
}

// diffSigned is a change in its unit with its sign.
func diffSigned(unit string, v *float64) string {
	s := diffValue(unit, v)
	if v != nil && *v > 0 {
		s = "+" + s
	}
	return s
}

// DiffDoc is the comparison report. before and after, when not nil, are
// the two analyses: their latency and step-time distributions are
// charted.
func DiffDoc(d *compare.Diff, before, after *analyze.Result) *Doc {
	doc := &Doc{Title: "umtrace diff: " + d.Before + " → " + d.After}
	doc.h(1, Cat(T("umtrace diff: "), C(d.Before), T(" → "), C(d.After)))
	doc.p(B(d.Overall), T(" ("+d.Reason+")."))
	var rows [][]Inline
	for _, r := range d.Rows {
		sig := diffSignificance(r)
		verdict := T(r.Verdict)
		if r.Verdict == "improved" || r.Verdict == "regressed" {
			verdict = B(r.Verdict)
		}
		rows = append(rows, []Inline{T(r.Metric), T(diffValue(r.Unit, r.Before)), T(diffValue(r.Unit, r.After)), T(diffChange(r)), T(sig), verdict})
	}
	if c, ok := diffChangeChart(d); ok {
		doc.add(c)
	}
	doc.add(Table{Head: []string{"metric", "before", "after", "change", "significance", "verdict"}, Align: []Align{Left, Right, Right, Right, Left, Left}, Rows: rows})
	doc.p(T("Significance: " + d.Method + ". Lower is better for every metric."))
	if before != nil && after != nil {
		sum := func(r *analyze.Result) histSeries {
			m := map[int]int64{}
			for _, h := range r.Charts.SyncHistograms {
				for i, c := range h.Counts {
					m[h.FirstBucket+i] += c
				}
			}
			return seriesOf("", m)
		}
		b, a := sum(before), sum(after)
		b.name, b.col = "before: "+d.Before, colBefore
		a.name, a.col = "after: "+d.After, colAfter
		if len(b.counts) > 0 || len(a.counts) > 0 {
			doc.h(2, T("Host-blocking call latency, before and after"))
			doc.add(histOverlay("diff-sync", "Host-blocking call latency (all APIs), share of calls per log bucket", []histSeries{b, a}))
		}
		steps := func(r *analyze.Result) histSeries {
			m := map[int]int64{}
			for _, s := range r.Steps.Rows {
				if s.Warmup {
					continue
				}
				m[analyzeBucket(s.DurationNs)]++
			}
			return seriesOf("", m)
		}
		if len(before.Steps.Rows) > 0 && len(after.Steps.Rows) > 0 {
			b, a := steps(before), steps(after)
			b.name, b.col = "before: "+d.Before, colBefore
			a.name, a.col = "after: "+d.After, colAfter
			doc.h(2, T("Step time, before and after"))
			doc.add(histOverlay("diff-steps", "Step time, share of steps per log bucket", []histSeries{b, a}))
		}
	}
	return doc
}

// analyzeBucket is analyze's latency bucket of a duration.
func analyzeBucket(ns int64) int {
	return int(math.Floor(analyze.HistBucketsPerDecade * math.Log10(float64(max(ns, 1)))))
}

type histSeries struct {
	name   string
	col    string
	first  int
	counts []int64
}

func seriesOf(name string, m map[int]int64) histSeries {
	s := histSeries{name: name}
	lo, hi := math.MaxInt, math.MinInt
	for k := range m {
		lo, hi = min(lo, k), max(hi, k)
	}
	if len(m) == 0 {
		return s
	}
	s.first = lo
	s.counts = make([]int64, hi-lo+1)
	for k, c := range m {
		s.counts[k-lo] = c
	}
	return s
}

// histOverlay draws histograms of the same log buckets as outlined step
// curves, each normalized to its total (share per bucket).
func histOverlay(id, title string, series []histSeries) Chart {
	per := analyze.HistBucketsPerDecade
	lo, hi := math.MaxInt, math.MinInt
	var mx float64
	for _, s := range series {
		var tot int64
		for _, c := range s.counts {
			tot += c
		}
		if len(s.counts) > 0 {
			lo, hi = min(lo, s.first), max(hi, s.first+len(s.counts))
		}
		for _, c := range s.counts {
			mx = max(mx, float64(c)/float64(tot))
		}
	}
	if lo > hi {
		lo, hi = 0, 2*per
	}
	lo = int(math.Floor(float64(lo)/float64(per))) * per
	hi = int(math.Ceil(float64(hi)/float64(per))) * per
	if hi-lo < 2*per {
		hi = lo + 2*per
	}
	const ph = 170.0
	s := newSVG(id, title, chartW, legendH+ph+axisH+8)
	var leg [][2]string
	for _, se := range series {
		leg = append(leg, [2]string{se.name, se.col})
	}
	s.legend(marginL, 14, leg)
	py := legendH + 8
	x := func(b int) float64 { return marginL + plotW*float64(b-lo)/float64(hi-lo) }
	y := func(v float64) float64 { return py + ph - ph*v/math.Max(mx, 1e-9) }
	for dd := lo; dd <= hi; dd += per {
		s.line(x(dd), py, x(dd), py+ph, colGrid, 0.6, "")
		s.text(x(dd), py+ph+15, "middle", "#333", fmtDurAxis(math.Pow(10, float64(dd/per))), "")
	}
	s.line(marginL, py+ph, marginL+plotW, py+ph, colAxis, 0.8, "")
	s.text(marginL-6, y(mx)+4, "end", "#555", strconv.FormatFloat(100*mx, 'f', 0, 64)+"%", "")
	s.text(marginL-6, py+ph+4, "end", "#555", "0%", "")
	for _, se := range series {
		var tot int64
		for _, c := range se.counts {
			tot += c
		}
		if tot == 0 {
			continue
		}
		pts := [][2]float64{{x(se.first), y(0)}}
		for i, c := range se.counts {
			v := float64(c) / float64(tot)
			pts = append(pts, [2]float64{x(se.first + i), y(v)}, [2]float64{x(se.first + i + 1), y(v)})
		}
		pts = append(pts, [2]float64{x(se.first + len(se.counts)), y(0)})
		s.path(pts, se.col, se.col, 1.6, ` fill-opacity="0.22"`)
	}
	return Chart{ID: id, Caption: title + " (10 buckets per decade).", SVG: s.String()}
}

// diffChangeChart draws each row's relative change as a bar: left of
// zero is lower (better), right is higher (worse).
func diffChangeChart(d *compare.Diff) (Chart, bool) {
	var rows []compare.Row
	for _, r := range d.Rows {
		if r.RelChange != nil {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return Chart{}, false
	}
	const rh = 18.0
	left := 300.0
	w := chartW - left - marginR
	s := newSVG("diff-change", "Relative change per metric", chartW, legendH+float64(len(rows))*rh+axisH)
	s.legend(left, 14, [][2]string{{"improved", colMig}, {"regressed", colGPU}, {"unchanged / untested", colBefore}})
	lim := 1.0
	for _, r := range rows {
		lim = max(lim, math.Min(math.Abs(*r.RelChange), 4))
	}
	x := func(v float64) float64 { return left + w/2 + w/2*math.Max(-1, math.Min(1, v/lim)) }
	y := legendH + 4
	for _, r := range rows {
		col := colBefore
		switch r.Verdict {
		case "improved":
			col = colMig
		case "regressed":
			col = colGPU
		}
		s.text(left-8, y+rh-5, "end", "#222", short(r.Metric, 44), "")
		v := *r.RelChange
		x0, x1 := x(0), x(v)
		s.rect(math.Min(x0, x1), y+3, math.Abs(x1-x0), rh-6, col, "")
		anchor, lx := "start", math.Max(x0, x1)+4
		if v < 0 {
			anchor, lx = "end", math.Min(x0, x1)-4
		}
		s.text(lx, y+rh-5, anchor, "#333", fmt.Sprintf("%+.1f%%", 100*v), ` font-size="10"`)
		y += rh
	}
	s.line(x(0), legendH, x(0), y, colAxis, 1, "")
	for _, v := range []float64{-lim, -lim / 2, lim / 2, lim} {
		s.text(x(v), y+14, "middle", "#555", fmt.Sprintf("%+.0f%%", 100*v), ` font-size="10"`)
	}
	s.text(x(0), y+14, "middle", "#555", "0", ` font-size="10"`)
	return Chart{ID: "diff-change", Caption: fmt.Sprintf("Relative change after − before, per metric (clipped at ±%.0f%%); lower is better.", 100*lim), SVG: s.String()}, true
}
