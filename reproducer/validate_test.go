package reproducer

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/umtrace/umtrace/analyze/analyzetest"
	"github.com/umtrace/umtrace/ingest/testshared"
	"github.com/umtrace/umtrace/report"
)

var update = flag.Bool("update", false, "rewrite the golden reports under testdata/reproducer")

var traceDir = testshared.Testdata("reproducer")

// TestValidateCommittedTraces re-checks, on the redacted traces that
// `umtrace reproduce --validate` recorded on an H200 (docs/validation.md),
// that the analyzer still gives every scenario its expected verdict, and
// that the JSON report still matches the golden one.
func TestValidateCommittedTraces(t *testing.T) {
	for _, sc := range Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			trace := filepath.Join(traceDir, sc.Name+".sqlite")
			if _, err := os.Stat(trace); err != nil {
				t.Fatalf("committed trace missing: %v", err)
			}
			_, res := analyzetest.Open(t, trace)
			a := AnalysisOf(res)
			if a.Storm != sc.Storm {
				t.Errorf("verdict %s (%s), want %s", res.Verdict, res.Reason, ExpectedLabel(sc.Storm))
			}
			var buf bytes.Buffer
			if err := report.Generate(&buf, res, "json"); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join(traceDir, sc.Name+".report.json")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("golden report: %v (run go test ./reproducer -run Validate -update)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("JSON report differs from %s (if the analyzer changed on purpose, rerun with -update)", golden)
			}
		})
	}
}

// TestCommittedSanitizerLogs: the planted race is in the racecheck logs.
func TestCommittedSanitizerLogs(t *testing.T) {
	txt, err := os.ReadFile(filepath.Join(traceDir, "race.racecheck.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(txt, []byte("RACECHECK SUMMARY: 2 hazards displayed (2 errors")) {
		t.Errorf("racecheck text log lacks the planted race:\n%s", txt)
	}
	xml, err := os.ReadFile(filepath.Join(traceDir, "race.racecheck.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(xml, []byte("<text>Race condition</text>")) {
		t.Error("racecheck XML log lacks a race record")
	}
}
