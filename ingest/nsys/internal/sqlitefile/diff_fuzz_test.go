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
	"strings"
	"testing"
	"time"
)

// diffTables are fuzzSeed's tables and the columns read. Both readers
// are read as ingest/nsys reads them in production: the page reader's
// columns (record slots and defaults from pragma_table_xinfo, through
// ColumnDefault), as IntOnly and as Text columns, against the values
// SQLite's driver gives, converted with DriverInt and DriverText (not
// database/sql's Scan, whose conversions production does not use).
var diffTables = []struct {
	name  string
	names []string
}{
	{"a", []string{"x", "y", "z"}},
	{"b", []string{"v", "w"}},
	{"c", []string{"p", "q", "r"}},
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
		defer watchdog(data)()
		if err := diffScan(path); err != nil {
			t.Fatal(err)
		}
	})
}

// inputTimeout bounds one fuzz input: the fuzzing engine has no limit of
// its own, and a walk that does not end would hold a worker (and CI) until
// the job's timeout with nothing saved.
const inputTimeout = 20 * time.Second

// watchdog crashes the fuzzing process when an input runs past
// inputTimeout; the engine then saves the input as a failure. Call the
// returned func when the input is done.
func watchdog(data []byte) func() {
	tm := time.AfterFunc(inputTimeout, func() {
		panic(fmt.Sprintf("fuzz input %x ran past %v", data, inputTimeout))
	})
	return func() { tm.Stop() }
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
		// Bare names: SQLite reads a double-quoted name that is not a
		// column (say after a flip in the schema's text) as a string.
		q := `SELECT rowid, ` + strings.Join(tab.names, `, `) + ` FROM ` + tab.name
		stmt, err := db.Prepare(q)
		if err != nil {
			continue // the schema is damaged: nothing to compare
		}
		stmt.Close()
		layout, ok, err := diffLayout(db, tab.name, tab.names)
		if err != nil {
			return err
		}
		if !ok {
			continue // production reads this table through SQLite
		}
		for _, text := range []bool{false, true} {
			cols := []Column{{Index: RowID}}
			for _, c := range layout {
				c.IntOnly, c.Text = !text, text
				cols = append(cols, c)
			}
			got, err := pageRows(file, uint32(root), cols)
			if err != nil {
				if errors.Is(err, ErrCorrupt) {
					break
				}
				return fmt.Errorf("%s: page reader: %w", tab.name, err)
			}
			want, err := sqlRows(db, q, len(cols), text)
			if err != nil {
				return fmt.Errorf("%s: the page reader read %d rows where SQLite fails: %v", tab.name, len(got)/len(cols), err)
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("%s (text %v): page reader rows\n%q\nSQLite rows\n%q", tab.name, text, got, want)
			}
		}
	}
	return nil
}

// diffLayout returns the page reader's columns for names of table, as
// ingest/nsys derives them; false when it would read the table through
// SQLite (a default the page reader cannot give, a generated column).
func diffLayout(db *sql.DB, table string, names []string) ([]Column, bool, error) {
	rows, err := db.Query(`SELECT cid, name, type, dflt_value, pk, hidden FROM pragma_table_xinfo(?)`, table)
	if err != nil {
		return nil, false, nil // the schema is damaged
	}
	defer rows.Close()
	byName := map[string]Column{}
	pks, rowidCol := 0, ""
	for rows.Next() {
		var cid, pk, hidden int64
		var name, typ string
		var dflt sql.NullString
		if err := rows.Scan(&cid, &name, &typ, &dflt, &pk, &hidden); err != nil {
			return nil, false, err
		}
		col := Column{Index: int(cid)}
		if hidden != 0 || !ColumnDefault(&col, typ, dflt) {
			return nil, false, nil
		}
		if pk > 0 {
			pks++
			if strings.EqualFold(typ, "INTEGER") {
				rowidCol = strings.ToLower(name)
			}
		}
		byName[strings.ToLower(name)] = col
	}
	if err := rows.Err(); err != nil {
		return nil, false, nil
	}
	if pks == 1 && rowidCol != "" { // a lone INTEGER PRIMARY KEY is the rowid
		c := byName[rowidCol]
		c.Index = RowID
		byName[rowidCol] = c
	}
	var out []Column
	for _, n := range names {
		c, ok := byName[n]
		if !ok {
			return nil, false, nil
		}
		out = append(out, c)
	}
	return out, true, nil
}

// pageRows reads a table through the page reader as "value" strings
// ("NULL" for NULL, "NOTINT" for a text or blob in an IntOnly column),
// row after row, by ReadText and ReadNullable in turn.
func pageRows(f *File, root uint32, cols []Column) ([]string, error) {
	leaves, err := f.Leaves(root)
	if err != nil {
		return nil, err
	}
	c := f.NewCursor(leaves, cols)
	vals := make([]int64, 16*len(cols))
	rows := make([]sql.NullInt64, 16*len(cols))
	nulls := make([]uint8, 16*len(cols))
	texts := make([]string, 16*len(cols))
	var out []string
	notInts := 0
	for calls := 0; ; calls++ {
		var n int
		var err error
		if calls%2 == 1 {
			n, err = c.ReadNullable(rows, nulls, texts)
			for i := 0; i < n*len(cols); i++ {
				if cols[i%len(cols)].Text {
					continue
				}
				if rows[i].Valid != (nulls[i] == IsValue) {
					return nil, fmt.Errorf("ReadNullable: value %d Valid %v with nulls %d", i, rows[i].Valid, nulls[i])
				}
				vals[i] = rows[i].Int64
			}
		} else {
			n, err = c.ReadText(vals, nulls, texts)
		}
		if n == 0 && err == nil || calls > 1<<20 {
			return nil, fmt.Errorf("Read does not end (%d rows, %d calls)", n, calls)
		}
		for i := 0; i < n*len(cols); i++ {
			if nulls[i] == NotInt {
				notInts++
			}
			switch {
			case nulls[i] == IsNull:
				out = append(out, "NULL")
			case nulls[i] == NotInt:
				out = append(out, "NOTINT")
			case cols[i%len(cols)].Text:
				out = append(out, "'"+texts[i]+"'")
			default:
				out = append(out, fmt.Sprint(vals[i]))
			}
		}
		if err == io.EOF {
			if c.NotInts() != notInts {
				return nil, fmt.Errorf("NotInts %d, %d NotInt values read", c.NotInts(), notInts)
			}
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// sqlRows reads q through SQLite's driver as pageRows does; the rowid
// (the first column) is an integer either way.
func sqlRows(db *sql.DB, q string, nc int, text bool) ([]string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	vs := make([]any, nc)
	ptrs := make([]any, nc)
	for i := range vs {
		ptrs[i] = &vs[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vs {
			if text && i > 0 {
				if s, ok := DriverText(v); ok {
					out = append(out, "'"+s+"'")
				} else {
					out = append(out, "NULL")
				}
				continue
			}
			switch n, null := DriverInt(v); null {
			case IsNull:
				out = append(out, "NULL")
			case NotInt:
				out = append(out, "NOTINT")
			default:
				out = append(out, fmt.Sprint(n))
			}
		}
	}
	return out, rows.Err()
}
