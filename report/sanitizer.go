package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/umtrace/umtrace/ingest/sanitizer"
)

// SanitizerToolSummary is the tool's own summary lines of one log.
type SanitizerToolSummary struct {
	Errors          *int64 `json:"errors,omitempty"`
	NotPrinted      int64  `json:"not_printed,omitempty"`
	LeakBytes       *int64 `json:"leak_bytes,omitempty"`
	LeakAllocations *int64 `json:"leak_allocations,omitempty"`
	RaceRecords     *int64 `json:"race_records,omitempty"`
	RaceErrors      *int64 `json:"race_errors,omitempty"`
	RaceWarnings    *int64 `json:"race_warnings,omitempty"`
}

// SanitizerLogSummary is one log as umtrace sanitizer reports it.
type SanitizerLogSummary struct {
	File          string                `json:"file"`
	Format        string                `json:"format"`
	Driver        string                `json:"driver,omitempty"`
	Tool          string                `json:"tool"`
	Findings      int                   `json:"findings"`
	Severities    map[string]int        `json:"severities"`
	Kinds         map[string]int        `json:"kinds"`
	ToolSummary   *SanitizerToolSummary `json:"tool_summary,omitempty"`
	ParseWarnings int                   `json:"parse_warnings"`
	Groups        []*sanitizer.Group    `json:"groups"`
}

func sevRank(s string) int {
	switch s {
	case sanitizer.SevError:
		return 0
	case sanitizer.SevWarning:
		return 1
	}
	return 2
}

// SummarizeSanitizerLog is the summary of one log: its counts, the tool's
// summary and its findings grouped (sanitizer.ByWhat), errors first.
func SummarizeSanitizerLog(l *sanitizer.Log) SanitizerLogSummary {
	s := SanitizerLogSummary{File: l.Path, Format: l.Format, Driver: l.Driver, Tool: l.Tool,
		Findings: len(l.Findings), Severities: map[string]int{}, Kinds: l.Counts(), ParseWarnings: len(l.Warnings)}
	if ts := l.Summary; ts.HasErrors || ts.HasLeaks || ts.HasRace {
		t := &SanitizerToolSummary{NotPrinted: ts.NotPrinted}
		if ts.HasErrors {
			t.Errors = &ts.Errors
		}
		if ts.HasLeaks {
			t.LeakBytes, t.LeakAllocations = &ts.LeakBytes, &ts.LeakAllocations
		}
		if ts.HasRace {
			t.RaceRecords, t.RaceErrors, t.RaceWarnings = &ts.RaceRecords, &ts.RaceErrors, &ts.RaceWarnings
		}
		s.ToolSummary = t
	}
	for i := range l.Findings {
		s.Severities[l.Findings[i].Severity]++
	}
	s.Groups = sanitizer.GroupFindings(sanitizer.ByWhat, l)
	sort.Slice(s.Groups, func(i, j int) bool {
		a, b := s.Groups[i], s.Groups[j]
		if ra, rb := sevRank(a.Severity), sevRank(b.Severity); ra != rb {
			return ra < rb
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.Kernel != b.Kernel {
			return a.Kernel < b.Kernel
		}
		if a.Location != b.Location {
			return a.Location < b.Location
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.What != b.What {
			return a.What < b.What
		}
		return a.FirstLine < b.FirstLine
	})
	if s.Groups == nil {
		s.Groups = []*sanitizer.Group{}
	}
	return s
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// sanDetails is a group's WHAT column with its aggregates.
func sanDetails(g *sanitizer.Group) string {
	parts := []string{}
	if g.What != "" {
		parts = append(parts, g.What)
	}
	if len(g.APIs) > 0 {
		parts = append(parts, "in "+strings.Join(g.APIs, ", "))
	}
	if g.Threads > 0 {
		parts = append(parts, plural(int64(g.Threads), "thread", "threads")+" in "+plural(int64(g.Blocks), "block", "blocks"))
	}
	if g.Hazards > 0 {
		parts = append(parts, plural(g.Hazards, "hazard", "hazards"))
	}
	if g.LeakBytes > 0 {
		parts = append(parts, plural(g.LeakBytes, "byte", "bytes")+" leaked")
	}
	return strings.Join(parts, "; ")
}

func sanHeadline(s *SanitizerLogSummary) string {
	tool := s.Tool
	if s.Driver != "" {
		tool = s.Driver + " " + tool
	}
	return fmt.Sprintf("%s, %s: %s (%s, %s)", s.Format, tool, plural(int64(s.Findings), "finding", "findings"),
		plural(int64(s.Severities[sanitizer.SevError]), "error", "errors"), plural(int64(s.Severities[sanitizer.SevWarning]), "warning", "warnings"))
}

func sanToolLine(t *SanitizerToolSummary) string {
	if t == nil {
		return "none in the log"
	}
	var parts []string
	if t.Errors != nil {
		e := "ERROR SUMMARY " + plural(*t.Errors, "error", "errors")
		if t.NotPrinted > 0 {
			e += fmt.Sprintf(" (%d not printed)", t.NotPrinted)
		}
		parts = append(parts, e)
	}
	if t.LeakBytes != nil {
		parts = append(parts, fmt.Sprintf("LEAK SUMMARY %s in %s", plural(*t.LeakBytes, "byte", "bytes"), plural(*t.LeakAllocations, "allocation", "allocations")))
	}
	if t.RaceRecords != nil {
		parts = append(parts, fmt.Sprintf("RACECHECK SUMMARY %s displayed (%s, %s)", plural(*t.RaceRecords, "hazard", "hazards"),
			plural(*t.RaceErrors, "error", "errors"), plural(*t.RaceWarnings, "warning", "warnings")))
	}
	return strings.Join(parts, "; ")
}

func sanKinds(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(keys, ", ")
}

// SanitizerDoc is the summary of sanitizer logs (umtrace sanitizer).
func SanitizerDoc(sums []SanitizerLogSummary) *Doc {
	total, errs := 0, 0
	for i := range sums {
		total += sums[i].Findings
		errs += sums[i].Severities[sanitizer.SevError]
	}
	d := &Doc{Title: "umtrace: sanitizer findings"}
	d.h(1, Tf("Sanitizer findings: %s, %s (%s)", plural(int64(len(sums)), "log", "logs"),
		plural(int64(total), "finding", "findings"), plural(int64(errs), "error", "errors")))
	for i := range sums {
		s := &sums[i]
		d.h(2, C(s.File))
		items := []Inline{T(sanHeadline(s)), T("tool summary: " + sanToolLine(s.ToolSummary)), T("kinds: " + sanKinds(s.Kinds))}
		if s.ParseWarnings > 0 {
			items = append(items, Tf("parse warnings: %d (on stderr)", s.ParseWarnings))
		}
		d.add(List{items})
		if len(s.Groups) == 0 {
			continue
		}
		var rows [][]Inline
		for _, g := range s.Groups {
			k := T("-")
			if g.Kernel != "" {
				k = C(g.Kernel)
			}
			loc := T("-")
			if g.Location != "" {
				loc = C(g.Location)
			}
			rows = append(rows, []Inline{T(fmt.Sprint(g.Count)), T(g.Severity), T(g.Kind), k, loc, T(sanDetails(g))})
		}
		d.add(Table{Head: []string{"count", "severity", "kind", "kernel", "location", "details"}, Align: []Align{Right}, Rows: rows})
	}
	return d
}

// WriteSanitizerJSON writes the summaries as JSON (sorted keys,
// versioned).
func WriteSanitizerJSON(w io.Writer, sums []SanitizerLogSummary) error {
	if sums == nil {
		sums = []SanitizerLogSummary{}
	}
	return EncodeJSON(w, SanitizerDocument{JSONSchemaVersion, sums})
}

// SanitizerDocument is sanitizer's JSON document (docs/schema/sanitizer.schema.json).
type SanitizerDocument struct {
	SchemaVersion int                   `json:"schema_version"`
	Logs          []SanitizerLogSummary `json:"logs"`
}
