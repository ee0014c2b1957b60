package nsys

import (
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/ingest"
)

// TestScanDropsLayout: a table's page plan and its leaves' bounds live
// while a scan reads it; the last scan's end drops both, and a later scan
// makes them again and reads the same rows. StringIds' plan, pinned, stays.
func TestScanDropsLayout(t *testing.T) {
	path := filepath.Join(sharedDir(t, "traces"), "torch_mlp_managed.sqlite")
	r, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src := r.SourceTable(ingest.API)
	pt, done, err := r.layouts.scanLayout(src)
	if err != nil || pt == nil {
		t.Fatalf("%s: no page plan (%v)", src, err)
	}
	if len(pt.leaves) < 2 {
		t.Fatalf("%s has %d leaf pages: the test needs a table of several", src, len(pt.leaves))
	}
	bounded := func() int {
		n := 0
		for _, p := range pt.leaves {
			if lo, hi := r.pages.Bound(p); lo != math.MinInt64 || hi != math.MaxInt64 {
				n++
			}
		}
		return n
	}
	if n := bounded(); n < len(pt.leaves)-1 { // the first leaf may be bounded by nothing below
		t.Fatalf("while scanned: %d of %d leaves bounded", n, len(pt.leaves))
	}
	count := func() int64 {
		var rows int64
		if err := r.ScanColumns(ingest.API, nil, func(b arrow.RecordBatch) error { rows += b.NumRows(); return nil }); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	first := count() // a scan beside the held one: the plan stays
	if n := bounded(); n < len(pt.leaves)-1 || r.layouts.m[src] != pt {
		t.Fatalf("after a scan beside another: %d of %d leaves bounded, plan kept %v", n, len(pt.leaves), r.layouts.m[src] == pt)
	}
	done()
	if n := bounded(); n != 0 {
		t.Errorf("after the last scan: %d leaves still bounded", n)
	}
	if _, ok := r.layouts.m[src]; ok {
		t.Error("after the last scan: the plan is kept")
	}
	if again := count(); again != first || first == 0 {
		t.Errorf("rows read again: %d, first %d", again, first)
	}
	if _, ok := r.layouts.m[src]; ok {
		t.Error("after a scan of its own: the plan is kept")
	}

	sp, err := r.layouts.pageLayout("StringIds")
	if err != nil || sp == nil {
		t.Fatalf("StringIds: no page plan (%v)", err)
	}
	_, done, _ = r.layouts.scanLayout("StringIds")
	done()
	if r.layouts.m["StringIds"] != sp {
		t.Error("StringIds' pinned plan dropped after a scan")
	}
}

// TestSparseRowids: rowids need not be dense. A table with rows at rowids
// -2^63, 2^62 and 2^63-1 beside its own is read whole on every read path,
// and its row estimate stays within what its pages hold (a span of 2^62
// sized a slice of 2^62 records, and the SQLite path's batch channels,
// and an exclusive upper bound missed rowid 2^63-1).
func TestSparseRowids(t *testing.T) {
	path := copyTrace(t, filepath.Join(sharedDir(t, "traces"), "um_pingpong_default.sqlite"))
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	const table = "CUPTI_ACTIVITY_KIND_MEMCPY"
	var cols []string
	rows, err := db.Query(`SELECT name FROM pragma_table_info(?) WHERE pk = 0`, table)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, `"`+c+`"`)
	}
	rows.Close()
	list := strings.Join(cols, ", ")
	for _, id := range []int64{math.MinInt64, 1 << 62, math.MaxInt64} {
		if _, err := db.Exec(fmt.Sprintf(`INSERT INTO %s (rowid, %s) SELECT ?, %s FROM %s WHERE rowid > 0 LIMIT 1`, table, list, list, table), id); err != nil {
			t.Fatal(err)
		}
	}
	var want int64
	if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&want); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for i, rp := range readPaths {
		r, err := Open(path, Options{Read: rp.path})
		if err != nil {
			t.Fatal(err)
		}
		est := r.EstimateRows(ingest.Memcpy)
		var got int64
		err = r.ScanColumns(ingest.Memcpy, nil, func(b arrow.RecordBatch) error { got += b.NumRows(); return nil })
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", readPaths[i].name, err)
		}
		if got != want {
			t.Errorf("%s: %d rows read, want %d", rp.name, got, want)
		}
		if est < want || est > 1<<30 {
			t.Errorf("%s: %d rows estimated for %d rows in a small file", rp.name, est, want)
		}
	}
}

// TestLayoutsAtOnce: scans asking for the plans of several tables at once
// (a 16-core read) each get their table's one plan, made once, and a scan
// that ends drops it only when it is the last.
func TestLayoutsAtOnce(t *testing.T) {
	path := filepath.Join(sharedDir(t, "traces"), "torch_mlp_managed.sqlite")
	r, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var srcs []string
	for _, tb := range []*ingest.Table{ingest.API, ingest.Kernel, ingest.Memcpy, ingest.Sync} {
		if s := r.SourceTable(tb); s != "" {
			srcs = append(srcs, s)
		}
	}
	const each = 8
	got := make([][]*pageTable, len(srcs))
	dones := make([][]func(), len(srcs))
	var wg sync.WaitGroup
	for i, src := range srcs {
		got[i], dones[i] = make([]*pageTable, each), make([]func(), each)
		for k := range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pt, done, err := r.layouts.scanLayout(src)
				if err != nil || pt == nil {
					t.Errorf("%s: no plan (%v)", src, err)
					return
				}
				got[i][k], dones[i][k] = pt, done
			}()
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, src := range srcs {
		for k := range each {
			if got[i][k] != got[i][0] {
				t.Errorf("%s: scan %d got another plan than scan 0", src, k)
			}
		}
		if pt := got[i][0]; pt.scans != each {
			t.Errorf("%s: %d scans counted, want %d", src, pt.scans, each)
		}
		for _, done := range dones[i] {
			done()
		}
		r.layouts.mu.Lock()
		_, kept := r.layouts.m[src]
		r.layouts.mu.Unlock()
		if kept {
			t.Errorf("%s: plan kept after its last scan", src)
		}
	}
}
