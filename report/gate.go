package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/gate"
)

// GateStatus is the gate's overall word: PASS, FAIL or ERROR.
func GateStatus(o *gate.Outcome) string {
	switch {
	case len(o.Errors) > 0:
		return "ERROR"
	case o.Failed() > 0:
		return "FAIL"
	}
	return "PASS"
}

// GateDoc is the gate's summary: the verdict, one table row per check,
// the inputs that could not be analyzed, and the thresholds in effect.
// baseline is the baseline's id, "" without one.
func GateDoc(o *gate.Outcome, th gate.Thresholds, baseline string) *Doc {
	status := GateStatus(o)
	d := &Doc{Title: "umtrace gate: " + status}
	d.h(1, T("umtrace gate: "+status))
	p := Para{Text: Tf("%d checks, %d failed, %d inputs with errors.", len(o.Checks), o.Failed(), len(o.Errors))}
	if status != "PASS" {
		p.Class = "storm"
	}
	d.add(p)
	if len(o.Checks) > 0 {
		var rows [][]Inline
		for _, c := range o.Checks {
			res := T("pass")
			if !c.Pass {
				res = B("FAIL")
			}
			rows = append(rows, []Inline{T(c.Trace), T(c.Name), T(c.Value), T(c.Limit), res})
		}
		d.add(Table{Head: []string{"trace", "check", "value", "limit", "result"}, Align: []Align{Left, Left, Right, Right, Left}, Rows: rows})
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

// FormatThresholds lists the thresholds in effect, for reports.
func FormatThresholds(t gate.Thresholds) string {
	f := func(v float64, s string) string {
		if v < 0 {
			return "off"
		}
		return s
	}
	return fmt.Sprintf("max-fault-rate=%s max-migration-latency-per-page=%s max-storm-share=%s max-sync-p99=%s max-regression=%s",
		f(t.MaxFaultRate, strconv.FormatFloat(t.MaxFaultRate, 'g', -1, 64)),
		f(t.MaxMigNsPerPage, analyze.FormatNs(t.MaxMigNsPerPage)),
		f(t.MaxStormShare, strconv.FormatFloat(100*t.MaxStormShare, 'g', -1, 64)+"%"),
		f(t.MaxSyncP99Ns, analyze.FormatNs(t.MaxSyncP99Ns)),
		f(t.MaxRegression, strconv.FormatFloat(100*t.MaxRegression, 'g', -1, 64)+"%"))
}

type gateCheckJSON struct {
	Trace  string `json:"trace"`
	Name   string `json:"check"`
	Value  string `json:"value"`
	Limit  string `json:"limit"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail"`
}

// WriteGateJSON writes the gate's outcome as JSON (sorted keys,
// versioned).
func WriteGateJSON(w io.Writer, o *gate.Outcome, th gate.Thresholds, baseline string) error {
	conv := func(cs []gate.Check) []gateCheckJSON {
		out := []gateCheckJSON{}
		for _, c := range cs {
			out = append(out, gateCheckJSON{Trace: c.Trace, Name: c.Name, Value: c.Value, Limit: c.Limit, Pass: c.Pass, Detail: c.Detail})
		}
		return out
	}
	return EncodeJSON(w, struct {
		SchemaVersion int             `json:"schema_version"`
		Status        string          `json:"status"`
		Failed        int             `json:"failed"`
		Checks        []gateCheckJSON `json:"checks"`
		Errors        []gateCheckJSON `json:"errors"`
		Thresholds    string          `json:"thresholds"`
		Baseline      string          `json:"baseline"`
	}{JSONSchemaVersion, GateStatus(o), o.Failed(), conv(o.Checks), conv(o.Errors), FormatThresholds(th), baseline})
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
		Cases    []JUnitCase `xml:"testcase"`
	}
	JUnitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Failure   *JUnitProblem `xml:"failure,omitempty"`
		Error     *JUnitProblem `xml:"error,omitempty"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	JUnitProblem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

// JUnit builds the JUnit document: one suite per trace, one test case per
// check (an "analyze" case with an error for traces that could not be
// read). Strings are made visible (XML 1.0 cannot hold control
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
		tc := JUnitCase{Name: Visible(c.Name), Classname: "umtrace.gate." + Visible(c.Trace), SystemOut: Visible(fmt.Sprintf("value %s, limit %s", c.Value, c.Limit))}
		if !c.Pass {
			tc.Failure = &JUnitProblem{Message: Visible(c.Detail), Type: "threshold", Text: Visible(c.Detail)}
			s.Failures++
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
