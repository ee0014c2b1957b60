package analyze

import (
	"testing"

	"github.com/umtrace/umtrace/ingest/nsys"
	"github.com/umtrace/umtrace/ingest/testshared"
)

// TestReadingHeard: Options.Reading hears the read begin, then end, once
// for a file analyzed whole and split by process (one read either way),
// and the analysis after it runs with the read over.
func TestReadingHeard(t *testing.T) {
	path := testshared.Testdata("reproducer", "multi", "multi-process.sqlite")
	r, err := nsys.Open(path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var calls []bool
	opts := DefaultOptions()
	opts.SplitProcesses = true
	opts.Reading = func(on bool) { calls = append(calls, on) }
	f, err := AnalyzeFile(r, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || !calls[0] || calls[1] {
		t.Errorf("Reading heard %v, want [true false]", calls)
	}
	if len(f.Processes) < 2 {
		t.Errorf("%d processes analyzed, want the file's several (the split would not be tested)", len(f.Processes))
	}
}
