package nsys

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys/internal/sqlitefile"
	"github.com/umtrace/umtrace/ingest/testshared"
	"github.com/umtrace/umtrace/synth"
)

// sharedDir returns ../shared/SUB relative to the repository root, skipping
// the test when the shared material is absent.
func sharedDir(t testing.TB, sub string) string {
	t.Helper()
	return testshared.Need(t, sub)
}

func allExports(t *testing.T) []string {
	var files []string
	for _, sub := range []string{"traces", "external/nsys"} {
		m, _ := filepath.Glob(filepath.Join(sharedDir(t, sub), "*.sqlite"))
		files = append(files, m...)
	}
	if len(files) < 15 {
		t.Fatalf("found only %d exports", len(files))
	}
	return files
}

// TestRowCounts ingests every shared export and checks that each Arrow table
// has exactly the rows of its source table.
func TestRowCounts(t *testing.T) {
	for _, path := range allExports(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r, err := Open(path, Options{Mem: mem, BatchRows: 1000})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for _, tab := range ingest.Tables {
				src := r.SourceTable(tab)
				var want int64
				if src != "" {
					if err := r.DB().QueryRow(`SELECT count(*) FROM "` + src + `"`).Scan(&want); err != nil {
						t.Fatal(err)
					}
				}
				var got int64
				err := r.Scan(tab, func(rec arrow.RecordBatch) error {
					if !rec.Schema().Equal(tab.Schema()) {
						t.Fatalf("%s: schema mismatch", tab.Name)
					}
					got += rec.NumRows()
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s (from %s): %d rows, want %d", tab.Name, src, got, want)
				}
			}
		})
	}
}

func TestDetect(t *testing.T) {
	d := sharedDir(t, "traces")
	r, err := Open(filepath.Join(d, "um_pingpong_default.sqlite"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	in := r.Info()
	if in.SchemaVersion != "3.20.3" || in.ProductVersion != "2025.3.2.0" || in.MetaTable != "META_DATA_EXPORT" {
		t.Errorf("versions: %+v", in)
	}
	if !in.HasCUDA || !in.HasGPUFaultTable || !in.HasCPUFaultTable || in.CollectCPUFaults == nil || !*in.CollectCPUFaults {
		t.Errorf("features: %+v", in)
	}
	// API names: suffix stripped, raw kept; pid decoded.
	names := map[string]string{}
	pids := map[int64]bool{}
	err = r.Scan(ingest.API, func(rec arrow.RecordBatch) error {
		n := ingest.Str(rec, ingest.API, ingest.ColName)
		raw := ingest.Str(rec, ingest.API, ingest.ColRawName)
		p := ingest.I64(rec, ingest.API, ingest.ColPid)
		for i := 0; i < n.Len(); i++ {
			names[n.Value(i)] = raw.Value(i)
			pids[p.Value(i)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if names["cudaStreamSynchronize"] != "cudaStreamSynchronize_v3020" {
		t.Errorf("cudaStreamSynchronize raw name = %q", names["cudaStreamSynchronize"])
	}
	if len(pids) != 1 || !pids[1069] {
		t.Errorf("pids = %v, want {1069}", pids)
	}
	// UM totals from NSYS_SCHEMA §2.3.
	var htod, dtoh int64
	err = r.Scan(ingest.Memcpy, func(rec arrow.RecordBatch) error {
		k := ingest.I32(rec, ingest.Memcpy, ingest.ColCopyKind)
		b := ingest.I64(rec, ingest.Memcpy, ingest.ColBytes)
		c := ingest.I64(rec, ingest.Memcpy, ingest.ColCorrelationID)
		for i := 0; i < k.Len(); i++ {
			switch k.Value(i) {
			case 11:
				htod += b.Value(i)
			case 12:
				dtoh += b.Value(i)
			}
			if k.Value(i) >= 11 && !c.IsNull(i) {
				t.Fatalf("UM migration row %d has correlation id %d, want null", i, c.Value(i))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if htod != 469762048 || dtoh != 536870912 {
		t.Errorf("UM bytes HtoD %d DtoH %d, want 469762048 and 536870912", htod, dtoh)
	}
}

func TestOldExports(t *testing.T) {
	d := sharedDir(t, "external/nsys")
	r, err := Open(filepath.Join(d, "kmeans-parallel_2020.5.1_report2.sqlite"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	in := r.Info()
	if in.MetaTable != "" || !in.HasCUDA || in.HasGPUFaultTable {
		t.Errorf("kmeans info: %+v", in)
	}
	var gpus []string
	err = r.Scan(ingest.GPU, func(rec arrow.RecordBatch) error {
		n := ingest.Str(rec, ingest.GPU, ingest.ColName)
		for i := 0; i < n.Len(); i++ {
			gpus = append(gpus, n.Value(i))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 1 || gpus[0] == "" {
		t.Errorf("GPUs = %q", gpus)
	}
	e, err := Open(filepath.Join(d, "cardiac_2021.3.3_emptytrace_report1.sqlite"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Info().HasCUDA {
		t.Error("empty trace reports CUDA activity")
	}
}

func TestBadInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o444); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := filepath.Join(sharedDir(t, "traces"), "um_pingpong_explicit.sqlite")
	full, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		want       error
		msg        string
	}{
		{"empty", write("empty.sqlite", nil), ErrNotSQLite, "empty file"},
		{"text", write("notes.sqlite", []byte("hello, this is a text file\n")), ErrNotSQLite, "starts with text"},
		{"truncated", write("trunc.sqlite", full[:len(full)/3]), ErrTruncated, "truncated"},
		{"missing", filepath.Join(dir, "nope.sqlite"), os.ErrNotExist, "no such file"},
		{"nsys-rep", write("r.nsys-rep", []byte("PK\x03\x04zipdata")), ErrNotSQLite, "nsys export --type sqlite"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(c.path, Options{})
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), c.path) {
				t.Errorf("error %q: want %v mentioning %q and the path", err, c.want, c.msg)
			}
		})
	}
}

func TestNotNsys(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "other.sqlite")
	db, err := openRW(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE users(id INTEGER, name TEXT); INSERT INTO users VALUES (1,'a')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadFile(p)
	_, err = Open(p, Options{})
	if !errors.Is(err, ErrNotNsysExport) || !strings.Contains(err.Error(), "users") {
		t.Errorf("error = %v", err)
	}
	after, _ := os.ReadFile(p)
	if string(before) != string(after) {
		t.Error("input modified")
	}
}

// TestParallelRangesMatchSerial forces the parallel rowid-range path on a
// small trace and checks it yields the same rows as one serial scan.
func TestParallelRangesMatchSerial(t *testing.T) {
	path := filepath.Join(sharedDir(t, "traces"), "um_pingpong_default.sqlite")
	read := func(par int64) map[string]int64 {
		r, err := Open(path, Options{BatchRows: 500, ParallelRows: par})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		sums := map[string]int64{}
		for _, tab := range []*ingest.Table{ingest.API, ingest.Memcpy, ingest.CPUFault} {
			err := r.Scan(tab, func(rec arrow.RecordBatch) error {
				st := ingest.I64(rec, tab, ingest.ColStart)
				for i := 0; i < st.Len(); i++ {
					sums[tab.Name] += st.Value(i)
					sums[tab.Name+" rows"]++
				}
				if tab == ingest.API {
					n := ingest.Str(rec, tab, ingest.ColName)
					for i := 0; i < n.Len(); i++ {
						sums[n.Value(i)]++
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		return sums
	}
	serial := read(0)
	parallel := read(64)
	if len(serial) != len(parallel) {
		t.Fatalf("serial %v, parallel %v", serial, parallel)
	}
	for k, v := range serial {
		if parallel[k] != v {
			t.Errorf("%s: serial %d, parallel %d", k, v, parallel[k])
		}
	}
}

// digest folds every value of every column of t into a map of per-column
// sums and null counts.
func digest(t *testing.T, r *Reader, tab *ingest.Table) map[string]int64 {
	t.Helper()
	d := map[string]int64{}
	err := r.Scan(tab, func(rec arrow.RecordBatch) error {
		for ci, col := range tab.Columns {
			a := rec.Column(ci)
			d[col.Name+" nulls"] += int64(a.NullN())
			for i := 0; i < a.Len(); i++ {
				if a.IsNull(i) {
					continue
				}
				switch col.Kind {
				case ingest.Int64:
					d[col.Name] += a.(*array.Int64).Value(i)
				case ingest.Int32:
					d[col.Name] += int64(a.(*array.Int32).Value(i))
				case ingest.Uint64:
					d[col.Name] += int64(a.(*array.Uint64).Value(i))
				case ingest.String:
					d[col.Name+"="+ingest.Str(rec, tab, col.Name).Value(i)]++
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// readPaths are the three ways a table is read, fastest first.
var readPaths = []struct {
	name string
	path ReadPath
}{{"pages", ReadAuto}, {"bulk C", ReadDriver}, {"driver", ReadDriverRows}}

// useReadPath switches r to read path i; the returned func restores the
// default.
func useReadPath(r *Reader, i int) func() {
	r.opts.Read = readPaths[i].path
	return func() { r.opts.Read = ReadAuto }
}

// TestFastReadMatchesDriver checks that the page reader, the bulk C reader
// and the go-sqlite3 driver produce the same data for every table of every
// shared export, with both serial and parallel parts.
func TestFastReadMatchesDriver(t *testing.T) {
	if !fastAvailable {
		t.Fatal("the bulk reader's SQLite symbols did not resolve: umtrace would fall back to the slow driver path")
	}
	for _, path := range allExports(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			r, err := Open(path, Options{BatchRows: 777})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.pages == nil {
				t.Fatal("the page reader cannot read this export")
			}
			paged := 0
			for _, tab := range ingest.Tables {
				if src := r.SourceTable(tab); src != "" {
					if pt, err := r.layouts.pageLayout(src); err != nil {
						t.Fatal(err)
					} else if pt != nil {
						if _, ok := pt.columns(newQuery(r.cols, r.opts.BatchRows, tab, src, nil, &checks{}).ints); ok {
							paged++
						}
					}
				}
				var want map[string]int64
				for i := len(readPaths) - 1; i >= 0; i-- {
					for _, par := range []int64{1 << 40, 1000} { // serial, then parallel parts
						r.opts.ParallelRows = par
						restore := useReadPath(r, i)
						got := digest(t, r, tab)
						restore()
						if want == nil {
							want = got
							continue
						}
						if len(got) != len(want) {
							t.Errorf("%s: %d digest keys through %s, %d through the driver", tab.Name, len(got), readPaths[i].name, len(want))
						}
						for k, v := range want {
							if got[k] != v {
								t.Errorf("%s %s: %s %d, driver %d", tab.Name, k, readPaths[i].name, got[k], v)
							}
						}
					}
				}
			}
			if paged == 0 {
				t.Error("no table went through the page reader")
			}
		})
	}
}

// TestOddPath reads a trace whose path needs URI escaping, through both
// read paths.
func TestOddPath(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(sharedDir(t, "traces"), "um_pingpong_explicit.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "a b%20c?d#e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "trace 1.sqlite")
	if err := os.WriteFile(p, src, 0o444); err != nil {
		t.Fatal(err)
	}
	r, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i, p := range readPaths {
		restore := useReadPath(r, i)
		d := digest(t, r, ingest.API)
		restore()
		if d[ingest.ColName+"=cudaMemcpy"] != 16 {
			t.Errorf("%s: %d cudaMemcpy calls, want 16", p.name, d[ingest.ColName+"=cudaMemcpy"])
		}
	}
}

// TestPageLayoutRowidAlias checks which tables the page reader takes and
// how it maps an INTEGER PRIMARY KEY: a DESC one is not the rowid, and
// WITHOUT ROWID tables are left to SQLite.
func TestPageLayoutRowidAlias(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.sqlite")
	db, err := sql.Open("sqlite3", p)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE alias (id INTEGER PRIMARY KEY, v INTEGER)`,
		`CREATE TABLE descpk (id INTEGER PRIMARY KEY DESC, v INTEGER)`,
		`CREATE TABLE norowid (id INTEGER PRIMARY KEY, v INTEGER) WITHOUT ROWID`,
		`INSERT INTO alias VALUES (5, 50), (9, 90)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	ro, err := sql.Open("sqlite3", "file:"+p+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	f, err := sqlitefile.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := newReader(store{path: p, db: ro}, Options{})
	r.pages = f
	pt, err := r.layouts.pageLayout("alias")
	if err != nil || pt == nil {
		t.Fatalf("alias: %v %v", pt, err)
	}
	if c := pt.cols["id"]; c.Index != sqlitefile.RowID {
		t.Errorf("alias.id maps to %+v, want the rowid", c)
	}
	cols, ok := pt.columns([]string{`"id"`, `"v"`, "NULL"})
	if !ok {
		t.Fatal("alias columns not mapped")
	}
	cur := f.NewCursor(pt.leaves, cols)
	vals, nulls := make([]int64, 9), make([]uint8, 9)
	if n, err := cur.Read(vals, nulls); n != 2 || err != nil || vals[0] != 5 || vals[1] != 50 || vals[3] != 9 || nulls[2] != 1 {
		t.Errorf("alias rows: %d %v %v %v", n, err, vals, nulls)
	}
	for _, name := range []string{"descpk", "norowid"} {
		if pt, err := r.layouts.pageLayout(name); err != nil || pt != nil {
			t.Errorf("%s: page layout %+v, %v; want SQLite to read it", name, pt, err)
		}
	}
}

// TestReadPathsOnSynthTrace repeats the three-way read-path comparison on
// a generated trace large enough for multi-level b-trees and many ordered
// parallel parts, and checks the parts come back in rowid order.
func TestReadPathsOnSynthTrace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "synth.sqlite")
	if _, err := synth.Generate(p, synth.DefaultConfig.StepsForRows(150_000)); err != nil {
		t.Fatal(err)
	}
	r, err := Open(p, Options{BatchRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pt, err := r.layouts.pageLayout(r.SourceTable(ingest.API))
	if err != nil || pt == nil || len(pt.leaves) < 100 {
		t.Fatalf("API table: %v leaves, %v; want a multi-level tree", pt, err)
	}
	r.opts.ParallelRows = 4000 // parts of ~2000 rows: dozens per table
	for _, tab := range ingest.Tables {
		var want map[string]int64
		for i := len(readPaths) - 1; i >= 0; i-- {
			restore := useReadPath(r, i)
			got := digest(t, r, tab)
			restore()
			if want == nil {
				want = got
				continue
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s %s: %s %d, driver %d", tab.Name, k, readPaths[i].name, got[k], v)
				}
			}
		}
	}
	// Storage order: API start times of this trace rise with the rowid.
	var last int64
	rows := 0
	err = r.ScanColumns(ingest.API, []string{ingest.ColStart}, func(rec arrow.RecordBatch) error {
		st := ingest.I64(rec, ingest.API, ingest.ColStart)
		for i := 0; i < st.Len(); i++ {
			if st.Value(i) < last {
				return fmt.Errorf("row %d: start %d after %d", rows, st.Value(i), last)
			}
			last = st.Value(i)
			rows++
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
