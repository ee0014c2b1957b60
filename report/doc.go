package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// A Doc is a report before it has a format: a title and a list of blocks.
// Every human-readable report umtrace writes (analyze, diff, gate, batch
// summary, sanitizer) is built as a Doc and rendered by one of the
// writers below, which own all escaping: builders put raw strings (trace
// names, kernel names, reasons) into the Doc and never escape them.
type Doc struct {
	Title  string // the page title (HTML <title>); not rendered as a heading
	Blocks []Block
}

// Block is one of Heading, Para, List, Table, Pre or Chart.
type Block interface{ block() }

// Heading is a section heading; Level 1 is the document's top heading.
type Heading struct {
	Level int
	Text  Inline
}

// Para is a paragraph. Class, when set, is an HTML class ("storm").
type Para struct {
	Text  Inline
	Class string
}

// List is a bulleted list.
type List struct{ Items []Inline }

// Align is a table column's alignment.
type Align int

// Alignments.
const (
	Left Align = iota
	Right
)

// Table is a table. Align has one entry per column (missing entries are
// Left); a Table without Head is a key-value list (text writer: aligned
// columns, no header).
type Table struct {
	Head  []string
	Align []Align
	Rows  [][]Inline
}

// Pre is preformatted text (fixed-width lines).
type Pre struct{ Text string }

// Chart is an SVG figure. HTML writes SVG (already escaped by the svg
// builder) with Caption under it; text and markdown write Alt instead
// (a sparkline, say), or nothing when Alt is nil.
type Chart struct {
	ID      string // the svg's id (tests and anchors)
	Caption string
	SVG     string
	Alt     Block
}

func (Heading) block() {}
func (Para) block()    {}
func (List) block()    {}
func (Table) block()   {}
func (Pre) block()     {}
func (Chart) block()   {}

// Style is an inline span's style.
type Style int

// Span styles.
const (
	Plain Style = iota
	Code        // a name: kernel, API, file, NVTX range
	Bold
)

// Span is a run of text with one style.
type Span struct {
	Style Style
	Text  string
}

// Inline is a run of spans.
type Inline []Span

// T is plain text; Tf formats it.
func T(s string) Inline { return Inline{{Plain, s}} }

// Tf is plain formatted text.
func Tf(format string, a ...any) Inline { return T(fmt.Sprintf(format, a...)) }

// C is a code span.
func C(s string) Inline { return Inline{{Code, s}} }

// B is bold text.
func B(s string) Inline { return Inline{{Bold, s}} }

// Cat joins inlines.
func Cat(parts ...Inline) Inline {
	var out Inline
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Join joins inlines with a plain separator.
func Join(parts []Inline, sep string) Inline {
	var out Inline
	for i, p := range parts {
		if i > 0 {
			out = append(out, Span{Plain, sep})
		}
		out = append(out, p...)
	}
	return out
}

// Cells turns plain strings into table cells.
func Cells(ss ...string) []Inline {
	out := make([]Inline, len(ss))
	for i, s := range ss {
		out[i] = T(s)
	}
	return out
}

// String is the inline's text without styling.
func (in Inline) String() string {
	var b strings.Builder
	for _, s := range in {
		b.WriteString(s.Text)
	}
	return b.String()
}

// add appends blocks.
func (d *Doc) add(b ...Block) { d.Blocks = append(d.Blocks, b...) }

// h, p and friends are shorthands for builders.
func (d *Doc) h(level int, text Inline) { d.add(Heading{level, text}) }
func (d *Doc) p(text ...Inline)         { d.add(Para{Text: Cat(text...)}) }

// RightAfterFirst aligns the first of n columns left, the others right.
func RightAfterFirst(n int) []Align {
	a := make([]Align, n)
	for i := 1; i < n; i++ {
		a[i] = Right
	}
	return a
}

// DocFormats are the formats a Doc renders to.
var DocFormats = []string{"text", "md", "html"}

// Render writes d in format (text, md or html) to w.
func Render(w io.Writer, d *Doc, format string) error {
	var b bytes.Buffer
	switch format {
	case "text", "":
		renderText(&b, d)
	case "md", "markdown":
		renderMarkdown(&b, d)
	case "html":
		renderHTML(&b, d)
	default:
		return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(DocFormats, ", "))
	}
	_, err := w.Write(b.Bytes())
	return err
}
