package nsys

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

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
			got, err := r.stringIDsPages()
			if err != nil || got == nil {
				t.Fatalf("page path: %v, %v", got, err)
			}
			defer useReadPath(2)()
			r2, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer r2.Close()
			want, err := r2.stringIDs()
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
	r := &Reader{}
	r.pages, err = sqlitefile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.pages.Close()
	if r.db, err = openRW(path); err != nil {
		t.Fatal(err)
	}
	defer r.db.Close()
	s, err := r.stringIDsPages()
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
