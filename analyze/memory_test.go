package analyze_test

import (
	"bytes"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/analyze/analyzetest"
	"github.com/umtrace/umtrace/ingest/testshared"
	"github.com/umtrace/umtrace/report"
)

// liveAtSQL is what was live per device at t by the export's memory-usage
// records, computed in SQL: allocations (operation 0) at or before t whose
// (process, device, address) has no later allocation or free at or before
// t; host memory (kinds 0 Pageable, 1 Pinned) left out; managed = kinds 4
// and 6, device = the rest.
func liveAtSQL(t *testing.T, db *sql.DB, at int64) map[int64][2]int64 {
	t.Helper()
	rows, err := db.Query(`WITH ev AS (SELECT start, globalPid, deviceId, address, bytes, memKind, memoryOperationType AS op
			FROM CUDA_GPU_MEMORY_USAGE_EVENTS WHERE start <= ?1 AND memKind NOT IN (0, 1))
		SELECT a.deviceId, SUM(CASE WHEN a.memKind IN (4, 6) THEN 0 ELSE a.bytes END), SUM(CASE WHEN a.memKind IN (4, 6) THEN a.bytes ELSE 0 END)
		FROM ev a WHERE a.op = 0 AND NOT EXISTS (SELECT 1 FROM ev b WHERE b.globalPid = a.globalPid AND b.deviceId = a.deviceId
			AND b.address = a.address AND b.start > a.start)
		GROUP BY a.deviceId`, at)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64][2]int64{}
	for rows.Next() {
		var d, dev, man int64
		if err := rows.Scan(&d, &dev, &man); err != nil {
			t.Fatal(err)
		}
		out[d] = [2]int64{dev, man}
	}
	return out
}

// TestAllocationFailureLiveBytes plants a cudaMalloc that returned
// cudaErrorMemoryAllocation (2) into a copy of the shared PyTorch trace
// recorded with --cuda-memory-usage=true, inside its storm, and checks that
// the report says what was live on the GPU then (device and managed bytes
// equal to the SQL computation above), the GPU's total memory, what looked
// free, and the storm episode it fell in.
func TestAllocationFailureLiveBytes(t *testing.T) {
	src := testshared.Need(t, "traces", "torch_mlp_managed.sqlite")
	orig, before := analyzetest.Open(t, src)
	if len(before.Episodes) == 0 || before.Memory == nil || len(before.Memory.Failures) != 0 {
		t.Fatalf("the trace should have a storm, memory records and no failed allocation: %d episodes, memory %v", len(before.Episodes), before.Memory)
	}
	ep := before.Episodes[0]
	odb := orig.DB()
	// The failure: 1 ns after a memory event in the middle of the storm,
	// when managed and device memory are both live.
	var at int64
	if err := odb.QueryRow(`SELECT start + 1 FROM CUDA_GPU_MEMORY_USAGE_EVENTS WHERE start > ?1 AND start < ?2 AND memKind = 4
		AND start + 1 NOT IN (SELECT start FROM CUDA_GPU_MEMORY_USAGE_EVENTS) ORDER BY start LIMIT 1 OFFSET 5`,
		(3*ep.StartNs+ep.EndNs)/4, ep.EndNs).Scan(&at); err != nil {
		t.Fatalf("no managed allocation inside the storm: %v", err)
	}
	live := liveAtSQL(t, odb, at)
	var nameID, gtid, total int64
	for q, v := range map[string]*int64{
		`SELECT id FROM StringIds WHERE value = 'cudaMalloc_v3020'`:                                           &nameID,
		`SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY globalTid ORDER BY COUNT(*) DESC LIMIT 1`: &gtid,
		`SELECT totalMemory FROM TARGET_INFO_GPU WHERE id = 0`:                                                &total,
	} {
		if err := odb.QueryRow(q).Scan(v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if len(live) != 1 || live[0][0] <= 0 || live[0][1] <= 0 || total <= 0 {
		t.Fatalf("live at %d: %v (total %d): want device and managed bytes on GPU 0", at, live, total)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "oom.sqlite")
	copyFile(t, src, path)
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, "end", eventClass, globalTid, correlationId, nameId, returnValue)
		VALUES (?1, ?1 + 41000, 0, ?2, (SELECT MAX(correlationId) + 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME), ?3, 2)`, at, gtid, nameID); err != nil {
		t.Fatal(err)
	}
	db.Close()

	_, res := analyzetest.Open(t, path)
	if res.Memory == nil || len(res.Memory.Failures) != 1 {
		t.Fatalf("memory %+v: want the one planted failure", res.Memory)
	}
	f := res.Memory.Failures[0]
	if f.StartNs != at || f.Pid != gtid>>24&0xffffff || f.API != "cudaMalloc" || f.Device != 0 {
		t.Errorf("failure %+v: want cudaMalloc at %d, pid %d, GPU 0", f, at, gtid>>24&0xffffff)
	}
	if f.LiveDeviceBytes != live[0][0] || f.LiveManagedBytes != live[0][1] {
		t.Errorf("live at the failure: %d device + %d managed bytes; SQL gives %d + %d", f.LiveDeviceBytes, f.LiveManagedBytes, live[0][0], live[0][1])
	}
	if f.TotalBytes != total || f.ApparentFree != total-live[0][0] {
		t.Errorf("total %d, apparently free %d; want %d and %d", f.TotalBytes, f.ApparentFree, total, total-live[0][0])
	}
	if f.Episode != ep.Index {
		t.Errorf("failure in storm episode %d, want %d", f.Episode, ep.Index)
	}
	// "Memory apparently free": the GPU was nearly empty by the records,
	// and the report says so and what was live.
	if !strings.Contains(f.Explanation, "apparently free: the memory was taken by what the records do not show") {
		t.Errorf("explanation %q", f.Explanation)
	}
	for _, format := range []string{"md", "text"} {
		var b bytes.Buffer
		if err := report.Generate(&b, res, format); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), f.Explanation) {
			t.Errorf("%s report lacks the failure: %q", format, f.Explanation)
		}
	}
	// The rest of the analysis is unchanged by one failed call's record
	// but for the API tables.
	if res.Verdict != before.Verdict || res.Headline.StormTimeNs != before.Headline.StormTimeNs || len(res.Memory.Devices) != len(before.Memory.Devices) ||
		res.Memory.Devices[0].PeakBytes != before.Memory.Devices[0].PeakBytes {
		t.Errorf("planting a failed call changed the analysis: verdict %s→%s, storm %d→%d ns", before.Verdict, res.Verdict, before.Headline.StormTimeNs, res.Headline.StormTimeNs)
	}
}

func copyFile(t *testing.T, from, to string) { testshared.CopyFile(t, from, to) }

// TestAllocationFailureRecorded: the reproducer's oom scenario recorded on
// an H200 (docs/reproducer.md): a cuMemAlloc larger than the GPU, refused
// with CUDA_ERROR_OUT_OF_MEMORY in the middle of a managed-memory storm.
// The report gives what was live then, as SQL computes it from the
// memory-usage records, and the GPU's memory from TARGET_INFO_GPU.
func TestAllocationFailureRecorded(t *testing.T) {
	path := testshared.Testdata("reproducer", "oom.sqlite")
	r, res := analyzetest.Open(t, path)
	db := r.DB()
	var at, total, pid, dev int64
	var api string
	if err := db.QueryRow(`SELECT r.start, s.value, r.globalTid / 16777216 % 16777216 FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
		WHERE r.returnValue = 2 AND s.value LIKE 'cuMemAlloc%'`).Scan(&at, &api, &pid); err != nil {
		t.Fatalf("the recorded failure: %v", err)
	}
	if err := db.QueryRow(`SELECT DISTINCT deviceId FROM CUDA_GPU_MEMORY_USAGE_EVENTS WHERE memKind NOT IN (0, 1)`).Scan(&dev); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT totalMemory FROM TARGET_INFO_GPU WHERE id = ?`, dev).Scan(&total); err != nil {
		t.Fatal(err)
	}
	live := liveAtSQL(t, db, at)[dev]
	if res.Memory == nil || len(res.Memory.Failures) != 1 {
		t.Fatalf("memory %+v: want the one recorded failure", res.Memory)
	}
	f := res.Memory.Failures[0]
	if f.StartNs != at || f.Pid != pid || !strings.HasPrefix(api, f.API) || f.Device != dev {
		t.Errorf("failure %+v; SQL: %s at %d, pid %d, GPU %d", f, api, at, pid, dev)
	}
	if f.LiveDeviceBytes != live[0] || f.LiveManagedBytes != live[1] || live[0] <= 0 || live[1] <= 0 {
		t.Errorf("live at the failure: %d device + %d managed bytes; SQL gives %d + %d", f.LiveDeviceBytes, f.LiveManagedBytes, live[0], live[1])
	}
	if f.TotalBytes != total || f.ApparentFree != total-live[0] || f.ApparentFree < total*9/10 {
		t.Errorf("total %d, apparently free %d; want %d and %d", f.TotalBytes, f.ApparentFree, total, total-live[0])
	}
	if res.Verdict != "storm" || f.Episode == 0 {
		t.Errorf("verdict %s, failure in storm episode %d: the failure was planted mid-storm", res.Verdict, f.Episode)
	}
}
