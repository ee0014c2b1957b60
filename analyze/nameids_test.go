package analyze_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys"
	"github.com/umtrace/umtrace/ingest/testshared"
	"github.com/umtrace/umtrace/synth"
)

// withoutNameIDs is a reader that gives kernel names only as strings.
type withoutNameIDs struct{ *nsys.Reader }

func (withoutNameIDs) NameIDs(*ingest.Table) bool { return false }

// TestKernelNameIDsMatchStrings: the analysis reads kernel names as
// StringIds ids (ingest.NameTable) and names only what a report prints;
// reading every name as a string must give the same analysis, on the
// shared traces and on a name-diverse synth (200-byte template names,
// many ties in kernel totals, NVTX names by the hundred thousand).
func TestKernelNameIDsMatchStrings(t *testing.T) {
	small := synth.DefaultConfig
	small.Seed, small.Steps, small.KernelsPerStep, small.Episodes, small.EpisodeSteps, small.DecoySteps = 5, 150, 12, 2, 8, 3
	cfg, err := synth.WithShape(small, "name-diverse")
	if err != nil {
		t.Fatal(err)
	}
	nd := filepath.Join(t.TempDir(), "name-diverse.sqlite")
	if _, err := synth.Generate(nd, cfg); err != nil {
		t.Fatal(err)
	}
	var names int
	db, err := sql.Open("sqlite3", "file:"+nd+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT COUNT(DISTINCT demangledName) FROM CUPTI_ACTIVITY_KIND_KERNEL`).Scan(&names); err != nil || names < 500 {
		t.Fatalf("the name-diverse synth has %d distinct kernel names (%v), want hundreds", names, err)
	}
	db.Close()
	paths := []string{nd}
	for _, n := range []string{"um_pingpong_default.sqlite", "torch_mlp_managed.sqlite", "torch_mlp_device.sqlite"} {
		paths = append(paths, testshared.Need(t, "traces", n))
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			analyzeWith := func(wrap func(*nsys.Reader) ingest.Source) []byte {
				r, err := nsys.Open(path, nsys.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				res, err := analyze.Analyze(wrap(r), analyze.DefaultOptions())
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Kernels) == 0 || len(res.SyncByKernel) == 0 {
					t.Fatalf("%d top kernels, %d sync-by-kernel groups: nothing named", len(res.Kernels), len(res.SyncByKernel))
				}
				b, _ := json.Marshal(res)
				return b
			}
			byID := analyzeWith(func(r *nsys.Reader) ingest.Source {
				if !r.NameIDs(ingest.Kernel) {
					t.Fatal("the reader gives no kernel name ids")
				}
				return r
			})
			byName := analyzeWith(func(r *nsys.Reader) ingest.Source { return withoutNameIDs{r} })
			if !bytes.Equal(byID, byName) {
				t.Errorf("kernel names as ids give another analysis than names as strings (%d vs %d JSON bytes)", len(byID), len(byName))
			}
		})
	}
}
