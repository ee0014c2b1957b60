package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/gate"
)

// GateStatus is the gate's overall word: ERROR (an input could not be
// read), FAIL (a check failed), UNKNOWN (no check failed but one could
// not be decided, and unknowns are not allowed) or PASS.
func GateStatus(o *gate.Outcome) string {
	switch {
	case len(o.Errors) > 0:
		return "ERROR"
	case o.Failed() > 0:
		return "FAIL"
	case o.Blocking() > 0:
		return "UNKNOWN"
	}
	return "PASS"
}

func gateResult(c gate.Check, allowUnknown bool) Inline {
	switch c.Status {
	case gate.Pass:
		return T("pass")
	case gate.Unknown:
		if allowUnknown {
			return T("unknown (allowed)")
		}
		return B("UNKNOWN")
	}
	return B("FAIL")
}

// GateDoc is the gate's summary: the verdict, one table row per check,
// the reasons of failed and unknown checks, a chart of each value
// against its limit (HTML), the inputs that could not be analyzed, and
// the thresholds in effect. baseline is the baseline's id, "" without
// one.
func GateDoc(o *gate.Outcome, th gate.Thresholds, baseline string) *Doc {
	status := GateStatus(o)
	d := &Doc{Title: "umtrace gate: " + status}
	d.h(1, T("umtrace gate: "+status))
	line := fmt.Sprintf("%d checks, %d failed, %d unknown", len(o.Checks), o.Failed(), o.Unknown())
	if o.Unknown() > 0 {
		if o.AllowUnknown {
			line += " (allowed by --allow-unknown)"
		} else {
			line += " (unknown fails the gate; --allow-unknown accepts it)"
		}
	}
	p := Para{Text: Tf("%s, %d inputs with errors.", line, len(o.Errors))}
	if status != "PASS" {
		p.Class = "storm"
	}
	d.add(p)
	if len(o.Checks) > 0 {
		var rows [][]Inline
		var why []Inline
		seen := map[string]bool{}
		for _, c := range o.Checks {
			rows = append(rows, []Inline{T(c.Trace), T(c.Name), T(c.ValueText()), T(c.LimitText()), gateResult(c, o.AllowUnknown)})
			if w := c.Trace + ": " + c.Detail; c.Detail != "" && !seen[w] {
				seen[w] = true // a limit and its baseline check can be unknown for the same reason
				why = append(why, T(w))
			}
		}
		d.add(Table{Head: []string{"trace", "check", "value", "limit", "result"}, Align: []Align{Left, Left, Right, Right, Left}, Rows: rows})
		if len(why) > 0 {
			d.add(List{why})
		}
		d.add(gateChart(o))
	}
	if len(o.Errors) > 0 {
		var items []Inline
		for _, e := range o.Errors {
			items = append(items, Cat(B("error"), T(" "+e.Trace+": "+e.Detail)))
		}
		d.add(List{items})
	}
	tl := Tf("Thresholds: %s", FormatThresholds(th))
	if baseline != "" {
		tl = Cat(tl, T("; baseline "+baseline))
	}
	d.p(tl, T("."))
	return d
}

// Gate chart: each check's value as a multiple of its limit, on a log
// axis from 1/100 to 100 times the limit (the checks' units differ; the
// ratio is what decides).
const (
	gateLo, gateHi = 1e-2, 1e2
	maxGateRows    = 80
)

func gateChart(o *gate.Outcome) Chart {
	n := min(len(o.Checks), maxGateRows)
	const rh = 20.0
	left := 420.0
	w := chartW - left - 200
	s := newSVG("gate-checks", "Gate checks: value against limit", chartW, legendH+float64(n)*rh+axisH)
	s.legend(left, 14, [][2]string{{"pass", colMig}, {"fail", colGPU}, {"unknown", colCPU}})
	x := func(ratio float64) float64 {
		r := math.Min(math.Max(ratio, gateLo), gateHi)
		return left + w*(math.Log10(r)-math.Log10(gateLo))/(math.Log10(gateHi)-math.Log10(gateLo))
	}
	y := legendH + 2
	for _, c := range o.Checks[:n] {
		col := colMig
		switch c.Status {
		case gate.Fail:
			col = colGPU
		case gate.Unknown:
			col = colCPU
		}
		var ratio float64
		switch {
		case c.Limit > 0:
			ratio = c.Value / c.Limit
		case c.Value > 0:
			ratio = gateHi // any value above a zero limit
		}
		s.text(left-8, y+rh-6, "end", "#222", short(c.Trace, 20)+" · "+short(c.Name, 44), "")
		bw := x(ratio) - left
		if c.Value <= 0 {
			bw = 2
		}
		extra := ` class="gate-bar"`
		if c.Status == gate.Unknown {
			extra = ` class="gate-bar" fill-opacity="0.55"`
		}
		s.rect(left, y+3, math.Max(bw, 2), rh-6, col, extra)
		s.text(left+math.Max(bw, 2)+6, y+rh-6, "start", "#444", c.ValueText()+" / "+c.Format(c.Limit), ` font-size="10"`)
		y += rh
	}
	s.line(left, legendH, left, y, colAxis, 0.8, "")
	s.line(x(1), legendH, x(1), y, colAxis, 1.2, ` stroke-dasharray="4,3" class="limit"`)
	for _, v := range []float64{0.01, 0.1, 1, 10, 100} {
		lbl := "limit"
		if v != 1 {
			lbl = strconv.FormatFloat(v, 'g', -1, 64) + "×"
		}
		s.text(x(v), y+14, "middle", "#555", lbl, ` font-size="10"`)
	}
	s.text(left+w, y+28, "end", "#555", "value / limit (log scale)", "")
	caption := "Each check's value as a multiple of its limit (log scale, clipped at 1/100 and 100×); right of the dashed line fails."
	if len(o.Checks) > n {
		caption += fmt.Sprintf(" The first %d of %d checks.", n, len(o.Checks))
	}
	return Chart{ID: "gate-checks", Caption: caption, SVG: s.String()}
}

// FormatThresholds lists the thresholds in effect, for reports.
func FormatThresholds(t gate.Thresholds) string {
	f := func(v float64, s string) string {
		if v < 0 {
			return "off"
		}
		return s
	}
	return fmt.Sprintf("max-fault-rate=%s max-fault-latency-per-page=%s max-storm-share=%s max-sync-p99=%s max-regression=%s",
		f(t.MaxFaultRate, strconv.FormatFloat(t.MaxFaultRate, 'g', -1, 64)),
		f(t.MaxFaultNsPerPage, analyze.FormatNs(t.MaxFaultNsPerPage)),
		f(t.MaxStormShare, strconv.FormatFloat(100*t.MaxStormShare, 'g', -1, 64)+"%"),
		f(t.MaxSyncP99Ns, analyze.FormatNs(t.MaxSyncP99Ns)),
		f(t.MaxRegression, strconv.FormatFloat(100*t.MaxRegression, 'g', -1, 64)+"%"))
}

type gateCheckJSON struct {
	Trace     string   `json:"trace"`
	Name      string   `json:"check"`
	Metric    string   `json:"metric"`
	Kind      string   `json:"kind"`
	Unit      string   `json:"unit"`
	Value     float64  `json:"value"`
	Limit     float64  `json:"limit"`
	Baseline  *float64 `json:"baseline_value"`
	Growth    *float64 `json:"max_regression"`
	Status    string   `json:"status"`
	Pass      bool     `json:"pass"`
	ValueText string   `json:"value_text"`
	LimitText string   `json:"limit_text"`
	Detail    string   `json:"detail"`
}

type gateErrorJSON struct {
	Trace  string `json:"trace"`
	Detail string `json:"detail"`
}

type gateThresholdsJSON struct {
	MaxFaultRate      *float64 `json:"max_fault_rate"`
	MaxFaultNsPerPage *float64 `json:"max_fault_latency_per_page_ns"`
	MaxStormShare     *float64 `json:"max_storm_share"`
	MaxSyncP99Ns      *float64 `json:"max_sync_p99_ns"`
	MaxRegression     *float64 `json:"max_regression"`
}

// GateJSONSchemaVersion is the gate document's schema_version: 2 since
// checks carry numbers (value, limit, unit, status) and thresholds are
// an object of numbers (1 had printed strings only).
const GateJSONSchemaVersion = 2

// GateDocument is gate's JSON document (docs/schema/gate.schema.json).
type GateDocument struct {
	SchemaVersion int                `json:"schema_version"`
	Status        string             `json:"status"`
	Failed        int                `json:"failed"`
	Unknown       int                `json:"unknown"`
	AllowUnknown  bool               `json:"allow_unknown"`
	Checks        []gateCheckJSON    `json:"checks"`
	Errors        []gateErrorJSON    `json:"errors"`
	Thresholds    gateThresholdsJSON `json:"thresholds"`
	ThresholdText string             `json:"thresholds_text"`
	Baseline      string             `json:"baseline"`
}

// WriteGateJSON writes the gate's outcome as JSON (sorted keys,
// versioned): per check the numbers (value, limit, unit, status) and
// their printed forms; thresholds as numbers, null when off.
func WriteGateJSON(w io.Writer, o *gate.Outcome, th gate.Thresholds, baseline string) error {
	checks := []gateCheckJSON{}
	for _, c := range o.Checks {
		j := gateCheckJSON{Trace: c.Trace, Name: c.Name, Metric: c.Metric, Kind: c.Kind, Unit: c.Unit, Value: c.Value, Limit: c.Limit,
			Status: string(c.Status), Pass: c.Passed(), ValueText: c.ValueText(), LimitText: c.LimitText(), Detail: c.Detail}
		if c.Kind == "baseline" {
			b, g := c.Baseline, c.Growth
			j.Baseline, j.Growth = &b, &g
		}
		checks = append(checks, j)
	}
	errs := []gateErrorJSON{}
	for _, e := range o.Errors {
		errs = append(errs, gateErrorJSON{e.Trace, e.Detail})
	}
	num := func(v float64) *float64 {
		if v < 0 {
			return nil
		}
		return &v
	}
	return EncodeJSON(w, GateDocument{GateJSONSchemaVersion, GateStatus(o), o.Failed(), o.Unknown(), o.AllowUnknown, checks, errs,
		gateThresholdsJSON{num(th.MaxFaultRate), num(th.MaxFaultNsPerPage), num(th.MaxStormShare), num(th.MaxSyncP99Ns), num(th.MaxRegression)},
		FormatThresholds(th), baseline})
}

// JUnit XML types (the schema Jenkins, GitLab and GitHub reporters read).
type (
	JUnitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Suites   []JUnitSuite `xml:"testsuite"`
	}
	JUnitSuite struct {
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Errors   int         `xml:"errors,attr"`
		Skipped  int         `xml:"skipped,attr,omitempty"`
		Cases    []JUnitCase `xml:"testcase"`
	}
	JUnitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Failure   *JUnitProblem `xml:"failure,omitempty"`
		Error     *JUnitProblem `xml:"error,omitempty"`
		Skipped   *JUnitSkipped `xml:"skipped,omitempty"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	JUnitSkipped struct {
		Message string `xml:"message,attr"`
	}
	JUnitProblem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

// JUnit builds the JUnit document: one suite per trace, one test case per
// check (a failure for a failed check, and for an unknown one unless
// unknowns are allowed, when it is skipped; an "analyze" case with an
// error for traces that could not be read). Strings are made visible (XML 1.0 cannot hold control
// characters); encoding/xml escapes the rest.
func JUnit(o *gate.Outcome) JUnitSuites {
	doc := JUnitSuites{Name: "umtrace gate"}
	idx := map[string]int{}
	suite := func(trace string) *JUnitSuite {
		i, ok := idx[trace]
		if !ok {
			i = len(doc.Suites)
			idx[trace] = i
			doc.Suites = append(doc.Suites, JUnitSuite{Name: "umtrace gate: " + Visible(trace)})
		}
		return &doc.Suites[i]
	}
	for _, c := range o.Checks {
		s := suite(c.Trace)
		tc := JUnitCase{Name: Visible(c.Name), Classname: "umtrace.gate." + Visible(c.Trace), SystemOut: Visible(fmt.Sprintf("value %s, limit %s", c.ValueText(), c.LimitText()))}
		switch {
		case c.Status == gate.Fail:
			tc.Failure = &JUnitProblem{Message: Visible(c.Detail), Type: "threshold", Text: Visible(c.Detail)}
			s.Failures++
		case c.Status == gate.Unknown && !o.AllowUnknown:
			tc.Failure = &JUnitProblem{Message: Visible(c.Detail), Type: "unknown", Text: Visible(c.Detail)}
			s.Failures++
		case c.Status == gate.Unknown:
			tc.Skipped = &JUnitSkipped{Message: Visible(c.Detail)}
			s.Skipped++
		}
		s.Tests++
		s.Cases = append(s.Cases, tc)
	}
	for _, e := range o.Errors {
		s := suite(e.Trace)
		s.Tests++
		s.Errors++
		s.Cases = append(s.Cases, JUnitCase{Name: "analyze", Classname: "umtrace.gate." + Visible(e.Trace),
			Error: &JUnitProblem{Message: Visible(e.Detail), Type: "bad_input", Text: Visible(e.Detail)}})
	}
	for _, s := range doc.Suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
	}
	return doc
}

// WriteGateJUnit writes the JUnit XML document.
func WriteGateJUnit(w io.Writer, o *gate.Outcome) error {
	data, err := xml.MarshalIndent(JUnit(o), "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", xml.Header, data)
	return err
}
