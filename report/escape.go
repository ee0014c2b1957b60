package report

import (
	"fmt"
	"html"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds the only escaping code in umtrace: one escaper per
// output format. Names in traces and logs are untrusted (a kernel can be
// called "<script>", an NVTX range can hold a newline or ESC), so every
// writer passes every string through its format's escaper.

// Visible makes s safe for a terminal and for line-based formats: invalid
// UTF-8 bytes become \xNN, control characters (C0 including CR, LF, TAB,
// NUL and ESC; DEL; C1) become \xNN or \uNNNN, and bidirectional
// overrides become \uNNNN. Text without such characters is returned as is.
func Visible(s string) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || hidden(r) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && hidden(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func hidden(r rune) bool {
	return unicode.IsControl(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x2028 || r == 0x2029
}

// EscapeText is the text (terminal) writer's escaper.
func EscapeText(s string) string { return Visible(s) }

// EscapeHTML is the HTML (and SVG) writer's escaper: valid UTF-8 with no
// control characters, and <, >, &, ' and " as entities.
func EscapeHTML(s string) string { return html.EscapeString(Visible(s)) }

// EscapeMarkdown escapes plain text for markdown (GitHub-flavoured):
// backslash, backticks, emphasis and link characters get a backslash; <, >
// and & become entities, so no raw HTML tag (<script>, <img onerror=…>)
// can pass; | becomes \| (table cells stay intact); control characters
// and invalid UTF-8 are made visible (Visible), so no newline can break a
// table row or a heading.
func EscapeMarkdown(s string) string {
	s = Visible(s)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\', '`', '*', '[', ']', '|', '~':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '_':
			// Intraword underscores cannot open emphasis (GFM); keep
			// cuda_names readable.
			if i > 0 && i+1 < len(s) && isWord(s[i-1]) && isWord(s[i+1]) {
				b.WriteByte(c)
			} else {
				b.WriteString(`\_`)
			}
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// MarkdownCode renders s as a markdown code span: the fence is one
// backtick longer than the longest run of backticks in s; inside a table
// cell, | becomes \| (GFM reads the escape before the code span).
// Markdown shows a code span's content as text, so < and > stay as they
// are: `void axpy<float>(float**, int**)` reads as written.
func MarkdownCode(s string, inTable bool) string {
	s = Visible(s)
	if s == "" {
		return "–"
	}
	run, longest := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	if inTable {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	fence := strings.Repeat("`", longest+1)
	if s[0] == '`' || s[len(s)-1] == '`' || s[0] == ' ' && s[len(s)-1] == ' ' {
		s = " " + s + " "
	}
	return fence + s + fence
}
