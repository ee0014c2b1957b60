package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkHelp checks one help text: on stdout, nothing on stderr, exit 0,
// no line wider than helpWidth, the sections every help has.
func checkHelp(t *testing.T, args []string, sections ...string) string {
	t.Helper()
	code, stdout, stderr := archRun(args...)
	if code != exitOK || stderr != "" {
		t.Fatalf("%v: exit %d, stderr %q; want exit 0 and help on stdout", args, code, stderr)
	}
	for i, l := range strings.Split(stdout, "\n") {
		if n := utf8.RuneCountInString(l); n > helpWidth {
			t.Errorf("%v: line %d is %d columns (max %d): %q", args, i+1, n, helpWidth, l)
		}
	}
	for _, s := range sections {
		if !strings.Contains(stdout, "\n"+s+"\n") {
			t.Errorf("%v: no %q section in\n%s", args, s, stdout)
		}
	}
	return stdout
}

func TestHelp(t *testing.T) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	top := checkHelp(t, []string{"help"}, "Commands:", "Examples:", "Exit codes:")
	for _, n := range names {
		if !strings.Contains(top, "\n  "+n+" ") {
			t.Errorf("umtrace help does not list %s", n)
		}
		t.Run(n, func(t *testing.T) {
			long := checkHelp(t, []string{n, "--help"}, "Flags:", "Examples:", "Exit codes:")
			if short := checkHelp(t, []string{n, "-h"}); short != long {
				t.Errorf("%s -h differs from %s --help", n, n)
			}
			if via := checkHelp(t, []string{"help", n}); via != long {
				t.Errorf("umtrace help %s differs from %s --help", n, n)
			}
			if !strings.HasPrefix(long, "umtrace "+n+": ") || !strings.Contains(long, "\nUsage: umtrace "+n+" ") {
				t.Errorf("%s --help does not start with its name and usage:\n%s", n, long)
			}
			// Every example runs this command, and the exit codes are the documented ones.
			ex := long[strings.Index(long, "\nExamples:\n"):strings.Index(long, "\nExit codes:\n")]
			if !strings.Contains(ex, "  umtrace "+n+" ") {
				t.Errorf("%s --help has no example of itself:\n%s", n, ex)
			}
			for _, c := range []string{"0  success", "1  a check failed", "2  bad flags", "3  bad input", "4  an output"} {
				if !strings.Contains(long, "\n  "+c) {
					t.Errorf("%s --help lacks exit code line %q", n, c)
				}
			}
		})
	}
	if code, _, stderr := archRun("help", "nosuch"); code != exitUsage || !strings.Contains(stderr, `"nosuch"`) {
		t.Errorf("umtrace help nosuch: exit %d, stderr %q; want a usage error naming it", code, stderr)
	}
	if code, stdout, stderr := archRun(); code != exitUsage || stdout != "" || !strings.Contains(stderr, "Commands:") {
		t.Errorf("umtrace without arguments: exit %d, stdout %q; want exit 2 and the command list on stderr", code, stdout)
	}
}

// TestBadOptionValues: every out-of-range value is a usage error (exit 2)
// that names the flag and the allowed range, before any output is written.
func TestBadOptionValues(t *testing.T) {
	trace := tracePath(t, "torch_mlp_managed") // has NVTX step ranges
	dir := t.TempDir()
	cases := []struct {
		args []string
		want []string // substrings of the one-line error
	}{
		{[]string{"analyze", trace, "--min-overlap", "5"}, []string{"--min-overlap 5", "0..1"}},
		{[]string{"analyze", trace, "--min-overlap", "-0.1"}, []string{"--min-overlap", "0..1"}},
		{[]string{"analyze", trace, "--inflation", "-2"}, []string{"--inflation -2", "≥ 0"}},
		{[]string{"analyze", trace, "--min-stall", "-1ms"}, []string{"--min-stall -1ms", "≥ 0"}},
		{[]string{"analyze", trace, "--merge-gap", "-5s"}, []string{"--merge-gap", "≥ 0"}},
		{[]string{"analyze", trace, "--min-episode-blocked", "-1us"}, []string{"--min-episode-blocked", "≥ 0"}},
		{[]string{"analyze", trace, "--min-episode-stalls", "0"}, []string{"--min-episode-stalls 0", "≥ 1"}},
		{[]string{"analyze", trace, "--min-calm-calls", "0"}, []string{"--min-calm-calls 0", "≥ 1"}},
		{[]string{"analyze", trace, "--top", "-1"}, []string{"--top -1", "≥ 1"}},
		{[]string{"analyze", trace, "--top", "0"}, []string{"--top 0", "≥ 1"}},
		{[]string{"analyze", trace, "--step-range", "nosuch"}, []string{`"nosuch"`, `"train_step N" (20)`, `"load_batch" (20)`}},
		// A job (several files) goes through the same opener: the same
		// bad option, the same exit code (it was 3 here, 2 above).
		{[]string{"analyze", trace, trace, "--step-range", "nosuch"}, []string{`"nosuch"`, `"train_step N" (20)`, `"load_batch" (20)`}},
		{[]string{"diff", trace, trace, "--inflation", "-1"}, []string{"--inflation", "≥ 0"}},
		{[]string{"gate", trace, "--max-storm-share", "150%"}, []string{"max-storm-share", "0..100%"}},
		{[]string{"gate", trace, "--max-fault-rate", "-3"}, []string{"max-fault-rate", "≥ 0"}},
		{[]string{"gate", trace, "--min-overlap", "1.5"}, []string{"--min-overlap", "0..1"}},
		{[]string{"batch", trace, "--out-dir", dir, "--jobs", "0"}, []string{"--jobs 0", "≥ 1"}},
		{[]string{"batch", trace, "--out-dir", dir, "--shard", "3/2"}, []string{"--shard", "1 <= I <= N"}},
		{[]string{"batch", trace, "--out-dir", dir, "--shard", "x"}, []string{"--shard", "I/N"}},
		{[]string{"batch", trace, "--out-dir", dir, "--top", "-1"}, []string{"--top", "≥ 1"}},
		{[]string{"export", trace, "--out-dir", dir, "--shard", "0/4"}, []string{"--shard", "1 <= I <= N"}},
		{[]string{"export", trace, "--out-dir", dir, "--min-overlap", "2"}, []string{"--min-overlap", "0..1"}},
		{[]string{"reproduce", "--scenario", "managed", "--size", "-1"}, []string{"--size", "out of range"}},
	}
	for _, c := range cases {
		code, stdout, stderr := archRun(c.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", c.args, code, exitUsage, stderr)
			continue
		}
		if stdout != "" || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: want one error line and no output, got stdout %q stderr %q", c.args, stdout, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: error %q lacks %q", c.args, stderr, w)
			}
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("rejected commands wrote into %s: %v", dir, ents)
	}
	// The step range the trace has is accepted and used.
	code, js, stderr := archRun("analyze", trace, "--step-range", "train_step", "-f", "json")
	if code != exitOK || !strings.Contains(js, `"range": "train_step"`) {
		t.Errorf("--step-range train_step: exit %d (%s); want steps from train_step", code, stderr)
	}
}

// TestOutputGrammar: -o is a file in every command and its extension picks
// the format; a contradicting -f, or -o where a command writes a
// directory, is a usage error; --out is the old name of --out-dir.
func TestOutputGrammar(t *testing.T) {
	trace := tracePath(t, "um_pingpong_default")
	dir := t.TempDir()
	for _, c := range []struct {
		cmd    []string
		file   string
		format string // -f that gives the same bytes on stdout
	}{
		{[]string{"analyze", trace}, "r.html", "html"},
		{[]string{"analyze", trace}, "r.md", "md"},
		{[]string{"analyze", trace}, "r.json", "json"},
		{[]string{"analyze", trace}, "r.txt", "text"},
		{[]string{"diff", trace, trace}, "d.json", "json"},
		{[]string{"diff", trace, trace}, "d.md", "md"},
		{[]string{"batch", trace, "-q", "--out-dir", filepath.Join(dir, "b")}, "s.csv", "csv"},
		{[]string{"gate", trace, "--max-fault-rate", "off"}, "g.md", "md"},
	} {
		out := filepath.Join(dir, c.file)
		code, stdout, stderr := archRun(append(c.cmd, "-o", out)...)
		if code != exitOK && code != exitFail || stdout != "" {
			t.Errorf("%v -o %s: exit %d, stdout %q, stderr %q", c.cmd, c.file, code, stdout, stderr)
			continue
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		_, want, _ := archRun(append(c.cmd, "-f", c.format)...)
		if string(got) != want {
			t.Errorf("%v -o %s differs from -f %s on stdout", c.cmd, c.file, c.format)
		}
		if len(got) == 0 {
			t.Errorf("%v -o %s is empty", c.cmd, c.file)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze", trace, "-f", "md", "-o", filepath.Join(dir, "x.html")}, "contradicts"},
		{[]string{"diff", trace, trace, "-o", filepath.Join(dir, "x.csv")}, "md, text, html or json"},
		{[]string{"analyze", trace, "-o", dir}, "is a directory"},
		{[]string{"export", trace, "-o", dir}, "--out-dir"},
		{[]string{"export", trace, "--out", dir, "--out-dir", filepath.Join(dir, "other")}, "disagree"},
		{[]string{"reproduce", "--list", "-o", dir}, "--out-dir"},
		{[]string{"gate", trace, "--summary", filepath.Join(dir, "a.md"), "-o", filepath.Join(dir, "b.md")}, "not both"},
	} {
		code, _, stderr := archRun(c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want a usage error with %q", c.args, code, stderr, c.want)
		}
	}
	// redact and synth take their output file as -o or as the last argument.
	a, b := filepath.Join(dir, "a.sqlite"), filepath.Join(dir, "b.sqlite")
	if code, _, stderr := archRun("redact", trace, a, "-q"); code != exitOK {
		t.Fatalf("redact IN OUT: exit %d: %s", code, stderr)
	}
	if code, _, stderr := archRun("redact", trace, "-o", b, "-q"); code != exitOK {
		t.Fatalf("redact IN -o OUT: exit %d: %s", code, stderr)
	}
	_, ja, _ := archRun("analyze", a, "-f", "json")
	_, jb, _ := archRun("analyze", b, "-f", "json")
	if ja == "" || strings.ReplaceAll(ja, "a.sqlite", "b.sqlite") != jb {
		t.Errorf("redact IN -o OUT and redact IN OUT analyze differently")
	}
	if code, _, stderr := archRun("redact", a, "-o", a); code != exitUsage || !strings.Contains(stderr, "never modifies") {
		t.Errorf("redact X -o X: exit %d, stderr %q; want a usage error", code, stderr)
	}
	s1, s2 := filepath.Join(dir, "s1.sqlite"), filepath.Join(dir, "s2.sqlite")
	archRun("synth", s1, "--steps", "120", "-q")
	archRun("synth", "-o", s2, "--steps", "120", "-q")
	d1, err1 := os.ReadFile(s1)
	d2, err2 := os.ReadFile(s2)
	if err1 != nil || err2 != nil || len(d1) == 0 || string(d1) != string(d2) {
		t.Errorf("synth -o OUT and synth OUT differ or failed: %v %v", err1, err2)
	}

	// The deprecated --out still works and says what to use.
	old := filepath.Join(dir, "old")
	code, _, stderr := archRun("batch", trace, "-q", "--out", old)
	if code != exitOK || !strings.Contains(stderr, "use --out-dir") {
		t.Errorf("batch --out: exit %d, stderr %q; want it to work with a deprecation note", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(old, "summary.md")); err != nil {
		t.Errorf("batch --out wrote no summary: %v", err)
	}
}
