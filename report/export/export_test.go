package export

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/analyze/analyzetest"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/parquet-go/parquet-go"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/testshared"
	"github.com/umtrace/umtrace/report"
)

func sharedTrace(t *testing.T, name string) string {
	t.Helper()
	return testshared.Need(t, "traces", name+".sqlite")
}

// exportOne exports a trace and returns the row counts per table as read
// from the source.
func exportOne(t *testing.T, path, dir, format string) (map[string]int64, report.SummaryRow) {
	t.Helper()
	r, res := analyzetest.Open(t, path)
	id := report.BaseID(path)
	row := report.SummaryRowFromResult(id, filepath.Base(path), "sha", "test", res)
	if err := Trace(r, dir, id, format, row); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, tb := range ingest.Tables {
		r.Scan(tb, func(rec arrow.RecordBatch) error { counts[tb.Name] += rec.NumRows(); return nil })
	}
	return counts, row
}

// TestParquetIndependentReader reads the export with parquet-go, a
// Parquet implementation that shares no code with arrow-go's writer.
func TestParquetIndependentReader(t *testing.T) {
	path := sharedTrace(t, "torch_mlp_managed")
	dir := t.TempDir()
	counts, row := exportOne(t, path, dir, "parquet")
	id := report.BaseID(path)
	var total int64
	for _, tb := range ingest.Tables {
		p := PartPath(dir, tb.Name, id, "parquet")
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		pf, err := pq.OpenFile(f, st.Size())
		if err != nil {
			t.Fatalf("parquet-go cannot open %s: %v", p, err)
		}
		if pf.NumRows() != counts[tb.Name] {
			t.Errorf("%s: parquet-go reads %d rows, source has %d", tb.Name, pf.NumRows(), counts[tb.Name])
		}
		total += pf.NumRows()
		var cols []string
		for _, fl := range pf.Schema().Fields() {
			cols = append(cols, fl.Name())
		}
		var want []string
		for _, c := range tb.Columns {
			want = append(want, c.Name)
		}
		if strings.Join(cols, ",") != strings.Join(want, ",") {
			t.Errorf("%s columns %v, want %v", tb.Name, cols, want)
		}
		// Decode every value of every column.
		rd := pq.NewReader(pf)
		buf := make([]pq.Row, 1024)
		var n int64
		var sample string
		for {
			k, err := rd.ReadRows(buf)
			if n == 0 && k > 0 && tb == ingest.API {
				sample = buf[0][tb.Index(ingest.ColName)].String()
			}
			n += int64(k)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: read: %v", tb.Name, err)
			}
		}
		rd.Close()
		f.Close()
		if n != counts[tb.Name] {
			t.Errorf("%s: decoded %d rows, want %d", tb.Name, n, counts[tb.Name])
		}
		if tb == ingest.API && !strings.HasPrefix(sample, "cu") {
			t.Errorf("api name decodes as %q", sample)
		}
	}
	if total == 0 {
		t.Fatal("exported nothing")
	}

	// The summary table, read by column name.
	type summary struct {
		Verdict     string `parquet:"verdict"`
		StormTimeNs int64  `parquet:"storm_time_ns"`
	}
	got, err := pq.ReadFile[summary](PartPath(dir, SummaryTable, id, "parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Verdict != row.Verdict || got[0].StormTimeNs != row.StormTimeNs || row.Verdict != "storm" {
		t.Errorf("summary %+v, want %s/%d", got, row.Verdict, row.StormTimeNs)
	}
}

func TestArrowIPC(t *testing.T) {
	path := sharedTrace(t, "um_pingpong_default")
	dir := t.TempDir()
	counts, _ := exportOne(t, path, dir, "arrow")
	for _, tb := range ingest.Tables {
		f, err := os.Open(PartPath(dir, tb.Name, report.BaseID(path), "arrow"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.DefaultAllocator))
		if err != nil {
			t.Fatalf("%s: %v", tb.Name, err)
		}
		if !r.Schema().Equal(Schema(tb)) {
			t.Errorf("%s schema %v", tb.Name, r.Schema())
		}
		var n int64
		for i := range r.NumRecords() {
			rec, err := r.RecordBatch(i)
			if err != nil {
				t.Fatal(err)
			}
			n += rec.NumRows()
		}
		r.Close()
		f.Close()
		if n != counts[tb.Name] {
			t.Errorf("%s: %d rows, want %d", tb.Name, n, counts[tb.Name])
		}
	}
}

func TestSchemaDoc(t *testing.T) {
	doc := SchemaDoc()
	path := filepath.Join(testshared.Root(), "docs", "export.md")
	if os.Getenv("UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run UPDATE_DOCS=1 go test ./report/export)", err)
	}
	if string(got) != doc {
		t.Errorf("%s is stale: run UPDATE_DOCS=1 go test ./report/export", path)
	}
	for _, tb := range ingest.Tables {
		sec := "## " + tb.Name + "\n"
		i := strings.Index(string(got), sec)
		if i < 0 {
			t.Errorf("doc lacks table %s", tb.Name)
			continue
		}
		rest := string(got)[i+len(sec):]
		if j := strings.Index(rest, "\n## "); j >= 0 {
			rest = rest[:j]
		}
		for _, c := range tb.Columns {
			if !strings.Contains(rest, "| `"+c.Name+"` |") {
				t.Errorf("doc of %s lacks column %s", tb.Name, c.Name)
			}
		}
	}
	for _, d := range report.SummaryColumnDocs {
		if d[0] != "trace_id" && !strings.Contains(string(got), "| `"+d[0]+"` |") {
			t.Errorf("doc lacks summary column %s", d[0])
		}
	}
}
