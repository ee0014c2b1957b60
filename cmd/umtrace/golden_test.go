package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
)

// goldenRun runs umtrace once per format with -f FORMAT appended, checks
// the exit code, compares stdout with testdata/DIR/NAME.FORMAT, and runs
// again to check the bytes do not change. UPDATE_GOLDEN=1 (or -update)
// rewrites the files.
func goldenRun(t *testing.T, dir, name string, wantCode int, args ...string) {
	t.Helper()
	for _, format := range []string{"text", "md", "html", "json"} {
		t.Run(name+"."+format, func(t *testing.T) {
			argv := append(append([]string{}, args...), "-f", format)
			var out, errb bytes.Buffer
			if code := run(&out, &errb, argv); code != wantCode {
				t.Fatalf("%v: exit %d, want %d: %s", argv, code, wantCode, errb.String())
			}
			if out.Len() == 0 {
				t.Fatal("empty output")
			}
			golden(t, filepath.Join("testdata", dir, name+"."+format), out.Bytes())
			var again bytes.Buffer
			run(&again, &errb, argv)
			if !bytes.Equal(out.Bytes(), again.Bytes()) {
				t.Error("two runs gave different output")
			}
		})
	}
}

// TestDiffGateBatchGolden renders diff, gate and batch over the committed
// traces (testdata/traces) in text, markdown, HTML and JSON.
func TestDiffGateBatchGolden(t *testing.T) {
	def, pre, exp := tracePath(t, "um_pingpong_default"), tracePath(t, "um_pingpong_prefetch"), tracePath(t, "um_pingpong_explicit")

	// diff: the storm trace, then its prefetch fix.
	goldenRun(t, "diff", "default_to_prefetch", exitOK, "diff", def, pre)

	// gate: a storm trace, a healthy one, and the fix recorded without
	// page-fault collection (unknown), against the fix as baseline.
	tmp := t.TempDir()
	off := noFaultCopy(t, pre, tmp, "off")
	goldenRun(t, "gate", "pingpong_vs_prefetch", exitFail, "gate", def, exp, off, "--baseline", pre)

	// batch: the three traces of one directory.
	in := t.TempDir()
	for _, p := range []string{def, pre, exp} {
		abs, _ := filepath.Abs(p)
		if err := os.Symlink(abs, filepath.Join(in, filepath.Base(p))); err != nil {
			t.Fatal(err)
		}
	}
	goldenRun(t, "batch", "pingpong", exitOK, "batch", in, "--out-dir", filepath.Join(tmp, "batch"), "-q")
}

// TestAnalyzeJobGolden renders the job and separate documents of analyze:
// a file of two processes (a job from one file), two rank files (a job),
// and two unrelated traces (separate).
func TestAnalyzeJobGolden(t *testing.T) {
	multi := testshared.Testdata("reproducer", "multi")
	goldenRun(t, "analyze", "job_multi_process", exitOK, "analyze", filepath.Join(multi, "multi-process.sqlite"))
	goldenRun(t, "analyze", "job_multi_gpu", exitOK, "analyze", filepath.Join(multi, "multi-gpu.rank0.sqlite"), filepath.Join(multi, "multi-gpu.rank1.sqlite"))
	goldenRun(t, "analyze", "separate_pingpong", exitOK, "analyze", tracePath(t, "um_pingpong_default"), tracePath(t, "um_pingpong_explicit"))
}

// TestMarkdownGoldensNoEmptyHeadings: no markdown golden has a heading
// with nothing under it (the next heading at its level or above, or the
// end): a section with nothing to show is left out or says why.
func TestMarkdownGoldensNoEmptyHeadings(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*", "*.md"))
	if len(paths) < 5 {
		t.Fatalf("%d markdown goldens", len(paths))
	}
	level := func(l string) int {
		n := 0
		for n < len(l) && l[n] == '#' {
			n++
		}
		if n == 0 || n >= len(l) || l[n] != ' ' {
			return 0
		}
		return n
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		inFence := false
		for _, l := range bytes.Split(data, []byte("\n")) {
			s := string(l)
			if bytes.HasPrefix(l, []byte("```")) {
				inFence = !inFence
			}
			if len(bytes.TrimSpace(l)) > 0 && (!inFence || bytes.HasPrefix(l, []byte("```"))) {
				lines = append(lines, s)
			}
		}
		for i, l := range lines {
			h := level(l)
			if h == 0 {
				continue
			}
			if i+1 == len(lines) || (level(lines[i+1]) > 0 && level(lines[i+1]) <= h) {
				t.Errorf("%s: empty heading %q", p, l)
			}
		}
	}
}
