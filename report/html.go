package report

import (
	"bytes"
	"fmt"
	"html"
	"strings"

	"github.com/umtrace/umtrace/analyze"
)

// writeHTML writes a self-contained HTML page with the markdown report's
// content: the markdown's tables become HTML tables, other lines paragraphs.
func writeHTML(b *bytes.Buffer, r *analyze.Result) {
	var md bytes.Buffer
	writeMarkdown(&md, r)
	fmt.Fprintf(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>umtrace: %s</title>\n", html.EscapeString(r.Trace.File))
	b.WriteString("<style>body{font-family:sans-serif;max-width:80em;margin:2em auto}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td:first-child,th:first-child{text-align:left}.storm{color:#b00}</style>\n</head><body>\n")
	lines := strings.Split(md.String(), "\n")
	inTable := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "```") { // fenced block → <pre>
			b.WriteString("<pre>")
			for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
				b.WriteString(html.EscapeString(lines[i]) + "\n")
			}
			b.WriteString("</pre>\n")
			continue
		}
		if strings.HasPrefix(l, "|") {
			cells := splitRow(l)
			if !inTable {
				b.WriteString("<table><tr>")
				for _, c := range cells {
					fmt.Fprintf(b, "<th>%s</th>", inline(c))
				}
				b.WriteString("</tr>\n")
				inTable = true
				i++ // separator row
				continue
			}
			b.WriteString("<tr>")
			for _, c := range cells {
				fmt.Fprintf(b, "<td>%s</td>", inline(c))
			}
			b.WriteString("</tr>\n")
			continue
		}
		if inTable {
			b.WriteString("</table>\n")
			inTable = false
		}
		switch {
		case strings.HasPrefix(l, "### "):
			fmt.Fprintf(b, "<h3>%s</h3>\n", inline(l[4:]))
		case strings.HasPrefix(l, "## "):
			fmt.Fprintf(b, "<h2>%s</h2>\n", inline(l[3:]))
		case strings.HasPrefix(l, "# "):
			fmt.Fprintf(b, "<h1>%s</h1>\n", inline(l[2:]))
		case strings.HasPrefix(l, "- "):
			fmt.Fprintf(b, "<li>%s</li>\n", inline(l[2:]))
		case l != "":
			cls := ""
			if strings.HasPrefix(l, "**Verdict: STORM") {
				cls = ` class="storm"`
			}
			fmt.Fprintf(b, "<p%s>%s</p>\n", cls, inline(l))
		}
	}
	if inTable {
		b.WriteString("</table>\n")
	}
	b.WriteString("</body></html>\n")
}

func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(strings.TrimSuffix(l, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(l); i++ {
		if l[i] == '\\' && i+1 < len(l) && l[i+1] == '|' {
			cur.WriteByte('|')
			i++
			continue
		}
		if l[i] == '|' {
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteByte(l[i])
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// inline escapes text and renders **bold** and `code`.
func inline(s string) string {
	s = html.EscapeString(s)
	s = replacePairs(s, "**", "<b>", "</b>")
	return replacePairs(s, "`", "<code>", "</code>")
}

func replacePairs(s, delim, open, close string) string {
	parts := strings.Split(s, delim)
	if len(parts) < 3 {
		return s
	}
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			if i%2 == 1 && i < len(parts)-1 || i%2 == 0 {
				if i%2 == 1 {
					b.WriteString(open)
				} else {
					b.WriteString(close)
				}
			} else {
				b.WriteString(delim)
			}
		}
		b.WriteString(p)
	}
	return b.String()
}
