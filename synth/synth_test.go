package synth

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
)

// smallConfig is a fast run with every planted kind.
func smallConfig(seed uint64) Config {
	c := DefaultConfig
	c.Seed = seed
	c.Steps = 80
	c.KernelsPerStep = 8
	c.Episodes = 2
	c.EpisodeSteps = 6
	c.DecoySteps = 3
	c.SyncBurstSize = 20
	c.CPUFaultsPerStep = 16
	return c
}

func generateT(t *testing.T, cfg Config) (string, *Truth) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.sqlite")
	tr, err := Generate(path, cfg)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return path, tr
}

func openT(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// realTraces returns the directory of the real nsys exports, or skips.
func realTraces(t *testing.T) string {
	t.Helper()
	testshared.Need(t, "traces", "torch_mlp_managed.sqlite")
	return testshared.Path("traces")
}

func schemas(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.Query("SELECT name, sql FROM sqlite_master WHERE type='table'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var n, s string
		if err := rows.Scan(&n, &s); err != nil {
			t.Fatal(err)
		}
		m[n] = s
	}
	return m
}

// dumpTable hashes every row of table in rowid order.
func dumpTable(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	rows, err := db.Query("SELECT * FROM " + table + " ORDER BY rowid")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	h := sha256.New()
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			fmt.Fprintf(h, "%T:%v|", v, v)
		}
		h.Write([]byte{'\n'})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestSchemaMatchesRealExport(t *testing.T) {
	dir := realTraces(t)
	path, _ := generateT(t, smallConfig(1))
	got := schemas(t, openT(t, path))
	want := schemas(t, openT(t, filepath.Join(dir, "torch_mlp_managed.sqlite")))
	for name, sql := range got {
		w, ok := want[name]
		if !ok {
			t.Errorf("table %s is not in the real export", name)
			continue
		}
		if sql != w {
			t.Errorf("table %s: CREATE TABLE differs from the real export\ngot:  %s\nwant: %s", name, sql, w)
		}
	}
	for _, name := range []string{
		"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
		"CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUDA_UM_GPU_PAGE_FAULT_EVENTS",
		"CUDA_UM_CPU_PAGE_FAULT_EVENTS", "NVTX_EVENTS", "StringIds", "ThreadNames", "META_DATA_EXPORT",
		"META_DATA_CAPTURE", "TARGET_INFO_GPU", "ANALYSIS_DETAILS", "ENUM_CUDA_MEMCPY_OPER",
	} {
		if _, ok := got[name]; !ok {
			t.Errorf("table %s missing", name)
		}
	}
	// ENUM tables carry the real rows.
	real := openT(t, filepath.Join(dir, "torch_mlp_managed.sqlite"))
	syn := openT(t, path)
	for name := range got {
		if strings.HasPrefix(name, "ENUM_") || name == "TARGET_INFO_GPU" {
			if g, w := dumpTable(t, syn, name), dumpTable(t, real, name); g != w {
				t.Errorf("table %s rows differ from the real export", name)
			}
		}
	}
}

func TestRowCountsMatchTruth(t *testing.T) {
	path, tr := generateT(t, smallConfig(2))
	db := openT(t, path)
	var total int64
	names := schemas(t, db)
	if len(names) != len(tr.Rows) {
		t.Errorf("truth counts %d tables, file has %d", len(tr.Rows), len(names))
	}
	for name := range names {
		var n int64
		if err := db.QueryRow("SELECT count(*) FROM " + name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if want, ok := tr.Rows[name]; !ok || n != want {
			t.Errorf("%s: %d rows, truth says %d (listed %v)", name, n, want, ok)
		}
		total += n
	}
	if total != tr.TotalRows {
		t.Errorf("total rows %d, truth says %d", total, tr.TotalRows)
	}
	// The JSON on disk is the returned Truth.
	b, err := os.ReadFile(TruthPath(path))
	if err != nil {
		t.Fatal(err)
	}
	var disk Truth
	if err := json.Unmarshal(b, &disk); err != nil {
		t.Fatal(err)
	}
	if disk.TotalRows != tr.TotalRows || len(disk.Episodes) != len(tr.Episodes) || disk.Verdict != "storm" {
		t.Errorf("truth on disk differs from the returned one: %+v", disk)
	}
}

func dumpAll(t *testing.T, path string) string {
	t.Helper()
	db := openT(t, path)
	var names []string
	rows, err := db.Query("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s %s\n", n, dumpTable(t, db, n))
	}
	return b.String()
}

func TestDeterministic(t *testing.T) {
	cfg := smallConfig(7)
	cfg.Threads, cfg.Streams = 3, 4
	p1, t1 := generateT(t, cfg)
	p2, t2 := generateT(t, cfg)
	if d1, d2 := dumpAll(t, p1), dumpAll(t, p2); d1 != d2 {
		t.Errorf("same seed, different rows:\n%s\nvs\n%s", d1, d2)
	}
	j1, _ := os.ReadFile(TruthPath(p1))
	j2, _ := os.ReadFile(TruthPath(p2))
	if string(j1) != string(j2) {
		t.Errorf("same seed, different truth JSON")
	}
	cfg.Seed = 8
	p3, t3 := generateT(t, cfg)
	if dumpAll(t, p1) == dumpAll(t, p3) {
		t.Errorf("seeds 7 and 8 gave the same rows")
	}
	if t1.Episodes[0].StartNs != t2.Episodes[0].StartNs || t1.Episodes[0].StartNs == t3.Episodes[0].StartNs {
		t.Errorf("episode starts: %d %d %d", t1.Episodes[0].StartNs, t2.Episodes[0].StartNs, t3.Episodes[0].StartNs)
	}
}

func queryInt(t *testing.T, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	var n sql.NullInt64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n.Int64
}

func TestPlantedEpisodesAndDecoys(t *testing.T) {
	cfg := smallConfig(3)
	path, tr := generateT(t, cfg)
	db := openT(t, path)
	if len(tr.Episodes) != cfg.Episodes || len(tr.Decoys) != cfg.decoys() {
		t.Fatalf("truth has %d episodes and %d decoys, want %d and %d", len(tr.Episodes), len(tr.Decoys), cfg.Episodes, cfg.decoys())
	}
	const sync = `SELECT r.start, r."end" FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
		WHERE s.value = 'cudaStreamSynchronize_v3020' AND r.start >= ? AND r.start < ? ORDER BY r."end" - r.start DESC LIMIT 1`
	// Median sync outside any planted block.
	median := queryInt(t, db, `SELECT r."end" - r.start d FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
		JOIN NVTX_EVENTS n ON r.start >= n.start AND r.start < n."end" AND n.text = 'train_step 2'
		WHERE s.value = 'cudaStreamSynchronize_v3020'`)
	var gpu, cpu int64
	for _, e := range tr.Episodes {
		if e.Kind != "storm" || e.LastStep-e.FirstStep+1 != cfg.EpisodeSteps || e.Slowdown < cfg.SlowdownMin || e.Slowdown > cfg.SlowdownMax {
			t.Errorf("bad episode %+v", e)
		}
		g := queryInt(t, db, "SELECT sum(numberOfPageFaults) FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS WHERE start >= ? AND start < ?", e.StartNs, e.EndNs)
		c := queryInt(t, db, "SELECT count(*) FROM CUDA_UM_CPU_PAGE_FAULT_EVENTS WHERE start >= ? AND start < ?", e.StartNs, e.EndNs)
		if g != e.GPUFaults || c != e.CPUFaults || g == 0 || c != int64(cfg.EpisodeSteps*cfg.CPUFaultsPerStep) {
			t.Errorf("episode %d-%d: %d GPU and %d CPU faults in the data, truth says %d and %d", e.FirstStep, e.LastStep, g, c, e.GPUFaults, e.CPUFaults)
		}
		h := queryInt(t, db, "SELECT sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 11 AND migrationCause IN (2, 3) AND start >= ? AND start < ?", e.StartNs, e.EndNs)
		if h != e.HtoDBytes {
			t.Errorf("episode %d-%d: %d HtoD bytes in the data, truth says %d", e.FirstStep, e.LastStep, h, e.HtoDBytes)
		}
		// Every step of the episode has a sync inflated about by the slowdown.
		for s := e.FirstStep; s <= e.LastStep; s++ {
			var ns, ne int64
			if err := db.QueryRow(`SELECT start, "end" FROM NVTX_EVENTS WHERE text = ?`, fmt.Sprintf("train_step %d", s)).Scan(&ns, &ne); err != nil {
				t.Fatal(err)
			}
			var ss, se int64
			if err := db.QueryRow(sync, ns, ne).Scan(&ss, &se); err != nil {
				t.Fatal(err)
			}
			if float64(se-ss) < 2*float64(median) {
				t.Errorf("step %d: longest sync %d ns, normal median %d ns: not inflated", s, se-ss, median)
			}
		}
		gpu += g
		cpu += c
	}
	// No faults or fault-driven migrations outside the episodes.
	if n := queryInt(t, db, "SELECT sum(numberOfPageFaults) FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS"); n != gpu {
		t.Errorf("%d GPU faults in all, %d inside episodes", n, gpu)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM CUDA_UM_CPU_PAGE_FAULT_EVENTS"); n != cpu {
		t.Errorf("%d CPU faults in all, %d inside episodes", n, cpu)
	}
	for _, d := range tr.Decoys {
		faults := queryInt(t, db, "SELECT count(*) FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS WHERE start >= ? AND start < ?", d.StartNs, d.EndNs)
		faults += queryInt(t, db, "SELECT count(*) FROM CUDA_UM_CPU_PAGE_FAULT_EVENTS WHERE start >= ? AND start < ?", d.StartNs, d.EndNs)
		faults += queryInt(t, db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE migrationCause IN (2, 3) AND start >= ? AND start < ?", d.StartNs, d.EndNs)
		if faults != 0 {
			t.Errorf("decoy %s has %d fault rows", d.Kind, faults)
		}
		steps := int64(d.LastStep - d.FirstStep + 1)
		switch d.Kind {
		case "long_kernel":
			long := queryInt(t, db, `SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
				WHERE s.value = 'flash_fwd_kernel' AND k.start >= ? AND k.start < ? AND k."end" - k.start > 10 * ?`, d.StartNs, d.EndNs, cfg.KernelNs)
			if long != steps {
				t.Errorf("long-kernel decoy: %d long kernels, want %d", long, steps)
			}
		case "prefetch_burst":
			n := queryInt(t, db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE migrationCause = 1 AND start >= ? AND start < ?", d.StartNs, d.EndNs)
			if n != steps*(prefetchesIn+prefetchesOut) {
				t.Errorf("prefetch decoy: %d user prefetch migrations, want %d", n, steps*(prefetchesIn+prefetchesOut))
			}
		case "sync_burst":
			if d.Syncs != steps*int64(1+cfg.SyncBurstSize) {
				t.Errorf("sync-burst decoy: %d syncs, want %d", d.Syncs, steps*int64(1+cfg.SyncBurstSize))
			}
		default:
			t.Errorf("unknown decoy kind %q", d.Kind)
		}
		for _, e := range tr.Episodes {
			if d.StartNs < e.EndNs && e.StartNs < d.EndNs {
				t.Errorf("decoy %+v overlaps episode %+v", d, e)
			}
		}
	}
}

// TestRealisticRows checks details an ingester relies on, as seen in the
// real exports.
func TestRealisticRows(t *testing.T) {
	path, _ := generateT(t, smallConfig(4))
	db := openT(t, path)
	checks := []struct {
		what, q string
	}{
		{"rows out of start order", `SELECT count(*) FROM (SELECT start < lag(start) OVER (ORDER BY rowid) AS inv FROM CUPTI_ACTIVITY_KIND_KERNEL) WHERE inv`},
		{"rows out of start order", `SELECT count(*) FROM (SELECT start < lag(start) OVER (ORDER BY rowid) AS inv FROM CUPTI_ACTIVITY_KIND_RUNTIME) WHERE inv`},
		{"rows out of start order", `SELECT count(*) FROM (SELECT start < lag(start) OVER (ORDER BY rowid) AS inv FROM CUPTI_ACTIVITY_KIND_MEMCPY) WHERE inv`},
		{"end before start", `SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE "end" < start`},
		{"end before start", `SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE "end" <= start`},
		{"kernels without a launch", `SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
			ON r.correlationId = k.correlationId AND k.globalPid = (r.globalTid & 0xFFFFFFFFFF000000) WHERE r.start IS NULL`},
		{"sync rows without a cudaStreamSynchronize", `SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
			ON r.correlationId = y.correlationId JOIN StringIds s ON s.id = r.nameId WHERE s.value != 'cudaStreamSynchronize_v3020' OR y.syncType != 2 OR y.start < r.start OR y."end" > r."end"`},
		{"syncs ending before their stream's last kernel", `SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y WHERE EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL k
			WHERE k.streamId = y.streamId AND k.start < y.start AND k."end" > y."end")`},
		{"UM migrations with a correlation id or stream", `SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind IN (11, 12)
			AND (correlationId != 0 OR streamId != 0 OR srcKind != 7 OR dstKind != 7 OR virtualAddress IS NULL OR migrationCause IS NULL)`},
		{"explicit copies not on the null stream", `SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind IN (1, 2) AND (streamId != 7 OR correlationId = 0 OR copyCount != 1)`},
		{"API names without a version suffix", `SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE r.eventClass = 0 AND s.value NOT GLOB '*_v[0-9]*'`},
		{"globalTid of another process", `SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE (globalTid & 0xFFFFFFFFFF000000) != (SELECT globalPid FROM PROCESSES)`},
	}
	for _, c := range checks {
		if n := queryInt(t, db, c.q); n != 0 {
			t.Errorf("%d %s", n, c.what)
		}
	}
	for _, kv := range [][2]string{
		{"SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION'", "2025.3.2.0"},
		{"SELECT value FROM META_DATA_CAPTURE WHERE name = 'PROCESS_0:COLLECT_UVM_GPU_PAGE_FAULTS'", "true"},
		{"SELECT value FROM META_DATA_CAPTURE WHERE name = 'PROCESS_0:COLLECT_UVM_CPU_PAGE_FAULTS'", "true"},
		{"SELECT value FROM StringIds WHERE id = 0", "[Unknown]"},
	} {
		var v string
		if err := db.QueryRow(kv[0]).Scan(&v); err != nil || v != kv[1] {
			t.Errorf("%s = %q (%v), want %q", kv[0], v, err, kv[1])
		}
	}
}

func TestNoStormRunIsLazy(t *testing.T) {
	cfg := smallConfig(5)
	cfg.Episodes = 0
	cfg.LongKernelDecoys, cfg.PrefetchDecoys = 0, 0
	path, tr := generateT(t, cfg)
	if tr.Verdict != "no_storm" || len(tr.Episodes) != 0 {
		t.Errorf("verdict %q with %d episodes", tr.Verdict, len(tr.Episodes))
	}
	got := schemas(t, openT(t, path))
	for _, name := range []string{"CUDA_UM_GPU_PAGE_FAULT_EVENTS", "CUDA_UM_CPU_PAGE_FAULT_EVENTS"} {
		if _, ok := got[name]; ok {
			t.Errorf("%s exists without rows (a lazy export omits it)", name)
		}
	}
}

func TestRefusesOverwrite(t *testing.T) {
	cfg := smallConfig(6)
	cfg.Steps, cfg.Episodes = 20, 0
	cfg.LongKernelDecoys, cfg.PrefetchDecoys, cfg.SyncBurstDecoys = 0, 0, 0
	path, _ := generateT(t, cfg)
	if _, err := Generate(path, cfg); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Generate: got %v, want fs.ErrExist", err)
	}
	cfg.Overwrite = true
	if _, err := Generate(path, cfg); err != nil {
		t.Errorf("Generate with Overwrite: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
	if len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

func TestValidate(t *testing.T) {
	for _, f := range []func(*Config){
		func(c *Config) { c.Steps = 0 },
		func(c *Config) { c.Streams = 0 },
		func(c *Config) { c.Threads = 65 },
		func(c *Config) { c.KernelNs = 10 },
		func(c *Config) { c.SlowdownMin, c.SlowdownMax = 5, 2 },
		func(c *Config) { c.Steps = 50 }, // too short for 3 episodes of 20 steps
		func(c *Config) { c.EpisodeSteps = 0 },
	} {
		c := DefaultConfig
		f(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("Validate accepted %+v", c)
		}
	}
	if err := DefaultConfig.Validate(); err != nil {
		t.Errorf("DefaultConfig: %v", err)
	}
}

func TestStepsForRows(t *testing.T) {
	cfg := smallConfig(9).StepsForRows(60_000)
	_, tr := generateT(t, cfg)
	if d := float64(tr.TotalRows)/60_000 - 1; d < -0.1 || d > 0.1 {
		t.Errorf("asked for 60000 rows, got %d (%d steps)", tr.TotalRows, cfg.Steps)
	}
}
