package nsys

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/ingest/testshared"
)

// TestTimesPastTheTrace: rows with impossible times (a CUDA call from 0 to
// INT64_MAX, a kernel running for 11 days from inside the trace, a memcpy
// ending before it starts, a GPU fault at 2^62 ns) are left out at ingest
// with one warning per kind: the analysis equals that of the same export
// with those rows deleted, on every read path.
func TestTimesPastTheTrace(t *testing.T) {
	src := testshared.Testdata("traces", "um_pingpong_default.sqlite")
	crafted, ref := copyTrace(t, src), copyTrace(t, src)
	first := func(table string) string {
		return `rowid = (SELECT min(rowid) FROM ` + table + `)`
	}
	sqlUpdate(`UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = 0, "end" = 9223372036854775807 WHERE `+first("CUPTI_ACTIVITY_KIND_RUNTIME"))(t, crafted)
	sqlUpdate(`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start + 1000000000000000 WHERE `+first("CUPTI_ACTIVITY_KIND_KERNEL"))(t, crafted)
	sqlUpdate(`UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET "end" = start - 5 WHERE `+first("CUPTI_ACTIVITY_KIND_MEMCPY"))(t, crafted)
	sqlUpdate(`UPDATE CUDA_UM_GPU_PAGE_FAULT_EVENTS SET start = 4611686018427387904, "end" = 4611686018427387905 WHERE `+first("CUDA_UM_GPU_PAGE_FAULT_EVENTS"))(t, crafted)
	for _, tab := range []string{"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUDA_UM_GPU_PAGE_FAULT_EVENTS"} {
		sqlUpdate(`DELETE FROM `+tab+` WHERE `+first(tab))(t, ref)
	}
	for _, mode := range []string{"", "driver", "pages"} {
		t.Run("reader="+mode, func(t *testing.T) {
			got, warns := analyzeWarn(t, crafted, mode)
			want, refWarns := analyzeWarn(t, ref, mode)
			if got != want {
				t.Error("the analysis with the bad rows differs from the one without them")
			}
			var extra []string
			for _, w := range warns {
				if !slices.Contains(refWarns, w) {
					extra = append(extra, w)
				}
			}
			wants := []string{
				"input: CUDA_UM_GPU_PAGE_FAULT_EVENTS.end: 1 row with times past 4611686018427387904 ns, left out (e.g. 4611686018427387905)",
				"input: CUPTI_ACTIVITY_KIND_KERNEL.end: 1 row with times outside the trace (ANALYSIS_DETAILS 525389267..1543057264 ns, widened by 60000000000 ns), left out (e.g. 1000000518066038)",
				"input: CUPTI_ACTIVITY_KIND_MEMCPY.end: 1 row with end before start, left out; the example is end-start (e.g. -5)",
				"input: CUPTI_ACTIVITY_KIND_RUNTIME.end: 1 row with times past 4611686018427387904 ns, left out (e.g. 9223372036854775807)",
			}
			if len(extra) != len(wants) {
				t.Fatalf("warnings beyond the reference's: %q, want %q", extra, wants)
			}
			for i, w := range wants {
				if !strings.HasPrefix(extra[i], w) {
					t.Errorf("warning %q, want %q", extra[i], w)
				}
			}
		})
	}
}

// analyzeWarn analyzes path with Options.Read = mode: the JSON of the
// result without its warnings, and the warnings.
func analyzeWarn(t *testing.T, path, mode string) (string, []string) {
	t.Helper()
	r, err := Open(path, Options{Read: ReadPath(mode)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := analyze.Analyze(r, analyze.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	w := res.Warnings
	res.Warnings = nil
	res.Trace.File = ""
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), w
}
