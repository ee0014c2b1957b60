package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/reproducer"
)

func TestReproduceUsage(t *testing.T) {
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"reproduce"}, exitUsage},
		{[]string{"reproduce", "--scenario", "nope"}, exitUsage},
		{[]string{"reproduce", "--scenario", "managed", "--sanitizer", "initcheck"}, exitUsage},
		{[]string{"reproduce", "--scenario", "managed", "--size", "999999"}, exitUsage},
		{[]string{"reproduce", "--validate", "--scenario", "managed"}, exitUsage},
		{[]string{"reproduce", "extra"}, exitUsage},
	}
	for _, c := range cases {
		var so, se bytes.Buffer
		if got := run(&so, &se, c.args); got != c.code {
			t.Errorf("%v: exit %d, want %d (%s)", c.args, got, c.code, se.String())
		}
	}
}

func TestReproduceList(t *testing.T) {
	var so, se bytes.Buffer
	if code := run(&so, &se, []string{"reproduce", "--list"}); code != exitOK {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	for _, n := range reproducer.Names() {
		if !strings.Contains(so.String(), n) {
			t.Errorf("--list lacks %s", n)
		}
	}
}

// Without a GPU (no libcuda, or libcuda with no device), running a
// scenario is a bad-input error that says why, with or without nsys.
func TestReproduceNoGPU(t *testing.T) {
	if reproducer.Available() == nil {
		t.Skip("a CUDA device is present; this test is for machines without one")
	}
	for _, args := range [][]string{
		{"reproduce", "--scenario", "managed", "--no-nsys", "--out-dir", t.TempDir()},
		{"reproduce", "--scenario", "managed", "--nsys", "/bin/true", "--out-dir", t.TempDir()},
	} {
		var so, se bytes.Buffer
		code := run(&so, &se, args)
		if code != exitBadInput || !strings.Contains(se.String(), "no CUDA device") {
			t.Errorf("%q: exit %d, stderr %q; want %d and a no-CUDA-device message", args, code, se.String(), exitBadInput)
		}
	}
}

// TestReproduceHelpMulti: reproduce --help names the multi-rank scenarios
// and --ranks; help version and version --help work.
func TestReproduceHelpMulti(t *testing.T) {
	code, stdout, _ := archRun("reproduce", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, s := range reproducer.MultiScenarios {
		if !strings.Contains(stdout, s.Name) {
			t.Errorf("reproduce --help lacks %s", s.Name)
		}
	}
	for _, w := range []string{"--ranks N", "--storm-rank", "exits 3"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("reproduce --help lacks %q", w)
		}
	}
	for _, args := range [][]string{{"help", "version"}, {"version", "--help"}, {"help", "help"}} {
		if code, stdout, stderr := archRun(args...); code != exitOK || !strings.Contains(stdout, "Usage: umtrace "+args[0]) && !strings.Contains(stdout, "Usage: umtrace "+args[1]) {
			t.Errorf("%v: exit %d: %s%s", args, code, stdout, stderr)
		}
	}
}

// TestReproduceNoGPUMulti: without a GPU, the multi-rank scenarios exit 3
// like the single-process ones, before any rank starts.
func TestReproduceNoGPUMulti(t *testing.T) {
	if reproducer.Available() == nil {
		t.Skip("a CUDA device is present; this test is for machines without one")
	}
	for _, s := range reproducer.MultiScenarios {
		code, _, stderr := archRun("reproduce", "--scenario", s.Name, "--ranks", "2", "--no-nsys", "--out-dir", t.TempDir())
		if code != exitBadInput || !strings.Contains(stderr, "no CUDA device") {
			t.Errorf("%s: exit %d, want %d: %s", s.Name, code, exitBadInput, stderr)
		}
	}
	for _, args := range [][]string{
		{"reproduce", "--validate", "--nsys", "/bin/true", "--out-dir", t.TempDir()},
		{"reproduce", "--scenario", "race", "--sanitizer", "racecheck", "--out-dir", t.TempDir()},
		{"reproduce", "--scenario", "oom", "--no-nsys", "--out-dir", t.TempDir()},
	} {
		if code, _, stderr := archRun(args...); code != exitBadInput || !strings.Contains(stderr, "no CUDA device") {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitBadInput, stderr)
		}
	}
}
