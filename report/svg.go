package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// svg builds one SVG image. Coordinates are written with one decimal, so
// the same data always gives the same bytes; every text goes through
// EscapeHTML.
type svg struct {
	b    strings.Builder
	w, h float64
}

// Colours of the charts (Tableau 10).
const (
	colBlocked = "#4e79a7"
	colGPU     = "#e15759"
	colCPU     = "#f28e2b"
	colMig     = "#59a14f"
	colCompute = "#bab0ac"
	colStorm   = "#e15759"
	colAxis    = "#555"
	colGrid    = "#e4e4e4"
	colP50     = "#59a14f"
	colP95     = "#f28e2b"
	colP99     = "#e15759"
	colBefore  = "#9c9c9c"
	colAfter   = "#4e79a7"
)

func f1(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		x = 0
	}
	s := strconv.FormatFloat(math.Round(x*10)/10, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	if s == "-0" {
		s = "0"
	}
	return s
}

func newSVG(id, title string, w, h float64) *svg {
	s := &svg{w: w, h: h}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" id="%s" class="chart" width="%s" height="%s" viewBox="0 0 %s %s" role="img" font-family="system-ui,sans-serif" font-size="11">`+"\n",
		EscapeHTML(id), f1(w), f1(h), f1(w), f1(h))
	fmt.Fprintf(&s.b, "<title>%s</title>\n", EscapeHTML(title))
	return s
}

func (s *svg) rect(x, y, w, h float64, fill, extra string) {
	if w <= 0 || h <= 0 {
		return
	}
	fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s/>`+"\n", f1(x), f1(y), f1(max(w, 0.3)), f1(h), fill, extra)
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, width float64, extra string) {
	fmt.Fprintf(&s.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`+"\n", f1(x1), f1(y1), f1(x2), f1(y2), stroke, f1(width), extra)
}

// text writes a label; anchor is start, middle or end.
func (s *svg) text(x, y float64, anchor, fill, txt, extra string) {
	fmt.Fprintf(&s.b, `<text x="%s" y="%s" text-anchor="%s" fill="%s"%s>%s</text>`+"\n", f1(x), f1(y), anchor, fill, extra, EscapeHTML(txt))
}

// path writes a path from points (a polyline; closed when fill is set).
func (s *svg) path(pts [][2]float64, stroke, fill string, width float64, extra string) {
	if len(pts) == 0 {
		return
	}
	var d strings.Builder
	for i, p := range pts {
		if i == 0 {
			d.WriteString("M")
		} else {
			d.WriteString(" L")
		}
		d.WriteString(f1(p[0]) + " " + f1(p[1]))
	}
	if fill != "none" {
		d.WriteString(" Z")
	}
	fmt.Fprintf(&s.b, `<path d="%s" stroke="%s" fill="%s" stroke-width="%s"%s/>`+"\n", d.String(), stroke, fill, f1(width), extra)
}

// legend writes coloured swatches with labels from x, y.
func (s *svg) legend(x, y float64, items [][2]string) {
	for _, it := range items {
		s.rect(x, y-9, 10, 10, it[1], "")
		s.text(x+14, y, "start", "#333", it[0], "")
		x += 22 + 6.2*float64(len([]rune(it[0])))
	}
}

func (s *svg) String() string { return s.b.String() + "</svg>\n" }

// niceStep is a 1, 2 or 5 × 10^k step that splits span into at most n
// intervals.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// fmtSec formats seconds for an axis label with step's precision.
func fmtSec(v, step float64) string {
	dec := 0
	if step < 1 {
		dec = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	return strconv.FormatFloat(v, 'f', dec, 64) + " s"
}

// fmtDurAxis labels a log-axis decade (ns).
func fmtDurAxis(ns float64) string {
	switch {
	case ns >= 1e9:
		return f1(ns/1e9) + " s"
	case ns >= 1e6:
		return f1(ns/1e6) + " ms"
	case ns >= 1e3:
		return f1(ns/1e3) + " µs"
	}
	return f1(ns) + " ns"
}

// fmtCount labels a count axis.
func fmtCount(v float64) string {
	switch {
	case v >= 1e6:
		return f1(v/1e6) + "M"
	case v >= 1e4:
		return f1(v/1e3) + "k"
	}
	return f1(v)
}
