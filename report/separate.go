package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/umtrace/umtrace/analyze"
)

// Separate is the report of traces that are not one job, each analyzed
// alone: why they are not a job, and each trace's result.
// Its JSON form is SeparateDocument (NewSeparateDocument).
type Separate struct {
	Note    string
	Verdict string // the worst of the traces' verdicts
	Files   []string
	Results []*analyze.Result
}

// Reason says which traces gave the verdict.
func (s *Separate) Reason() string {
	var in []string
	for _, r := range s.Results {
		if r.Verdict == s.Verdict {
			in = append(in, r.Trace.File)
		}
	}
	switch s.Verdict {
	case analyze.VerdictStorm:
		return fmt.Sprintf("%d of %d traces storm: %s", len(in), len(s.Results), strings.Join(in, ", "))
	case analyze.VerdictInsufficient:
		return fmt.Sprintf("no trace storms, and %d of %d cannot tell: %s", len(in), len(s.Results), strings.Join(in, ", "))
	}
	return fmt.Sprintf("none of the %d traces storms", len(s.Results))
}

// NewSeparate gathers results (in the order given) under note.
func NewSeparate(note string, results []*analyze.Result) *Separate {
	s := &Separate{Note: note, Verdict: analyze.VerdictNoStorm, Results: results}
	insufficient := false
	for _, r := range results {
		s.Files = append(s.Files, r.Trace.File)
		switch r.Verdict {
		case analyze.VerdictStorm:
			s.Verdict = analyze.VerdictStorm
		case analyze.VerdictInsufficient:
			insufficient = true
		}
	}
	if insufficient && s.Verdict != analyze.VerdictStorm {
		s.Verdict = analyze.VerdictInsufficient
	}
	return s
}

// SeparateDoc is the report of s: the note, a table of the traces'
// verdicts, then each trace's own report (its terminal summary when brief)
// one heading level down.
func SeparateDoc(s *Separate, brief bool) *Doc {
	d := &Doc{Title: fmt.Sprintf("umtrace analyze: %d separate traces", len(s.Results))}
	d.h(1, Tf("umtrace analyze: %d separate traces", len(s.Results)))
	v := Para{Text: Cat(B("Verdict: "+verdictWord(s.Verdict)), T(" — "+s.Reason()+"."))}
	if s.Verdict == analyze.VerdictStorm {
		v.Class = "storm"
	}
	d.add(v)
	doc := NewSeparateDocument(s)
	if s.Verdict == analyze.VerdictStorm {
		storyBlocks(d, doc.Story, doc.Mitigations, true, false)
	}
	d.p(T("Not one job: "+s.Note+". Each trace is analyzed alone; "), C("--job"), T(" analyzes them as the ranks of one job anyway."))
	var rows [][]Inline
	for _, r := range s.Results {
		rows = append(rows, append([]Inline{C(r.Trace.File)}, Cells(verdictWord(r.Verdict), msI(r.Headline.StormTimeNs),
			fmt.Sprint(r.Headline.GPUFaults), fmt.Sprint(r.Headline.CPUFaults), ms(r.Headline.SyncP99Ns))...))
	}
	d.add(Table{Head: []string{"trace", "verdict", "storm ms", "GPU faults", "CPU faults", "sync P99 ms"},
		Align: []Align{Left, Left, Right, Right, Right, Right}, Rows: rows})
	mitigationSection(d, doc.Mitigations, s.Verdict, true, false)
	for _, r := range s.Results {
		one := AnalyzeDoc(r)
		if brief {
			one = TerminalDoc(r)
		}
		for _, b := range one.Blocks {
			if h, ok := b.(Heading); ok {
				h.Level++
				b = h
			}
			d.add(b)
		}
	}
	return d
}

// GenerateSeparate writes s in format.
func GenerateSeparate(w io.Writer, s *Separate, format string) error {
	switch format {
	case "text", "", "md", "markdown", "html":
		return Render(w, SeparateDoc(s, format == "text" || format == ""), format)
	case "json":
		return EncodeJSON(w, NewSeparateDocument(s))
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}
