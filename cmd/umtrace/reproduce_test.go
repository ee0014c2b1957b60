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
