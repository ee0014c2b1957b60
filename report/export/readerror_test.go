package export

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/analyze/analyzetest"
	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/report"
)

// failingScan is a source whose scan of one table fails, as a damaged
// table analysis never reads does.
type failingScan struct {
	ingest.Source
	table string
}

func (f failingScan) Scan(t *ingest.Table, fn func(arrow.RecordBatch) error) error {
	if t.Name == f.table {
		return fmt.Errorf("run.sqlite: reading ThreadNames: corrupt SQLite file (database disk image is malformed)")
	}
	return f.Source.Scan(t, fn)
}

// TestReadErrorIsNotAWriteError: a table the source cannot read is a
// ReadError (the input's fault: umtrace export exits 3), not "write
// PATH: ..." (exit 4), and leaves no temporary file behind.
func TestReadErrorIsNotAWriteError(t *testing.T) {
	path := sharedTrace(t, "um_pingpong_default")
	r, res := analyzetest.Open(t, path)
	dir := t.TempDir()
	row := report.SummaryRowFromResult("x", filepath.Base(path), "sha", "test", res)
	err := Trace(failingScan{r, "thread"}, dir, "x", "parquet", row)
	var re *ReadError
	if !errors.As(err, &re) || re.Table != "thread" {
		t.Fatalf("got %v (%T), want a ReadError of table thread", err, err)
	}
	if strings.HasPrefix(err.Error(), "write") || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("message %q", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "thread", "*", ".part-*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if _, err := os.Stat(PartPath(dir, "api", "x", "parquet")); err != nil {
		t.Errorf("the tables before it: %v", err)
	}
}
