package nsys

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/ingest"
)

// copyTrace copies a shared trace into a temporary directory.
func copyTrace(t testing.TB, src string) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	p := filepath.Join(t.TempDir(), filepath.Base(src))
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
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
		restore := useReadPath(i)
		r, err := Open(p, Options{})
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
		restore()
	}
}

func rowsN(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return strconv.FormatInt(n, 10) + " rows"
}
