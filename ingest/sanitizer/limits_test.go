package sanitizer

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// endless is input that never ends: pattern repeated. It fails the test
// (and stops) once more than max bytes were asked of it, so a parser that
// does not stop at its limit fails instead of hanging.
type endless struct {
	t       *testing.T
	pattern []byte
	buf     []byte // pattern repeated, 64 KiB and a pattern more
	off     int    // phase in pattern
	n, max  int64
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n >= e.max {
		e.t.Errorf("read %d bytes of endless input: the parser does not stop", e.n)
		return 0, io.ErrUnexpectedEOF
	}
	if e.buf == nil {
		e.buf = bytes.Repeat(e.pattern, (64<<10)/len(e.pattern)+2)
	}
	k := copy(p, e.buf[e.off:e.off+min(len(p), 64<<10)])
	e.off = (e.off + k) % len(e.pattern)
	e.n += int64(k)
	return k, nil
}

// tooLarge checks that err is a limit error with the message want.
func tooLarge(t *testing.T, what string, err error, want string) {
	t.Helper()
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%s: error %v, want ErrTooLarge", what, err)
	}
	if err.Error() != want {
		t.Errorf("%s: error %q, want %q", what, err.Error(), want)
	}
}

const (
	sanHeader = "========= COMPUTE-SANITIZER\n"
	sanRecord = "========= Invalid __global__ read of size 4 bytes\n=========     at k()+0x10 in /x/a.cu:7\n=========     by thread (1,0,0) in block (0,0,0)\n=========\n"
	xmlHeader = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<ComputeSanitizerOutput>\n"
)

func TestEndlessText(t *testing.T) {
	lim := limits{line: 2 << 20, input: 8 << 20}
	// No line break at all (/dev/zero), after a sanitizer line, or in a
	// line of program output: stop at the line limit.
	for _, tc := range []struct {
		name, pattern string
		want          string
	}{
		{"zeros", "\x00", "line 1 longer than 2 MiB without a line break"},
		{"x", "x", "line 1 longer than 2 MiB without a line break"},
	} {
		e := &endless{t: t, pattern: []byte(tc.pattern), max: 8 << 20}
		_, err := parse(e, tc.name, lim)
		tooLarge(t, tc.name, err, tc.want)
	}
	e := &endless{t: t, pattern: []byte("x"), max: 8 << 20}
	_, err := parse(io.MultiReader(strings.NewReader(sanHeader+sanRecord+"program output\n"), e), "after", lim)
	tooLarge(t, "after a record", err, "line 7 longer than 2 MiB without a line break")
	// Endless lines, records or blank lines: stop at the input limit.
	lim.input = 1 << 20
	_, err = parse(&endless{t: t, pattern: []byte("y"), max: 4 << 20}, "y", lim)
	tooLarge(t, "input limit inside a cut line", err, "line 1: more than 1 MiB of input")
	for _, pattern := range []string{sanRecord, "program output\n", "\n", "\r"} {
		e := &endless{t: t, pattern: []byte(pattern), max: 4 << 20}
		_, err := parse(io.MultiReader(strings.NewReader(sanHeader), e), "lines", lim)
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), ": more than 1 MiB of input") {
			t.Errorf("endless %q: %v", pattern, err)
		}
		if e.n > 2<<20 {
			t.Errorf("endless %q: read %d bytes past the 1 MiB limit", pattern, e.n)
		}
	}
}

// A log of exactly the input limit and a line of exactly the line limit
// are read; one more byte is an error.
func TestLimitsAreExact(t *testing.T) {
	lim := limits{line: 2 << 20}       // input: set below
	long := strings.Repeat("x", 2<<20) // the cut line: maxLineLen kept, the rest skipped
	in := sanHeader + sanRecord + long + "\n" + sanRecord + "========= ERROR SUMMARY: 2 errors\n"
	lim.input = int64(len(in))
	l, err := parseText(strings.NewReader(in), "exact", lim)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Findings) != 2 || len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0].Msg, "cut") {
		t.Errorf("%d findings, warnings %v; want 2 findings and the cut line", len(l.Findings), l.Warnings)
	}
	_, err = parseText(strings.NewReader(in+"\n"), "over", lim)
	tooLarge(t, "input one byte over", err, "line 12: more than "+size(lim.input)+" of input")
	lim.input = 1 << 30
	_, err = parseText(strings.NewReader(sanHeader+sanRecord+long+"xx\n"), "long", lim)
	tooLarge(t, "line one byte over", err, "line 6 longer than 2 MiB without a line break")
}

func TestEndlessXML(t *testing.T) {
	lim := limits{line: 256 << 10, input: 1 << 20}
	rec := "<record><kind>Error</kind><what><text>x</text></what></record>\n"
	for _, tc := range []struct {
		name, head, pattern, want string
	}{
		{"spaces", xmlHeader, " ", "line 3: an XML token or element longer than 256 KiB"},
		{"text", xmlHeader + "<record><what><text>", "y", "line 3: an XML token or element longer than 256 KiB"},
		{"attribute", xmlHeader + "<record a=\"", "z", "line 3: an XML token or element longer than 256 KiB"},
		{"nested", xmlHeader + "<other>", "<a>", "line 3: an XML token or element longer than 256 KiB"},
		{"records", xmlHeader, rec, "more than 1 MiB of input"},
	} {
		e := &endless{t: t, pattern: []byte(tc.pattern), max: 2 << 20}
		_, err := parse(io.MultiReader(strings.NewReader(tc.head), e), tc.name, lim)
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want ErrTooLarge with %q", tc.name, err, tc.want)
		}
	}
}

// /dev/zero, read through ParseFile with the default limits, ends with an
// error naming the file and the limit once MaxLineBytes are read.
func TestDevZero(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/dev/zero is Linux's")
	}
	_, err := ParseFile("/dev/zero")
	want := "parsing /dev/zero: line 1 longer than 64 MiB without a line break"
	if !errors.Is(err, ErrTooLarge) || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Fatal(err)
	}
}

// The limits leave real logs alone: every shared log parses with limits
// just above its size and its longest line.
func TestLimitsKeepRealLogs(t *testing.T) {
	for _, p := range sharedLogs(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		longest := 0
		for _, line := range bytes.Split(b, []byte("\n")) {
			longest = max(longest, len(line))
		}
		want, err := Parse(bytes.NewReader(b), p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		got, err := parse(bytes.NewReader(b), p, limits{line: int64(max(longest+1, maxLineLen)), input: int64(len(b))})
		if err != nil {
			t.Errorf("%s with limits at its size: %v", p, err)
			continue
		}
		if len(got.Findings) != len(want.Findings) {
			t.Errorf("%s: %d findings with tight limits, %d without", p, len(got.Findings), len(want.Findings))
		}
	}
}

// sharedLogs lists the shared sanitizer logs (text and XML).
func sharedLogs(t *testing.T) []string {
	var out []string
	for _, sub := range [][]string{{"sanitizer"}, {"external", "sanitizer"}} {
		dir := sharedDir(t, sub...)
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if x := filepath.Ext(e.Name()); x == ".txt" || x == ".xml" || x == ".log" {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	if len(out) < 8 {
		t.Fatalf("only %d shared logs", len(out))
	}
	return out
}
