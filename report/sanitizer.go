package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/umtrace/umtrace/ingest/sanitizer"
)

// SanitizerGroup is the findings of one log that share severity, kind, kernel,
// source location and what went wrong.
type SanitizerGroup struct {
	Count     int      `json:"count"`
	Severity  string   `json:"severity"`
	Kind      string   `json:"kind"`
	Kernel    string   `json:"kernel,omitempty"`      // base name
	KernelSig string   `json:"kernel_name,omitempty"` // as printed, first record's
	Location  string   `json:"location,omitempty"`
	What      string   `json:"what,omitempty"`
	Threads   int      `json:"threads,omitempty"` // distinct (block, thread) pairs
	Blocks    int      `json:"blocks,omitempty"`
	Hazards   int64    `json:"hazards,omitempty"`
	LeakBytes int64    `json:"leak_bytes,omitempty"`
	APIs      []string `json:"apis,omitempty"` // in order of first appearance
	FirstLine int      `json:"first_log_line"`

	threads map[[2]sanitizer.Dim3]bool
	blocks  map[sanitizer.Dim3]bool
}

type SanitizerToolSummary struct {
	Errors          *int64 `json:"errors,omitempty"`
	NotPrinted      int64  `json:"not_printed,omitempty"`
	LeakBytes       *int64 `json:"leak_bytes,omitempty"`
	LeakAllocations *int64 `json:"leak_allocations,omitempty"`
	RaceRecords     *int64 `json:"race_records,omitempty"`
	RaceErrors      *int64 `json:"race_errors,omitempty"`
	RaceWarnings    *int64 `json:"race_warnings,omitempty"`
}

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
	Groups        []*SanitizerGroup     `json:"groups"`
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

// sanWhat describes a finding without its per-instance values (thread,
// address, API), so that repeats of one bug fall into one group.
func sanWhat(f *sanitizer.Finding) string {
	var parts []string
	add := func(s string) {
		if s != "" {
			parts = append(parts, s)
		}
	}
	switch f.Kind {
	case sanitizer.KindAPIError:
		e := f.APIError
		switch {
		case f.HasResult && e != "":
			e = fmt.Sprintf("%s (error %d)", e, f.APIResult)
		case f.HasResult:
			e = fmt.Sprintf("error %d", f.APIResult)
		}
		add(e)
		if f.Detail != "" {
			add(fmt.Sprintf("%q", f.Detail))
		}
	case sanitizer.KindRace:
		acc := f.Access
		if len(f.RaceWith) > 0 {
			peers := make([]string, len(f.RaceWith))
			for i := range f.RaceWith {
				peers[i] = f.RaceWith[i].Access + " at " + f.RaceWith[i].Where()
			}
			acc += " vs " + strings.Join(peers, ", ")
		}
		add(acc)
		add(f.Detail)
	case sanitizer.KindLeak:
	case sanitizer.KindInvalidAccess, sanitizer.KindUninitialized:
		add(strings.TrimSpace(f.Space + " " + f.Access))
		if f.HasSize {
			add(fmt.Sprintf("%d bytes", f.Size))
		}
		add(f.Detail)
	default:
		if f.Detail != "" {
			add(f.Detail)
		} else {
			add(f.Message)
		}
	}
	return strings.Join(parts, ", ")
}

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
	groups := map[[5]string]*SanitizerGroup{}
	for i := range l.Findings {
		f := &l.Findings[i]
		s.Severities[f.Severity]++
		k := [5]string{f.Severity, f.Kind, f.KernelBase, f.Location(), sanWhat(f)}
		g := groups[k]
		if g == nil {
			g = &SanitizerGroup{Severity: k[0], Kind: k[1], Kernel: k[2], KernelSig: f.Kernel, Location: k[3], What: k[4],
				FirstLine: f.LogLine, threads: map[[2]sanitizer.Dim3]bool{}, blocks: map[sanitizer.Dim3]bool{}}
			groups[k] = g
		}
		g.Count++
		if f.HasThread {
			g.threads[[2]sanitizer.Dim3{f.Block, f.Thread}] = true
			g.blocks[f.Block] = true
		}
		g.Hazards += f.Hazards
		g.LeakBytes += f.LeakBytes
		if f.API != "" && !contains(g.APIs, f.API) {
			g.APIs = append(g.APIs, f.API)
		}
	}
	for _, g := range groups {
		g.Threads, g.Blocks = len(g.threads), len(g.blocks)
		s.Groups = append(s.Groups, g)
	}
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
		s.Groups = []*SanitizerGroup{}
	}
	return s
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// sanDetails is a group's WHAT column with its aggregates.
func sanDetails(g *SanitizerGroup) string {
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
