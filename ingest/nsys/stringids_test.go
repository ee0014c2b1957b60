package nsys

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys/internal/sqlitefile"
)

// TestStringIDsPagesMatchDriver reads StringIds of every shared export
// through the page reader and through SQLite: every id resolves to the
// same value (and the same "unknown" for ids not in the table), and the
// page path's shared dictionary holds the same strings.
func TestStringIDsPagesMatchDriver(t *testing.T) {
	for _, path := range allExports(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			r, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := r.strtab.stringIDsPages()
			if err != nil || got == nil {
				t.Fatalf("page path: %v, %v", got, err)
			}
			r2, err := Open(path, Options{Read: readPaths[2].path})
			if err != nil {
				t.Fatal(err)
			}
			defer r2.Close()
			want, err := r2.strtab.stringIDs()
			if err != nil {
				t.Fatal(err)
			}
			if want.offs != nil {
				t.Fatal("the driver path used the page reader")
			}
			n := int64(len(got.offs)) - 1
			if n != int64(len(want.loc)) || n == 0 {
				t.Fatalf("ids 0..%d through the pages, 0..%d through SQLite", n-1, len(want.loc)-1)
			}
			if got.dict.Len() != int(n) {
				t.Fatalf("shared dictionary has %d entries, want %d", got.dict.Len(), n)
			}
			for id := int64(-2); id < n+2; id++ {
				if got.has(id) != want.has(id) || got.get(id) != want.get(id) {
					t.Fatalf("id %d: pages %v %q, SQLite %v %q", id, got.has(id), got.get(id), want.has(id), want.get(id))
				}
			}
		})
	}
}

// TestStringIDsPagesLongValues: values that spill to overflow pages and a
// table of many read windows come through the page path as SQLite gives
// them.
func TestStringIDsPagesLongValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sqlite")
	db, err := openRW(path)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)`)
	exec(`BEGIN`)
	want := map[int64]string{}
	for id := int64(0); id < 20000; id++ {
		v := fmt.Sprintf("kernel_%d<%s>", id, strings.Repeat("x", int(id%300)))
		if id%997 == 0 {
			v = strings.Repeat(fmt.Sprint(id), 3000) // several overflow pages
		}
		if id%10 == 3 {
			continue // a gap
		}
		want[id] = v
		exec(`INSERT INTO StringIds VALUES (?, ?)`, id, v)
	}
	exec(`COMMIT`)
	db.Close()
	r := newReader(store{}, Options{})
	r.pages, err = sqlitefile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.pages.Close()
	if r.db, err = openRW(path); err != nil {
		t.Fatal(err)
	}
	defer r.db.Close()
	s, err := r.strtab.stringIDsPages()
	if err != nil || s == nil {
		t.Fatalf("page path: %v, %v", s, err)
	}
	for id := int64(0); id < 20000; id++ {
		v, ok := want[id]
		if s.has(id) != ok || (ok && s.get(id) != v) {
			t.Fatalf("id %d: has %v, got %.40q…, want %.40q…", id, s.has(id), s.get(id), v)
		}
	}
}

// TestStringIDsIndex: the page path keeps StringIds as an index and reads
// values when asked for. On every shared export each id resolves as
// SQLite gives it, its flags are NameFlags of its value, and a kernel scan
// of name ids (what the analysis reads) names through Names every kernel
// as a scan of names does, with one id per distinct name.
func TestStringIDsIndex(t *testing.T) {
	for _, path := range allExports(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			r, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			idx, err := r.strtab.stringIDs()
			if err != nil || !idx.lazy {
				t.Fatalf("page path: lazy %v, %v", idx != nil && idx.lazy, err)
			}
			r2, err := Open(path, Options{Read: readPaths[2].path})
			if err != nil {
				t.Fatal(err)
			}
			defer r2.Close()
			want, err := r2.strtab.stringIDs()
			if err != nil || want.lazy {
				t.Fatalf("driver path: lazy %v, %v", want != nil && want.lazy, err)
			}
			n := int64(len(want.loc))
			var ids []int64
			for id := int64(-2); id < n+2; id++ {
				if idx.has(id) != want.has(id) || idx.get(id) != want.get(id) {
					t.Fatalf("id %d: index %v %q, SQLite %v %q", id, idx.has(id), idx.get(id), want.has(id), want.get(id))
				}
				if want.has(id) && r.NameFlags(id) != ingest.NameFlags(want.get(id)) {
					t.Fatalf("id %d: flags %v, want %v", id, r.NameFlags(id), ingest.NameFlags(want.get(id)))
				}
				ids = append(ids, id)
			}
			got, err := r.Names(ids)
			if err != nil {
				t.Fatal(err)
			}
			for i, id := range ids {
				if got[i] != want.get(id) {
					t.Fatalf("Names: id %d is %q, want %q", id, got[i], want.get(id))
				}
			}
			if r.SourceTable(ingest.Kernel) == "" {
				if r.NameIDs(ingest.Kernel) {
					t.Fatal("NameIDs(kernel) is true without a kernel table")
				}
				return
			}
			if !r.NameIDs(ingest.Kernel) {
				t.Fatal("NameIDs(kernel) is false on the page path")
			}
			var names []string
			var sids []int64
			scan := func(cols []string, fn func(arrow.RecordBatch)) {
				if err := r.ScanColumns(ingest.Kernel, cols, func(b arrow.RecordBatch) error { fn(b); return nil }); err != nil {
					t.Fatal(err)
				}
			}
			scan([]string{ingest.ColName}, func(b arrow.RecordBatch) {
				s := ingest.Str(b, ingest.Kernel, ingest.ColName)
				for i := 0; i < s.Len(); i++ {
					names = append(names, s.Value(i))
				}
			})
			scan([]string{ingest.ColNameID}, func(b arrow.RecordBatch) {
				s := ingest.I64(b, ingest.Kernel, ingest.ColNameID)
				for i := 0; i < s.Len(); i++ {
					sids = append(sids, s.Value(i))
				}
			})
			if len(names) != len(sids) {
				t.Fatalf("%d names, %d ids", len(names), len(sids))
			}
			byName := map[string]int64{}
			resolved, err := r.Names(sids)
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range names {
				if resolved[i] != n {
					t.Fatalf("kernel %d: id %d names %q, want %q", i, sids[i], resolved[i], n)
				}
				if id, ok := byName[n]; ok && id != sids[i] {
					t.Fatalf("%q has ids %d and %d", n, id, sids[i])
				}
				byName[n] = sids[i]
			}
		})
	}
}

// TestSortUint64s: the radix sort agrees with slices.Sort, on inputs below
// and above its cut-over, with repeats.
func TestSortUint64s(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 100, 5000, 100000} {
		x := make([]uint64, n)
		for i := range x {
			x[i] = rng.Uint64()
			if i%7 == 0 && i > 0 {
				x[i] = x[i-1] // repeats
			}
			if i%11 == 0 {
				x[i] >>= rng.IntN(64) // small values: high digits zero
			}
		}
		want := slices.Clone(x)
		slices.Sort(want)
		sortUint64s(x)
		if !slices.Equal(x, want) {
			t.Fatalf("n=%d: radix sort differs from slices.Sort", n)
		}
	}
}
