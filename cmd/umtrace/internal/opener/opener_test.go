package opener

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/exitcode"
	"github.com/umtrace/umtrace/ingest/testshared"
)

// TestAnalyzeErrors: every error of the door names the file and carries
// its exit code.
func TestAnalyzeErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text.sqlite")
	if err := os.WriteFile(text, []byte("this is not a trace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		code int
		msg  string
	}{
		{filepath.Join(dir, "missing.sqlite"), exitcode.BadInput, "missing.sqlite"},
		{text, exitcode.BadInput, "text.sqlite"},
		{filepath.Join(dir, "run.nsys-rep"), exitcode.BadInput, "run.nsys-rep"},
	} {
		_, err := Opener{CacheDir: t.TempDir(), Nsys: ""}.Analyze(c.path, analyze.DefaultOptions())
		if err == nil {
			t.Errorf("%s: no error", c.path)
			continue
		}
		if got := exitcode.Of(err); got != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: exit %d, %q; want exit %d naming %q", c.path, got, err, c.code, c.msg)
		}
	}
}

// TestStepRangeIsUsage: a step range the trace lacks is the option's
// fault (exit 2), not the trace's.
func TestStepRangeIsUsage(t *testing.T) {
	p := testshared.Testdata("reproducer", "multi", "multi-gpu.rank0.sqlite")
	opts := analyze.DefaultOptions()
	opts.StepRange = "nosuch"
	_, err := Opener{}.Analyze(p, opts)
	var sr *analyze.StepRangeError
	if exitcode.Of(err) != exitcode.Usage || !errors.As(err, &sr) {
		t.Errorf("exit %d, %v; want a usage error", exitcode.Of(err), err)
	}
	tr, err := Opener{}.Analyze(p, analyze.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.SQLite != p || tr.Result != tr.File.Whole || tr.Result.Trace.File != filepath.Base(p) {
		t.Errorf("trace %+v", tr)
	}
}

func TestIsReport(t *testing.T) {
	for p, want := range map[string]bool{"a.nsys-rep": true, "A.QDREP": true, "a.sqlite": false, "nsys-rep": false} {
		if IsReport(p) != want {
			t.Errorf("IsReport(%q) = %v", p, !want)
		}
	}
}
