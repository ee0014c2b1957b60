package nsys

import (
	"database/sql"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/testshared"
)

// copyTrace copies a shared trace into a temporary directory.
func copyTrace(t testing.TB, src string) string {
	p := filepath.Join(t.TempDir(), filepath.Base(src))
	testshared.CopyFile(t, src, p)
	return p
}

// scanAll scans every table of r and returns its row counts.
func scanAll(t testing.TB, r *Reader) map[string]int64 {
	t.Helper()
	n := map[string]int64{}
	for _, tab := range ingest.Tables {
		err := r.Scan(tab, func(rec arrow.RecordBatch) error {
			n[tab.Name] += rec.NumRows()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// Real exports hold only in-range values: the checks must stay quiet on
// every one of them (each path of the read is the same fill).
func TestRangeChecksQuietOnRealExports(t *testing.T) {
	for _, p := range allExports(t) {
		r, err := Open(p, Options{})
		if err != nil {
			if strings.Contains(p, "emptytrace") {
				continue
			}
			t.Fatal(err)
		}
		scanAll(t, r)
		if w := r.Warnings(); len(w) > 0 {
			t.Errorf("%s: %q", filepath.Base(p), w)
		}
		r.Close()
	}
}

// Out-of-range enums and ids, unresolved string ids and inverted times,
// planted with SQL UPDATE in a copy of a real storm trace, become
// "unknown" (or leave the row out), each with one counted warning, on
// every read path.
func TestRangeChecksOnPlantedValues(t *testing.T) {
	orig := filepath.Join(sharedDir(t, "traces"), "um_pingpong_default.sqlite")
	p := copyTrace(t, orig)
	db, err := openRW(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		// Two UM copies get kinds out of range: -45 once crashed analyze, -1 made a copy a kernel.
		`UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind=-45 WHERE rowid=(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_MEMCPY)`,
		`UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind=-1 WHERE rowid=(SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_MEMCPY)`,
		`UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET migrationCause=99, srcKind=-3, dstKind=1000 WHERE rowid IN (SELECT rowid FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind=11 LIMIT 3)`,
		`UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET streamId=-7 WHERE rowid IN (SELECT rowid FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind=12 LIMIT 2)`,
		`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId=-5, demangledName=987654321 WHERE rowid=(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)`,
		`UPDATE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION SET syncType=77 WHERE rowid=(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)`,
		`UPDATE CUDA_UM_GPU_PAGE_FAULT_EVENTS SET faultAccessType=9 WHERE rowid IN (SELECT rowid FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS LIMIT 4)`,
		`UPDATE CUDA_GPU_MEMORY_USAGE_EVENTS SET memKind=50, memoryOperationType=3`,
		`UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET "end"=start-1 WHERE rowid=(SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME)`,
		`UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET eventClass=-2 WHERE rowid=(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var memUsage int64
	if err := db.QueryRow(`SELECT count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS`).Scan(&memUsage); err != nil {
		t.Fatal(err)
	}
	db.Close()
	want := []string{
		"CUDA_GPU_MEMORY_USAGE_EVENTS.memKind: " + rowsN(memUsage) + " with values outside 0..7, read as 7 (unknown) (e.g. 50)",
		"CUDA_GPU_MEMORY_USAGE_EVENTS.memoryOperationType: " + rowsN(memUsage) + " with values outside 0..1, read as -1 (unknown) (e.g. 3)",
		"CUDA_UM_GPU_PAGE_FAULT_EVENTS.faultAccessType: 4 rows with values outside 0..4, read as 0 (unknown) (e.g. 9)",
		"CUPTI_ACTIVITY_KIND_KERNEL.demangledName: 1 row with ids not in StringIds, read as \"[unknown string id N]\" (e.g. 987654321)",
		"CUPTI_ACTIVITY_KIND_KERNEL.deviceId: 1 row with ids outside 0..65535, read as -1 (unknown) (e.g. -5)",
		"CUPTI_ACTIVITY_KIND_MEMCPY.copyKind: 2 rows with values outside 0..13, read as 0 (unknown) (e.g. -45)",
		"CUPTI_ACTIVITY_KIND_MEMCPY.dstKind: 3 rows with values outside 0..7, read as 7 (unknown) (e.g. 1000)",
		"CUPTI_ACTIVITY_KIND_MEMCPY.migrationCause: 3 rows with values outside 0..5, read as 0 (unknown) (e.g. 99)",
		"CUPTI_ACTIVITY_KIND_MEMCPY.srcKind: 3 rows with values outside 0..7, read as 7 (unknown) (e.g. -3)",
		"CUPTI_ACTIVITY_KIND_MEMCPY.streamId: 2 rows with ids outside 0..4294967295, read as -1 (unknown) (e.g. -7)",
		"CUPTI_ACTIVITY_KIND_RUNTIME.end: 1 row with end before start, left out; the example is end-start (e.g. -1)",
		"CUPTI_ACTIVITY_KIND_RUNTIME.eventClass: 1 row with values outside 0..65535, read from the API name (e.g. -2)",
		"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION.syncType: 1 row with values outside 0..4, read as 0 (unknown) (e.g. 77)",
	}
	ro, err := Open(orig, Options{})
	if err != nil {
		t.Fatal(err)
	}
	origRows := scanAll(t, ro)
	ro.Close()
	for i := range readPaths {
		r, err := Open(p, Options{Read: readPaths[i].path})
		if err != nil {
			t.Fatal(err)
		}
		rows := scanAll(t, r)
		// Scanning again must not double the counts.
		scanAll(t, r)
		got := r.Warnings()
		if !slices.Equal(got, want) {
			t.Errorf("%s: warnings\n%s\nwant\n%s", readPaths[i].name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for name, n := range origRows {
			w := n
			if name == ingest.API.Name {
				w-- // the inverted row
			}
			if rows[name] != w {
				t.Errorf("%s: %s has %d rows, want %d", readPaths[i].name, name, rows[name], w)
			}
		}
		// The replaced values are what the consumers see.
		kinds := map[int32]int{}
		err = r.Scan(ingest.Memcpy, func(rec arrow.RecordBatch) error {
			k := ingest.I32(rec, ingest.Memcpy, ingest.ColCopyKind)
			for j := 0; j < k.Len(); j++ {
				kinds[k.Value(j)]++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if kinds[0] != 2 || len(kinds) != 3 {
			t.Errorf("%s: copy kinds %v, want two unknown (0) beside 11 and 12", readPaths[i].name, kinds)
		}
		r.Close()
	}
}

func rowsN(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return strconv.FormatInt(n, 10) + " rows"
}

// A value of the wrong storage class in an integer column (text or a blob,
// as a byte flip in a record header or a hand-edited file leaves it) is
// read as NULL with a counted warning, and a real converts as SQLite's
// sqlite3_column_int64 does (toward zero, saturating), on every read path:
// the page reader, the bulk C reader and the driver give the same figures
// and the same warnings.
func TestNonIntegerValuesOnEveryReadPath(t *testing.T) {
	orig := filepath.Join(sharedDir(t, "traces"), "um_pingpong_default.sqlite")
	p := copyTrace(t, orig)
	db, err := openRW(p)
	if err != nil {
		t.Fatal(err)
	}
	var memcpyRow, origBytes int64
	if err := db.QueryRow(`SELECT rowid, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY rowid LIMIT 1 OFFSET 5`).Scan(&memcpyRow, &origBytes); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start='abc' WHERE rowid=(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)`,
		`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId=x'01' WHERE rowid=(SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)`,
		// '12abc' was 12 through the page reader and NULL through the driver.
		`UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId='12abc' WHERE rowid IN (SELECT rowid FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 3)`,
		`UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes=4096.75, correlationId=1e300 WHERE rowid=` + strconv.FormatInt(memcpyRow, 10),
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	want := []string{
		"CUPTI_ACTIVITY_KIND_KERNEL.deviceId: 1 row with text or blob values in an integer column, read as NULL",
		"CUPTI_ACTIVITY_KIND_KERNEL.start: 1 row with NULL start, left out (e.g. 0)",
		"CUPTI_ACTIVITY_KIND_KERNEL.start: 1 row with text or blob values in an integer column, read as NULL",
		"CUPTI_ACTIVITY_KIND_RUNTIME.correlationId: 3 rows with text or blob values in an integer column, read as NULL",
	}
	ro, err := Open(orig, Options{})
	if err != nil {
		t.Fatal(err)
	}
	origRows := scanAll(t, ro)
	origMemcpy := digest(t, ro, ingest.Memcpy)
	ro.Close()
	var first map[string]map[string]int64
	for i := range readPaths {
		r, err := Open(p, Options{Read: readPaths[i].path})
		if err != nil {
			t.Fatal(err)
		}
		rows := scanAll(t, r)
		got := r.Warnings()
		if !slices.Equal(got, want) {
			t.Errorf("%s: warnings\n%s\nwant\n%s", readPaths[i].name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for name, n := range origRows {
			if name == ingest.Kernel.Name {
				n-- // the text start
			}
			if rows[name] != n {
				t.Errorf("%s: %s has %d rows, want %d", readPaths[i].name, name, rows[name], n)
			}
		}
		ds := map[string]map[string]int64{}
		for _, tab := range ingest.Tables {
			ds[tab.Name] = digest(t, r, tab)
		}
		r.Close()
		m := ds[ingest.Memcpy.Name]
		if w := origMemcpy[ingest.ColBytes] - origBytes + 4096; m[ingest.ColBytes] != w {
			t.Errorf("%s: memcpy bytes sum %d, want %d (4096.75 read as 4096)", readPaths[i].name, m[ingest.ColBytes], w)
		}
		if first == nil {
			first = ds
			continue
		}
		for tab, d := range first {
			for k, v := range d {
				if ds[tab][k] != v {
					t.Errorf("%s %s: %s %d, %s %d", tab, k, readPaths[i].name, ds[tab][k], readPaths[0].name, v)
				}
			}
		}
	}
}

// TestEndBeforeStartOverflow: an end more than 2^63 ns before its start
// (end -2^63, start near 2^63) is quoted as -2^63, not as the wrapped,
// positive difference (8).
func TestEndBeforeStartOverflow(t *testing.T) {
	c := &checks{}
	if c.times("T", sql.NullInt64{Int64: math.MaxInt64 - 7, Valid: true}, sql.NullInt64{Int64: math.MinInt64, Valid: true}, true) {
		t.Fatal("an end before its start taken")
	}
	c.times("U", sql.NullInt64{Int64: 10, Valid: true}, sql.NullInt64{Int64: 4, Valid: true}, true)
	for k, a := range c.m {
		want := map[string]int64{"T": math.MinInt64, "U": -6}[k.table]
		if a.example != want {
			t.Errorf("%s: example %d, want %d", k.table, a.example, want)
		}
	}
	if len(c.m) != 2 {
		t.Errorf("%d warnings, want 2", len(c.m))
	}
}
