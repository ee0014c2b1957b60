package sqlitefile

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// diffTables are fuzzSeed's tables: the SQL that reads them as SQLite's
// sqlite3_column_int64 would, and the page reader's columns for the same.
var diffTables = []struct {
	name, sql string
	cols      []Column
}{
	{"a", `SELECT rowid, CAST(x AS INTEGER), CAST(y AS INTEGER), CAST(z AS INTEGER) FROM a`, []Column{{Index: RowID}, {Index: 0, DefaultNull: true}, {Index: 1, DefaultNull: true}, {Index: 2, DefaultNull: true}}},
	{"b", `SELECT rowid, CAST(v AS INTEGER), CAST(w AS INTEGER) FROM b`, []Column{{Index: RowID}, {Index: 1, DefaultNull: true}, {Index: 2, DefaultNull: true}}},
	{"c", `SELECT rowid, p, q, r FROM c`, []Column{{Index: RowID}, {Index: 0, DefaultNull: true}, {Index: 1, DefaultNull: true}, {Index: 2, Default: 7}}},
}

// mutate applies data to seed as (offset high byte, offset low byte, xor)
// triples.
func mutate(seed, data []byte) []byte {
	out := slices.Clone(seed)
	for i := 0; i+2 < len(data); i += 3 {
		off := (int(data[i])<<8 | int(data[i+1])) % len(out)
		out[off] ^= data[i+2]
	}
	return out
}

// FuzzDifferential damages fuzzSeed's database and reads its tables with
// the page reader and with SQLite. Whenever the page reader reads a table
// without an error, SQLite must read it too and give the same rows; when
// the page reader doubts the table (ErrCorrupt, ErrUnsupported) its
// callers fall back to SQLite, which gives its rows or its error.
func FuzzDifferential(f *testing.F) {
	seed := fuzzSeed(f)
	f.Add([]byte{})
	f.Add([]byte{0x02, 0x03, 0x01}) // page 2 header: cell count
	f.Add([]byte{0x02, 0x09, 0x40}) // page 2: a cell pointer
	path := filepath.Join(f.TempDir(), "diff.db")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, mutate(seed, data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := diffScan(path); err != nil {
			t.Fatal(err)
		}
	})
}

func diffScan(path string) error {
	u := url.URL{Scheme: "file", Path: path, RawQuery: "mode=ro&immutable=1"}
	db, err := sql.Open("sqlite3", u.String())
	if err != nil {
		return err
	}
	defer db.Close()
	file, err := Open(path)
	if err != nil {
		if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupported) {
			return nil
		}
		return fmt.Errorf("Open: %w", err)
	}
	defer file.Close()
	for _, tab := range diffTables {
		var root int64
		if err := db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE type='table' AND name=?`, tab.name).Scan(&root); err != nil || root <= 0 || root > 1<<31 {
			continue // the schema is damaged: nothing to compare
		}
		stmt, err := db.Prepare(tab.sql)
		if err != nil {
			continue // the schema is damaged: nothing to compare
		}
		stmt.Close()
		got, err := pageRows(file, uint32(root), tab.cols)
		if err != nil {
			if errors.Is(err, ErrCorrupt) {
				continue
			}
			return fmt.Errorf("%s: page reader: %w", tab.name, err)
		}
		want, err := sqlRows(db, tab.sql, len(tab.cols))
		if err != nil {
			return fmt.Errorf("%s: the page reader read %d rows where SQLite fails: %v", tab.name, len(got), err)
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("%s: page reader rows\n%v\nSQLite rows\n%v", tab.name, got, want)
		}
	}
	return nil
}

// pageRows reads a table through the page reader as "value" strings
// ("NULL" for NULL), row after row.
func pageRows(f *File, root uint32, cols []Column) ([]string, error) {
	leaves, err := f.Leaves(root)
	if err != nil {
		return nil, err
	}
	c := f.NewCursor(leaves, cols)
	vals := make([]int64, 16*len(cols))
	nulls := make([]uint8, 16*len(cols))
	var out []string
	for calls := 0; ; calls++ {
		n, err := c.Read(vals, nulls)
		if n == 0 && err == nil || calls > 1<<20 {
			return nil, fmt.Errorf("Read does not end (%d rows, %d calls)", n, calls)
		}
		for i := 0; i < n*len(cols); i++ {
			if nulls[i] == 1 {
				out = append(out, "NULL")
			} else {
				out = append(out, fmt.Sprint(vals[i]))
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func sqlRows(db *sql.DB, q string, nc int) ([]string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	vs := make([]sql.NullInt64, nc)
	ptrs := make([]any, nc)
	for i := range vs {
		ptrs[i] = &vs[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for _, v := range vs {
			if v.Valid {
				out = append(out, fmt.Sprint(v.Int64))
			} else {
				out = append(out, "NULL")
			}
		}
	}
	return out, rows.Err()
}
