package analyze

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/umtrace/umtrace/ingest/nsys"
)

// TestManyCores: a file's analysis (whole and per process) on sixteen
// cores, with chunks of a few items so that every loop split across
// goroutines is split many times, equals the analysis on one core with
// the usual chunks, on a single-process and a four-process synth.
func TestManyCores(t *testing.T) {
	dir := t.TempDir()
	for _, shape := range []string{"easy", "address-diverse"} {
		t.Run(shape, func(t *testing.T) {
			path := smallSynth(t, dir, shape)
			run := func(procs, chunk int) []byte {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				r, err := nsys.Open(path, nsys.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				f, err := AnalyzeFile(r, Options{SplitProcesses: true, SyncSamples: true, chunk: chunk})
				if err != nil {
					t.Fatal(err)
				}
				b, err := json.Marshal(struct {
					Whole     *Result
					Processes []*Result
					Sync      map[string][]int64
				}{f.Whole, f.Processes, f.Sync})
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			want := run(1, 0)
			got := run(16, 4)
			if string(got) != string(want) {
				t.Fatalf("16 cores, small chunks: %d bytes of results differ from one core's %d", len(got), len(want))
			}
			t.Logf("%d bytes of results alike", len(want))
		})
	}
}
