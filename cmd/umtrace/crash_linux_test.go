package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPanicOneLine: a child that panics (on any goroutine) is a bug, not
// a dump for the user: the parent prints one line naming the trace, the
// panic's message and the file that keeps the runtime's report, and exits
// 4 (README, "Exit codes": internal error).
func TestPanicOneLine(t *testing.T) {
	trace := tracePath(t, "um_pingpong_default")
	tmp := t.TempDir()
	out, errs, code := umtraceProc(t, "", []string{"UMTRACE_TEST_PANIC=boom", "TMPDIR=" + tmp}, "analyze", trace, "-f", "json")
	line := regexp.MustCompile(`^umtrace analyze: internal error reading \S*um_pingpong_default\.sqlite: planted for the test: boom \(a bug in umtrace; the Go runtime's report is in (\S+)\)\n$`)
	m := line.FindStringSubmatch(errs)
	if code != exitInternal || m == nil || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %.300q", code, out, errs)
	}
	if filepath.Dir(m[1]) != tmp {
		t.Errorf("report at %s, want it in TMPDIR %s", m[1], tmp)
	}
	b, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("panic: planted for the test: boom")) || !bytes.Contains(b, []byte("goroutine ")) {
		t.Errorf("the runtime's report: %.300q", b)
	}
}

// TestStderrFilterCrash: from a panic's first line on, nothing passes; the
// report is kept whole for the file, and what came before passed as it came.
func TestStderrFilterCrash(t *testing.T) {
	var b bytes.Buffer
	f := &stderrFilter{w: &b}
	io.WriteString(f, "umtrace analyze: warning: x\npan")
	io.WriteString(f, "ic: runtime error: makeslice: cap out of range\n\ngoroutine 7 [running]:\nmain.main()\n\t/x.go:1")
	f.flush()
	if b.String() != "umtrace analyze: warning: x\n" {
		t.Errorf("passed %q", b.String())
	}
	if string(f.crash) != "panic: runtime error: makeslice: cap out of range\n" {
		t.Errorf("crash line %q", f.crash)
	}
	if want := "panic: runtime error: makeslice: cap out of range\n\ngoroutine 7 [running]:\nmain.main()\n\t/x.go:1"; f.dump.String() != want {
		t.Errorf("report %q, want %q", f.dump.String(), want)
	}
	t.Setenv("TMPDIR", t.TempDir())
	rep := f.crashReport()
	if !strings.HasPrefix(rep, "runtime error: makeslice: cap out of range (a bug in umtrace; the Go runtime's report is in "+os.TempDir()) {
		t.Errorf("report line %q", rep)
	}
	// Out of memory stays out of memory.
	g := &stderrFilter{w: io.Discard}
	io.WriteString(g, "fatal error: out of memory\n\ngoroutine 1 [running]:\n")
	if !g.oom || g.crash != nil {
		t.Errorf("out of memory taken for a crash: oom %v, crash %q", g.oom, g.crash)
	}
}
