package analyze_test

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/umtrace/umtrace/analyze/analyzetest"
	"github.com/umtrace/umtrace/ingest/testshared"
)

// TestDuplicateStringIds: kernel names are interned unlooked-up from the
// shared StringIds dictionary and merged after the pass. A copy of the
// PyTorch trace whose longest-running kernel name (by total time) is held twice in StringIds (a
// new id with the same string, half the kernels pointed at it: what a
// redacted or merged export can hold) must analyze exactly as the
// original.
func TestDuplicateStringIds(t *testing.T) {
	src := testshared.Need(t, "traces", "torch_mlp_managed.sqlite")
	path := filepath.Join(t.TempDir(), "dup.sqlite")
	testshared.CopyFile(t, src, path)
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	var old, fresh, n int64
	if err := db.QueryRow(`SELECT demangledName, COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1 ORDER BY SUM("end" - start) DESC, 1 LIMIT 1`).Scan(&old, &n); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT MAX(id) + 1 FROM StringIds`).Scan(&fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO StringIds (id, value) SELECT ?1, value FROM StringIds WHERE id = ?2`, fresh, old); err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec(`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = ?1 WHERE rowid IN
		(SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE demangledName = ?2 ORDER BY start LIMIT ?3)`, fresh, old, n/2)
	if err != nil {
		t.Fatal(err)
	}
	if moved, _ := res.RowsAffected(); moved == 0 || moved == n {
		t.Fatalf("%d of %d kernels moved to the second id: want some, not all", moved, n)
	}
	db.Close()

	_, want := analyzetest.Open(t, src)
	_, got := analyzetest.Open(t, path)
	want.Trace.File, got.Trace.File = "", ""
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if string(wj) != string(gj) {
		t.Errorf("a kernel name held under two StringIds ids changed the analysis (kernels: %+v, want %+v)", got.Kernels, want.Kernels)
	}
}
