package report

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// emptyTable stands for a table with no rows in every format.
const emptyTable = "None."

// renderMarkdown writes d as GitHub-flavoured markdown.
// A section whose body is only charts without a text form (Alt) has no
// markdown form: its heading is left out with it, so no heading stands
// empty.
func renderMarkdown(b *bytes.Buffer, d *Doc) {
	for i, bl := range d.Blocks {
		if isHeading(bl) && sectionTextless(d.Blocks[i+1:]) {
			continue
		}
		mdBlock(b, bl)
	}
}

func mdBlock(b *bytes.Buffer, bl Block) {
	switch x := bl.(type) {
	case Heading:
		b.WriteString(strings.Repeat("#", max(x.Level, 1)) + " " + mdInline(x.Text, false) + "\n\n")
	case Para:
		b.WriteString(mdInline(x.Text, false) + "\n\n")
	case List:
		for _, it := range x.Items {
			b.WriteString("- " + mdInline(it, false) + "\n")
		}
		b.WriteString("\n")
	case Table:
		if len(x.Rows) == 0 {
			b.WriteString(emptyTable + "\n\n") // a header with no rows would say nothing
			return
		}
		head := x.Head
		if head == nil {
			head = make([]string, tableCols(x))
		}
		b.WriteString("|")
		for _, h := range head {
			b.WriteString(" " + EscapeMarkdown(h) + " |")
		}
		b.WriteString("\n|")
		for i := range head {
			if align(x, i) == Right {
				b.WriteString("---:|")
			} else {
				b.WriteString("---|")
			}
		}
		b.WriteString("\n")
		for _, r := range x.Rows {
			b.WriteString("|")
			for i := range head {
				var c Inline
				if i < len(r) {
					c = r[i]
				}
				b.WriteString(" " + mdInline(c, true) + " |")
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	case Pre:
		fence := "```"
		for strings.Contains(x.Text, fence) {
			fence += "`"
		}
		b.WriteString(fence + "\n" + preLines(x.Text) + fence + "\n\n")
	case Chart:
		if x.Alt != nil {
			mdBlock(b, x.Alt)
		}
	}
}

// preLines makes every line of s visible and ends it with a newline.
func preLines(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString(Visible(l) + "\n")
	}
	return b.String()
}

func tableCols(t Table) int {
	n := len(t.Head)
	for _, r := range t.Rows {
		n = max(n, len(r))
	}
	return n
}

func align(t Table, i int) Align {
	if i < len(t.Align) {
		return t.Align[i]
	}
	return Left
}

func mdInline(in Inline, inTable bool) string {
	var b strings.Builder
	for _, s := range in {
		switch s.Style {
		case Code:
			b.WriteString(MarkdownCode(s.Text, inTable))
		case Bold:
			b.WriteString("**" + EscapeMarkdown(s.Text) + "**")
		default:
			b.WriteString(EscapeMarkdown(s.Text))
		}
	}
	return b.String()
}

// htmlStyle is the HTML report's stylesheet.
const htmlStyle = `body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:82em;margin:2em auto;padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.6em;border-bottom:2px solid #ddd;padding-bottom:.2em}h2{font-size:1.3em;margin-top:1.6em;border-bottom:1px solid #eee}h3{font-size:1.1em}
table{border-collapse:collapse;margin:.8em 0;font-size:.92em}td,th{border:1px solid #d8d8d8;padding:3px 8px;vertical-align:top}th{background:#f4f4f4}
.r{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}.l{text-align:left}code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.92em;background:#f3f3f3;padding:0 .2em;border-radius:3px;overflow-wrap:anywhere}
pre{background:#f7f7f7;padding:.6em;overflow-x:auto}.storm{color:#b00000}figure{margin:1em 0}figcaption{font-size:.88em;color:#555}svg{max-width:100%;height:auto}
`

// renderHTML writes d as one self-contained HTML page: no JavaScript, no
// external assets.
func renderHTML(b *bytes.Buffer, d *Doc) {
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" + EscapeHTML(d.Title) + "</title>\n<style>\n" + htmlStyle + "</style>\n</head><body>\n")
	for _, bl := range d.Blocks {
		htmlBlock(b, bl)
	}
	b.WriteString("</body></html>\n")
}

func htmlBlock(b *bytes.Buffer, bl Block) {
	switch x := bl.(type) {
	case Heading:
		l := string(rune('0' + min(max(x.Level, 1), 6)))
		b.WriteString("<h" + l + ">" + htmlInline(x.Text) + "</h" + l + ">\n")
	case Para:
		cls := ""
		if x.Class != "" {
			cls = ` class="` + EscapeHTML(x.Class) + `"`
		}
		b.WriteString("<p" + cls + ">" + htmlInline(x.Text) + "</p>\n")
	case List:
		b.WriteString("<ul>\n")
		for _, it := range x.Items {
			b.WriteString("<li>" + htmlInline(it) + "</li>\n")
		}
		b.WriteString("</ul>\n")
	case Table:
		if len(x.Rows) == 0 {
			b.WriteString("<p>" + emptyTable + "</p>\n")
			return
		}
		b.WriteString("<table>\n")
		if x.Head != nil {
			b.WriteString("<tr>")
			for i, h := range x.Head {
				b.WriteString("<th class=\"" + alignClass(x, i) + "\">" + EscapeHTML(h) + "</th>")
			}
			b.WriteString("</tr>\n")
		}
		n := tableCols(x)
		for _, r := range x.Rows {
			b.WriteString("<tr>")
			for i := 0; i < n; i++ {
				var c Inline
				if i < len(r) {
					c = r[i]
				}
				b.WriteString("<td class=\"" + alignClass(x, i) + "\">" + htmlInline(c) + "</td>")
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</table>\n")
	case Pre:
		b.WriteString("<pre>")
		for _, l := range strings.Split(strings.TrimSuffix(x.Text, "\n"), "\n") {
			b.WriteString(EscapeHTML(l) + "\n")
		}
		b.WriteString("</pre>\n")
	case Chart:
		b.WriteString("<figure>\n" + x.SVG)
		if x.Caption != "" {
			b.WriteString("<figcaption>" + EscapeHTML(x.Caption) + "</figcaption>\n")
		}
		b.WriteString("</figure>\n")
	}
}

func alignClass(t Table, i int) string {
	if align(t, i) == Right {
		return "r"
	}
	return "l"
}

func htmlInline(in Inline) string {
	var b strings.Builder
	for _, s := range in {
		switch s.Style {
		case Code:
			b.WriteString("<code>" + EscapeHTML(s.Text) + "</code>")
		case Bold:
			b.WriteString("<b>" + EscapeHTML(s.Text) + "</b>")
		default:
			b.WriteString(EscapeHTML(s.Text))
		}
	}
	return b.String()
}

// renderText writes d for a terminal: headings as lines, tables as
// aligned columns, every string made visible (no raw control bytes).
func renderText(b *bytes.Buffer, d *Doc) {
	for i, bl := range d.Blocks {
		if textless(bl) || isHeading(bl) && sectionTextless(d.Blocks[i+1:]) {
			continue // nothing to show on a terminal
		}
		if i > 0 {
			switch bl.(type) {
			case Heading:
				b.WriteString("\n")
			case Table, Pre, Chart:
				// A table after a paragraph or list gets air; after a
				// heading it does not.
				if _, ok := d.Blocks[i-1].(Heading); !ok {
					b.WriteString("\n")
				}
			}
		}
		textBlock(b, bl)
	}
}

// textless reports whether a block has no text form (a chart without Alt).
func textless(bl Block) bool {
	c, ok := bl.(Chart)
	return ok && c.Alt == nil
}

func isHeading(bl Block) bool {
	_, ok := bl.(Heading)
	return ok
}

// sectionTextless reports whether the blocks up to the next heading (a
// section's body) are charts with no text form, so its heading would
// stand alone. A heading right before another one (or at the end) is
// kept.
func sectionTextless(rest []Block) bool {
	n := 0
	for _, bl := range rest {
		if isHeading(bl) {
			break
		}
		if !textless(bl) {
			return false
		}
		n++
	}
	return n > 0
}

func textBlock(b *bytes.Buffer, bl Block) {
	switch x := bl.(type) {
	case Heading:
		t := EscapeText(x.Text.String())
		if x.Level <= 1 {
			b.WriteString(t + "\n")
		} else {
			b.WriteString(t + ":\n")
		}
	case Para:
		b.WriteString("  " + EscapeText(x.Text.String()) + "\n")
	case List:
		for _, it := range x.Items {
			b.WriteString("  - " + EscapeText(it.String()) + "\n")
		}
	case Table:
		if len(x.Rows) == 0 {
			b.WriteString("  " + emptyTable + "\n")
			return
		}
		rows := [][]string{}
		if x.Head != nil {
			rows = append(rows, x.Head)
		}
		for _, r := range x.Rows {
			cs := make([]string, len(r))
			for i, c := range r {
				cs[i] = c.String()
			}
			rows = append(rows, cs)
		}
		n := tableCols(x)
		width := make([]int, n)
		for _, r := range rows {
			for i, c := range r {
				width[i] = max(width[i], utf8.RuneCountInString(EscapeText(c)))
			}
		}
		for _, r := range rows {
			var line strings.Builder
			for i := 0; i < n; i++ {
				c := ""
				if i < len(r) {
					c = EscapeText(r[i])
				}
				pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
				line.WriteString("  ")
				if align(x, i) == Right {
					line.WriteString(pad + c)
				} else {
					line.WriteString(c + pad)
				}
			}
			b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
		}
	case Pre:
		for _, l := range strings.Split(strings.TrimSuffix(x.Text, "\n"), "\n") {
			b.WriteString(strings.TrimRight("  "+Visible(l), " ") + "\n")
		}
	case Chart:
		if x.Alt != nil {
			textBlock(b, x.Alt)
		}
	}
}
