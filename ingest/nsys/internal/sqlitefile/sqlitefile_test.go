package sqlitefile

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

// The tests build databases with SQLite (github.com/mattn/go-sqlite3), ask
// SQLite for the expected values, close the database and read it back
// page by page. Non-integer values are compared with CAST(x AS INTEGER),
// which SQLite computes with the same sqlite3VdbeIntValue as
// sqlite3_column_int64.

// ---- helpers -------------------------------------------------------------

// openDB opens (creating) an SQLite database on one connection, so that
// pragmas such as page_size apply to the statements that follow.
func openDB(tb testing.TB, path string, pragmas ...string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	tb.Cleanup(func() { db.Close() })
	// No fsync: the tests read the file after Close, crashes do not matter.
	for _, p := range append([]string{"PRAGMA synchronous = OFF"}, pragmas...) {
		mustExec(tb, db, p)
	}
	return db
}

func mustExec(tb testing.TB, db *sql.DB, q string, args ...any) {
	tb.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
}

func closeDB(tb testing.TB, db *sql.DB) {
	tb.Helper()
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
}

func rootPage(tb testing.TB, db *sql.DB, name string) uint32 {
	tb.Helper()
	var root int64
	if err := db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = ?`, name).Scan(&root); err != nil {
		tb.Fatalf("root page of %s: %v", name, err)
	}
	if root <= 0 || root > math.MaxUint32 {
		tb.Fatalf("root page of %s: %d", name, root)
	}
	return uint32(root)
}

// colIndex returns the record position of each column of table.
func colIndex(tb testing.TB, db *sql.DB, table string) map[string]int {
	tb.Helper()
	rows, err := db.Query(`SELECT cid, name FROM pragma_table_info(?)`, table)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	m := map[string]int{}
	for rows.Next() {
		var cid int
		var name string
		if err := rows.Scan(&cid, &name); err != nil {
			tb.Fatal(err)
		}
		m[name] = cid
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return m
}

// rows is a table read back as Cursor.Read returns it: row-major, nc
// values per row.
type rows struct {
	nc    int
	vals  []int64
	nulls []uint8
}

func (r rows) n() int { return len(r.vals) / r.nc }

// want returns SQLite's values of exprs for the rows of table, in rowid
// order.
func want(tb testing.TB, db *sql.DB, table string, exprs []string) rows {
	tb.Helper()
	q := fmt.Sprintf("SELECT %s FROM %s ORDER BY rowid", strings.Join(exprs, ", "), table)
	rs, err := db.Query(q)
	if err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
	defer rs.Close()
	nc := len(exprs)
	out := rows{nc: nc}
	scan := make([]sql.NullInt64, nc)
	ptrs := make([]any, nc)
	for i := range scan {
		ptrs[i] = &scan[i]
	}
	for rs.Next() {
		if err := rs.Scan(ptrs...); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
		for _, v := range scan {
			if v.Valid {
				out.vals = append(out.vals, v.Int64)
				out.nulls = append(out.nulls, 0)
			} else {
				out.vals = append(out.vals, 0)
				out.nulls = append(out.nulls, 1)
			}
		}
	}
	if err := rs.Err(); err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
	return out
}

// readAll reads every row of leaves, per rows per Read call, checking the
// Read contract: never more rows than fit, NULLs are 0, and io.EOF comes
// only once the rows are done, with 0 rows, and stays.
func readAll(tb testing.TB, f *File, leaves []uint32, cols []Column, per int) rows {
	tb.Helper()
	out, err := readAllErr(f, leaves, cols, per)
	if err != nil {
		tb.Fatalf("reading %d leaves, %d rows per Read: %v", len(leaves), per, err)
	}
	return out
}

func readAllErr(f *File, leaves []uint32, cols []Column, per int) (rows, error) {
	nc := len(cols)
	c := f.NewCursor(leaves, cols)
	vals := make([]int64, per*nc)
	nulls := make([]uint8, per*nc)
	out := rows{nc: nc}
	for calls := 0; ; calls++ {
		// Dirty the buffers: Read must set every entry it reports.
		for i := range vals {
			vals[i], nulls[i] = -0x5555, 7
		}
		n, err := c.Read(vals, nulls)
		if n < 0 || n > per {
			return out, fmt.Errorf("Read returned %d rows into room for %d", n, per)
		}
		for i := 0; i < n*nc; i++ {
			if nulls[i] > 1 || nulls[i] == 1 && vals[i] != 0 {
				return out, fmt.Errorf("row %d entry %d: value %d null %d", out.n()+i/nc, i%nc, vals[i], nulls[i])
			}
		}
		out.vals = append(out.vals, vals[:n*nc]...)
		out.nulls = append(out.nulls, nulls[:n*nc]...)
		if err == io.EOF {
			if n != 0 {
				return out, fmt.Errorf("io.EOF with %d rows", n)
			}
			if n, err := c.Read(vals, nulls); n != 0 || err != io.EOF {
				return out, fmt.Errorf("Read after io.EOF = %d, %v", n, err)
			}
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if n == 0 {
			return out, fmt.Errorf("Read returned 0 rows and no error")
		}
	}
}

// same reports the first differences between got and want.
func same(tb testing.TB, what string, got, want rows) {
	tb.Helper()
	if got.nc != want.nc {
		tb.Fatalf("%s: %d columns, want %d", what, got.nc, want.nc)
	}
	bad := 0
	for i := 0; i < min(len(got.vals), len(want.vals)); i++ {
		if got.vals[i] != want.vals[i] || got.nulls[i] != want.nulls[i] {
			tb.Errorf("%s: row %d column %d = %d (null %d), want %d (null %d)", what,
				i/got.nc, i%got.nc, got.vals[i], got.nulls[i], want.vals[i], want.nulls[i])
			if bad++; bad == 10 {
				break
			}
		}
	}
	if got.n() != want.n() {
		tb.Errorf("%s: %d rows, want %d", what, got.n(), want.n())
	}
	if tb.Failed() {
		tb.FailNow()
	}
}

func mustOpen(tb testing.TB, path string) *File {
	tb.Helper()
	f, err := Open(path)
	if err != nil {
		tb.Fatalf("Open(%s): %v", path, err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

// pageOf returns page p of a database image.
func pageOf(data []byte, ps int, p uint32) []byte {
	return data[int(p-1)*ps : int(p)*ps]
}

// hdrOff is the b-tree header's offset in page p.
func hdrOff(p uint32) int {
	if p == 1 {
		return headerSize
	}
	return 0
}

// cellInfo describes one cell of a table leaf page.
type cellInfo struct {
	at      int    // offset of the cell in its page
	size    uint64 // payload size
	rowid   int64
	payload int    // offset of the payload in the page
	local   int    // payload bytes on the page
	ovfl    uint32 // first overflow page, 0 if none
}

// leafCells parses the cells of a table leaf page with the file format's
// own rules (independently of Cursor).
func leafCells(tb testing.TB, pg []byte, p uint32, usable int) []cellInfo {
	tb.Helper()
	off := hdrOff(p)
	if pg[off] != leafTable {
		tb.Fatalf("page %d is not a table leaf", p)
	}
	n := int(binary.BigEndian.Uint16(pg[off+3:]))
	var cells []cellInfo
	for i := 0; i < n; i++ {
		at := int(binary.BigEndian.Uint16(pg[off+8+2*i:]))
		size, k := uvarint(pg[at:])
		rowid, k2 := uvarint(pg[at+k:])
		c := cellInfo{at: at, size: size, rowid: int64(rowid), payload: at + k + k2, local: int(size)}
		u := usable
		if x := u - 35; int(size) > x {
			m := (u-12)*32/255 - 23
			local := m + (int(size)-m)%(u-4)
			if local > x {
				local = m
			}
			c.local = local
			c.ovfl = binary.BigEndian.Uint32(pg[c.payload+local:])
		}
		cells = append(cells, c)
	}
	return cells
}

// walkLeaves lists the leaves of the b-tree at root by a plain recursive
// walk of the image, checking every page's type.
func walkLeaves(tb testing.TB, data []byte, ps int, p uint32, depth int) []uint32 {
	tb.Helper()
	if depth > 10 {
		tb.Fatalf("b-tree deeper than 10 at page %d", p)
	}
	pg := pageOf(data, ps, p)
	off := hdrOff(p)
	switch pg[off] {
	case leafTable:
		return []uint32{p}
	case interiorTable:
	default:
		tb.Fatalf("page %d has type %#x", p, pg[off])
	}
	var out []uint32
	n := int(binary.BigEndian.Uint16(pg[off+3:]))
	for i := 0; i < n; i++ {
		c := binary.BigEndian.Uint16(pg[off+12+2*i:])
		out = append(out, walkLeaves(tb, data, ps, binary.BigEndian.Uint32(pg[c:]), depth+1)...)
	}
	return append(out, walkLeaves(tb, data, ps, binary.BigEndian.Uint32(pg[off+8:]), depth+1)...)
}

// checkMoreLeaves: MoreLeaves agrees with the count of Leaves around it.
func checkMoreLeaves(t *testing.T, f *File, root uint32, n int) {
	t.Helper()
	if n < 3 {
		t.Fatalf("%d leaves: the test needs a b-tree of several levels", n)
	}
	for _, k := range []int{1, n / 2, n - 1, n, n + 1, 4 * n} {
		more, err := f.MoreLeaves(root, k)
		if err != nil || more != (n > k) {
			t.Errorf("MoreLeaves(%d, %d) = %v, %v; the table has %d leaves", root, k, more, err, n)
		}
	}
}

// checkLeaves compares leaves (from Leaves) with walkLeaves.
func checkLeaves(tb testing.TB, data []byte, ps int, root uint32, leaves []uint32) {
	tb.Helper()
	w := walkLeaves(tb, data, ps, root, 0)
	if len(w) != len(leaves) {
		tb.Fatalf("Leaves(%d): %d leaves, want %d", root, len(leaves), len(w))
	}
	for i := range w {
		if w[i] != leaves[i] {
			tb.Fatalf("Leaves(%d)[%d] = %d, want %d", root, i, leaves[i], w[i])
		}
	}
}

// serialTypes returns the serial types of the records on leaves that fit
// on their page.
func serialTypes(tb testing.TB, path string, ps int, leaves []uint32) map[uint64]int {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	seen := map[uint64]int{}
	for _, p := range leaves {
		pg := pageOf(data, ps, p)
		for _, c := range leafCells(tb, pg, p, ps) {
			if c.ovfl != 0 {
				continue
			}
			rec := pg[c.payload : c.payload+int(c.size)]
			hdr, k := uvarint(rec)
			for h := rec[k:hdr]; len(h) > 0; {
				t, k := uvarint(h)
				seen[t]++
				h = h[k:]
			}
		}
	}
	return seen
}

// ---- 1. integer serial types ---------------------------------------------

func TestIntegerSerialTypes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ints.db")
	db := openDB(t, path)
	mustExec(t, db, `CREATE TABLE t(a INTEGER, b, c INTEGER NOT NULL, d REAL)`)
	values := []int64{
		0, 1, -1, 2, -2,
		127, 128, -128, -129, 255, 256,
		32767, 32768, -32768, -32769, 65535, 65536,
		1<<23 - 1, 1 << 23, -1 << 23, -1<<23 - 1,
		1<<31 - 1, 1 << 31, -1 << 31, -1<<31 - 1, 1<<32 - 1, 1 << 32,
		1<<47 - 1, 1 << 47, -1 << 47, -1<<47 - 1, 1<<48 - 1, 1 << 48,
		1<<55 + 12345, -1<<55 - 12345,
		math.MaxInt64, math.MaxInt64 - 1, math.MinInt64, math.MinInt64 + 1,
		1e18, -1e18, 4503599627370496, 4503599627370497,
	}
	for i, v := range values {
		// d is REAL: SQLite stores integral doubles within ±2^51-ish as
		// integers, so this also reads integers out of a REAL column.
		var d any = float64(v)
		if v > 1<<51 || v < -1<<51 {
			d = nil
		}
		mustExec(t, db, `INSERT INTO t(a, b, c, d) VALUES (?, ?, ?, ?)`, v, -v, values[len(values)-1-i], d)
	}
	// A NULL (serial type 0) and 0/1 of every column.
	mustExec(t, db, `INSERT INTO t(a, b, c, d) VALUES (NULL, 0, 1, NULL)`)
	exprs := []string{"rowid", "a", "b", "c", "CAST(d AS INTEGER)"}
	cols := []Column{{Index: RowID}, {Index: 0}, {Index: 1}, {Index: 2}, {Index: 3}}
	w := want(t, db, "t", exprs)
	root := rootPage(t, db, "t")
	closeDB(t, db)

	f := mustOpen(t, path)
	leaves, err := f.Leaves(root)
	if err != nil {
		t.Fatal(err)
	}
	// Check that the data covers every integer serial type.
	seen := serialTypes(t, path, f.PageSize(), leaves)
	for st := uint64(0); st <= 9; st++ {
		if st == 7 {
			continue // REAL, covered by TestNonInteger
		}
		if seen[st] == 0 {
			t.Errorf("no value of serial type %d in the test data (seen %v)", st, seen)
		}
	}
	got := readAll(t, f, leaves, cols, 16)
	same(t, "integers", got, w)
	// Spot-check the raw values, independent of SQLite's answers.
	for i, v := range values {
		if got.vals[i*5+1] != v || got.vals[i*5+2] != -v {
			t.Errorf("row %d: a=%d b=%d, want %d %d", i, got.vals[i*5+1], got.vals[i*5+2], v, -v)
		}
	}
}

// ---- 2. NULLs, the Null column, the rowid ----------------------------------

func TestNullsAndRowID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rowid.db")
	db := openDB(t, path)
	mustExec(t, db, `CREATE TABLE t(x, id INTEGER PRIMARY KEY, y INTEGER)`)
	ids := []int64{math.MinInt64, -1 << 40, -300, -5, -1, 0, 1, 2, 127, 128, 1000, 1 << 33, 1 << 56, math.MaxInt64}
	for i, id := range ids {
		var x, y any = int64(i * 1000), nil
		if i%2 == 0 {
			x, y = nil, -id/3
		}
		mustExec(t, db, `INSERT INTO t(x, id, y) VALUES (?, ?, ?)`, x, id, y)
	}
	idx := colIndex(t, db, "t")
	if idx["id"] != 1 {
		t.Fatalf("id is column %d", idx["id"])
	}
	cols := []Column{
		{Index: RowID},
		{Index: idx["id"]},                // the alias's record slot holds NULL
		{Index: Null},                     // always NULL
		{Index: Null, Default: 5},         // still NULL
		{Index: idx["x"], Default: 42},    // a stored NULL is NULL, not the default
		{Index: idx["y"]},                 //
		{Index: RowID, DefaultNull: true}, // flags do not matter for the rowid
	}
	exprs := []string{"rowid", "NULL", "NULL", "NULL", "x", "y", "id"}
	w := want(t, db, "t", exprs)
	wRowid := want(t, db, "t", []string{"id"})
	root := rootPage(t, db, "t")
	closeDB(t, db)

	f := mustOpen(t, path)
	leaves, err := f.Leaves(root)
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, f, leaves, cols, 4)
	same(t, "nulls and rowids", got, w)
	for i, id := range ids {
		if got.vals[i*len(cols)] != id {
			t.Errorf("row %d: rowid %d, want %d", i, got.vals[i*len(cols)], id)
		}
	}
	// A cursor of the rowid alone reads no record columns.
	same(t, "rowid only", readAll(t, f, leaves, []Column{{Index: RowID}}, 1), wRowid)
	// And one of Null alone.
	nulls := readAll(t, f, leaves, []Column{{Index: Null}}, 100)
	if nulls.n() != len(ids) {
		t.Fatalf("Null-only cursor read %d rows, want %d", nulls.n(), len(ids))
	}
	for i := range nulls.vals {
		if nulls.nulls[i] != 1 || nulls.vals[i] != 0 {
			t.Fatalf("Null-only cursor row %d = %d (null %d)", i, nulls.vals[i], nulls.nulls[i])
		}
	}
}

func TestEmptyTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	db := openDB(t, path)
	mustExec(t, db, `CREATE TABLE t(a INTEGER)`)
	root := rootPage(t, db, "t")
	closeDB(t, db)
	f := mustOpen(t, path)
	leaves, err := f.Leaves(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaves) != 1 || leaves[0] != root {
		t.Fatalf("leaves of an empty table = %v, want [%d]", leaves, root)
	}
	if got := readAll(t, f, leaves, []Column{{Index: 0}}, 3); got.n() != 0 {
		t.Fatalf("read %d rows from an empty table", got.n())
	}
	if got := readAll(t, f, nil, []Column{{Index: 0}}, 3); got.n() != 0 {
		t.Fatalf("read %d rows from no leaves", got.n())
	}
	c := f.NewCursor(leaves, nil)
	if _, err := c.Read(make([]int64, 4), make([]uint8, 4)); err == nil || err == io.EOF {
		t.Fatalf("Read with no columns: %v, want an error", err)
	}
}

// ---- 3. multi-level b-trees ----------------------------------------------

const bigRows = 200000

// buildBig creates table t of 6 integer columns with n rows (some deleted,
// some grown) and returns its root page.
func buildBig(tb testing.TB, db *sql.DB, n int) uint32 {
	tb.Helper()
	mustExec(tb, db, `CREATE TABLE t(a INTEGER, b INTEGER, c INTEGER, d INTEGER, e INTEGER, f INTEGER)`)
	mustExec(tb, db, fmt.Sprintf(`WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s WHERE x < %d)
		INSERT INTO t(rowid, a, b, c, d, e, f)
		SELECT x*5 + x%%3,
			x %% 256 - 128,
			CASE WHEN x %% 7 = 0 THEN NULL ELSE (x*2654435761) %% 4294967296 - 2147483648 END,
			(x*40503) %% 16777216 - 8388608,
			(x*2654435761) %% 281474976710656 - 140737488355328,
			CASE WHEN x %% 2 = 0 THEN x*x*x*1000 ELSE -(x*x*x*1000) END,
			x %% 3
		FROM s`, n))
	// Holes and grown records inside the leaves.
	mustExec(tb, db, `DELETE FROM t WHERE a = 0 OR rowid % 101 = 0`)
	mustExec(tb, db, `UPDATE t SET f = 123456789012 WHERE rowid % 11 = 0`)
	return rootPage(tb, db, "t")
}

func TestMultiLevel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.db")
	db := openDB(t, path)
	root := buildBig(t, db, bigRows)
	all := []Column{{Index: RowID}, {Index: 0}, {Index: 1}, {Index: 2}, {Index: 3}, {Index: 4}, {Index: 5}}
	w := want(t, db, "t", []string{"rowid", "a", "b", "c", "d", "e", "f"})
	sub := []Column{{Index: 5}, {Index: Null}, {Index: 1}, {Index: RowID}, {Index: 1}}
	wSub := rows{nc: len(sub)}
	for r := 0; r < w.n(); r++ { // f, NULL, b, rowid, b
		for _, c := range []int{6, -1, 2, 0, 2} {
			if c < 0 {
				wSub.vals, wSub.nulls = append(wSub.vals, 0), append(wSub.nulls, 1)
				continue
			}
			wSub.vals, wSub.nulls = append(wSub.vals, w.vals[r*7+c]), append(wSub.nulls, w.nulls[r*7+c])
		}
	}
	closeDB(t, db)
	if w.n() < bigRows*9/10 {
		t.Fatalf("only %d rows", w.n())
	}

	f := mustOpen(t, path)
	leaves, err := f.Leaves(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaves) < 300 {
		t.Fatalf("%d leaves, want hundreds", len(leaves))
	}
	// The tree has at least two levels of interior pages.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := f.PageSize()
	rp := pageOf(data, ps, root)
	if rp[0] != interiorTable {
		t.Fatalf("root page %d has type %#x", root, rp[0])
	}
	child := binary.BigEndian.Uint32(rp[binary.BigEndian.Uint16(rp[12:]):])
	if typ := pageOf(data, ps, child)[0]; typ != interiorTable {
		t.Fatalf("the root's first child %d has type %#x: one interior level only", child, typ)
	}
	checkLeaves(t, data, ps, root, leaves)
	checkMoreLeaves(t, f, root, len(leaves))
	seenLeaf := map[uint32]bool{}
	for _, p := range leaves {
		if seenLeaf[p] {
			t.Fatalf("leaf %d listed twice", p)
		}
		seenLeaf[p] = true
	}

	// Leaves are in rowid order: each leaf's rowids follow the previous
	// leaf's (read from the raw pages).
	counts := make([]int, len(leaves))
	last := int64(math.MinInt64)
	for i, p := range leaves {
		cells := leafCells(t, pageOf(data, ps, p), p, ps)
		if len(cells) == 0 {
			t.Fatalf("leaf %d (%d) is empty", i, p)
		}
		for _, c := range cells {
			if c.rowid <= last {
				t.Fatalf("leaf %d (page %d): rowid %d after %d", i, p, c.rowid, last)
			}
			last = c.rowid
		}
		counts[i] = len(cells)
	}

	// Each pass below reads every row, so they share the checks: buffer
	// sizes, leaves split among cursors, and cursors in parallel.
	same(t, "one cursor, 1000 rows per Read", readAll(t, f, leaves, all, 1000), w)
	same(t, "reordered columns, 777 rows per Read", readAll(t, f, leaves, sub, 777), wSub)
	concat := func(split [][]uint32, per int) rows {
		got := rows{nc: len(all)}
		for _, s := range split {
			r := readAll(t, f, s, all, per)
			got.vals = append(got.vals, r.vals...)
			got.nulls = append(got.nulls, r.nulls...)
		}
		return got
	}
	same(t, "7 cursors, 3 rows per Read", concat(splitLeaves(leaves, 7), 3), w)
	same(t, "64 cursors, 1 row per Read", concat(splitLeaves(leaves, 64), 1), w)
	// A cursor per leaf, over the first leaves.
	const nl = 50
	got := concat(splitLeaves(leaves[:nl], nl), 2)
	pre := 0
	for _, c := range counts[:nl] {
		pre += c
	}
	same(t, fmt.Sprintf("a cursor for each of %d leaves", nl), got,
		rows{nc: w.nc, vals: w.vals[:pre*w.nc], nulls: w.nulls[:pre*w.nc]})

	split := splitLeaves(leaves, 8)
	res := make([]rows, len(split))
	errs := make([]error, len(split))
	var wg sync.WaitGroup
	for i, s := range split {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = readAllErr(f, s, all, 1000)
		}()
	}
	wg.Wait()
	got = rows{nc: len(all)}
	for i := range res {
		if errs[i] != nil {
			t.Fatalf("part %d: %v", i, errs[i])
		}
		got.vals = append(got.vals, res[i].vals...)
		got.nulls = append(got.nulls, res[i].nulls...)
	}
	same(t, "8 concurrent cursors", got, w)

	// Leaves that skip around the file (not consecutive pages) read
	// right too: the leaves in reverse, all rows in one Read.
	rev := make([]uint32, len(leaves))
	for i, p := range leaves {
		rev[len(leaves)-1-i] = p
	}
	r := readAll(t, f, rev, all, w.n()+5)
	if r.n() != w.n() {
		t.Fatalf("reverse leaves: %d rows, want %d", r.n(), w.n())
	}
	// Put the per-leaf blocks back in order: leaf i's rows come after
	// those of the leaves after it.
	starts := make([]int, len(leaves))
	pos := 0
	for i := len(leaves) - 1; i >= 0; i-- {
		starts[i] = pos
		pos += counts[i]
	}
	back := rows{nc: len(all)}
	for i := range leaves {
		lo, hi := starts[i]*r.nc, (starts[i]+counts[i])*r.nc
		back.vals = append(back.vals, r.vals[lo:hi]...)
		back.nulls = append(back.nulls, r.nulls[lo:hi]...)
	}
	same(t, "reversed leaves", back, w)
}

func splitLeaves(leaves []uint32, parts int) [][]uint32 {
	var out [][]uint32
	for i := 0; i < parts; i++ {
		lo, hi := len(leaves)*i/parts, len(leaves)*(i+1)/parts
		out = append(out, leaves[lo:hi])
	}
	return out
}

// TestScatteredLeaves reads tables whose rows arrived in random rowid
// order, two tables interleaved, so that key order is not page order.
func TestScatteredLeaves(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scatter.db")
	db := openDB(t, path, "PRAGMA page_size = 1024")
	mustExec(t, db, `CREATE TABLE t(a INTEGER, b INTEGER)`)
	mustExec(t, db, `CREATE TABLE u(id INTEGER PRIMARY KEY, v INTEGER, w)`)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		id := rng.Int64N(1<<40) - 1<<39
		if _, err := tx.Exec(`INSERT OR REPLACE INTO t(rowid, a, b) VALUES (?, ?, ?)`, id, i, -id); err != nil {
			t.Fatal(err)
		}
		var w any
		if i%10 == 0 {
			w = strings.Repeat("z", rng.IntN(3000))
		}
		if _, err := tx.Exec(`INSERT OR REPLACE INTO u(id, v, w) VALUES (?, ?, ?)`, rng.Int64N(1e6), i, w); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	wt := want(t, db, "t", []string{"rowid", "a", "b"})
	wu := want(t, db, "u", []string{"id", "v", "CAST(w AS INTEGER)"})
	rt, ru := rootPage(t, db, "t"), rootPage(t, db, "u")
	closeDB(t, db)

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := mustOpen(t, path)
	for _, c := range []struct {
		root uint32
		cols []Column
		w    rows
	}{
		{rt, []Column{{Index: RowID}, {Index: 0}, {Index: 1}}, wt},
		{ru, []Column{{Index: RowID}, {Index: 1}, {Index: 2}}, wu},
	} {
		leaves, err := f.Leaves(c.root)
		if err != nil {
			t.Fatal(err)
		}
		checkLeaves(t, data, 1024, c.root, leaves)
		backwards := 0
		for i := 1; i < len(leaves); i++ {
			if leaves[i] < leaves[i-1] {
				backwards++
			}
		}
		if backwards == 0 {
			t.Errorf("table at %d: leaves in page order; want them scattered", c.root)
		}
		same(t, fmt.Sprintf("table at %d", c.root), readAll(t, f, leaves, c.cols, 100), c.w)
	}
}

// ---- 4. overflow pages -------------------------------------------------------

// textOf returns an n-byte text whose integer prefix is reached only at
// its end or at its start, depending on i.
func textOf(i, n int) string {
	switch {
	case n < 4:
		return strings.Repeat("7", n)
	case i%3 == 0:
		return strings.Repeat(" ", n-4) + "-987" // the digits are on the last page
	case i%3 == 1:
		return strings.Repeat("9", n) // saturates when n > 19
	default:
		return "123" + strings.Repeat("x", n-3)
	}
}

func blobOf(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(j*7 + i)
	}
	if n > 3 && i%2 == 0 {
		copy(b, " 42")
	}
	return b
}

func TestOverflow(t *testing.T) {
	for _, ps := range []int{512, 1024, 4096, 65536} {
		t.Run(fmt.Sprint(ps), func(t *testing.T) {
			testOverflow(t, ps)
		})
	}
}

func testOverflow(t *testing.T, ps int) {
	path := filepath.Join(t.TempDir(), "ovfl.db")
	db := openDB(t, path, fmt.Sprintf("PRAGMA page_size = %d", ps))
	mustExec(t, db, `CREATE TABLE t(a INTEGER, big1, b INTEGER, big2, c INTEGER)`)
	u := ps
	x := u - 35 // the most payload a table leaf keeps on the page
	// Blob sizes around each threshold, less the ~28 bytes of header and
	// integers of a record.
	w := 40
	if ps >= 65536 {
		w = 8
	}
	var sizes []int
	for _, mid := range []int{x, x + (u - 4), x + 2*(u-4)} {
		for n := mid - 28 - w; n <= mid-28+w; n++ {
			sizes = append(sizes, n)
		}
	}
	if ps == 512 {
		for n := 0; n < 3*ps; n += 3 {
			sizes = append(sizes, n)
		}
	}
	sizes = append(sizes, 0, 1, 100, 10000, 100000, 300000)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO t(a, big1, b, big2, c) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	row := 0
	for _, n := range sizes {
		for v := 0; v < 3; v++ {
			// Fixed-width integers (6, 8 and 8 bytes) keep the record
			// overhead constant, so the payload sizes step by one.
			a := 1<<40 + int64(row)*1000003
			b := -1<<50 - int64(row)
			c := math.MaxInt64 - int64(row)
			var big1, big2 any
			switch v {
			case 0: // before the integer columns b and c
				big1 = textOf(row, n)
			case 1: // after b
				big2 = blobOf(row, n)
				if row%2 == 0 {
					big2 = textOf(row, n)
				}
			case 2: // both
				big1, big2 = blobOf(row, n/2), textOf(row, n-n/2)
			}
			if _, err := ins.Exec(a, big1, b, big2, c); err != nil {
				t.Fatal(err)
			}
			row++
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	cols := []Column{{Index: RowID}, {Index: 0}, {Index: 1}, {Index: 2}, {Index: 3}, {Index: 4}}
	wAll := want(t, db, "t", []string{"rowid", "a", "CAST(big1 AS INTEGER)", "b", "CAST(big2 AS INTEGER)", "c"})
	last := []Column{{Index: 4}, {Index: 2}}
	wLast := want(t, db, "t", []string{"c", "b"})
	var nOvfl int
	if err := db.QueryRow(fmt.Sprintf(`SELECT count(*) FROM t WHERE length(CAST(big1 AS BLOB)) + length(CAST(big2 AS BLOB)) > %d`, x)).Scan(&nOvfl); err != nil {
		t.Fatal(err)
	}
	root := rootPage(t, db, "t")
	closeDB(t, db)
	if nOvfl < 3*w {
		t.Fatalf("only %d rows overflow", nOvfl)
	}

	f := mustOpen(t, path)
	if f.PageSize() != ps {
		t.Fatalf("page size %d, want %d", f.PageSize(), ps)
	}
	leaves, err := f.Leaves(root)
	if err != nil {
		t.Fatal(err)
	}
	// The payload sizes around the local/overflow threshold are all there.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checkLeaves(t, data, ps, root, leaves)
	payloads := map[uint64]bool{}
	for _, p := range leaves {
		for _, c := range leafCells(t, pageOf(data, ps, p), p, u) {
			payloads[c.size] = true
			if (c.size > uint64(x)) != (c.ovfl != 0) {
				t.Fatalf("page %d: %d-byte payload, overflow page %d", p, c.size, c.ovfl)
			}
		}
	}
	for _, sz := range []int{x - 1, x, x + 1, x + 2, x + (u - 4), x + (u - 4) + 1} {
		if !payloads[uint64(sz)] {
			t.Errorf("no %d-byte payload in the test data", sz)
		}
	}
	for _, per := range []int{1, 7, 1000} {
		same(t, fmt.Sprintf("all columns, %d per Read", per), readAll(t, f, leaves, cols, per), wAll)
	}
	same(t, "columns after the blobs", readAll(t, f, leaves, last, 64), wLast)
	// Check a few values by hand: the digits at the very end of a
	// multi-page text.
	got := readAll(t, f, leaves, cols, 64)
	for r := 0; r < got.n(); r++ {
		n := sizes[r/3]
		if r%3 == 0 && n >= 4 {
			// Row r has big1 = textOf(r, n), r%3 == 0: spaces, then -987.
			if v := got.vals[r*6+2]; v != -987 {
				t.Fatalf("row %d (%d-byte text): big1 = %d, want -987", r, n, v)
			}
		}
		if v := got.vals[r*6+5]; v != math.MaxInt64-int64(r) {
			t.Fatalf("row %d: c = %d, want %d", r, v, math.MaxInt64-int64(r))
		}
	}
}

// ---- 5. ALTER TABLE ADD COLUMN -------------------------------------------

func TestAddColumn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "alter.db")
	db := openDB(t, path, "PRAGMA page_size = 1024")
	mustExec(t, db, `CREATE TABLE t(a INTEGER, s TEXT)`)
	const nOld, nNew = 400, 400
	mustExec(t, db, fmt.Sprintf(`WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s WHERE x < %d)
		INSERT INTO t(a, s) SELECT x*3, 'old' FROM s`, nOld))
	mustExec(t, db, `ALTER TABLE t ADD COLUMN b INTEGER`)
	mustExec(t, db, `ALTER TABLE t ADD COLUMN d INTEGER DEFAULT 7`)
	mustExec(t, db, `ALTER TABLE t ADD COLUMN e DEFAULT -123456789012`)
	for i := 1; i <= nNew; i++ {
		switch i % 4 {
		case 0:
			mustExec(t, db, `INSERT INTO t(a, s, b, d, e) VALUES (?, 'new', ?, ?, ?)`, i, -i, i*1000, int64(i)<<40)
		case 1: // explicit NULLs: not the default
			mustExec(t, db, `INSERT INTO t(a, s, b, d, e) VALUES (?, 'new', NULL, NULL, NULL)`, i)
		case 2: // the defaults, written into the record
			mustExec(t, db, `INSERT INTO t(a, s) VALUES (?, 'new')`, i)
		case 3:
			mustExec(t, db, `INSERT INTO t(a, s, b, d) VALUES (?, 'new', 0, 1)`, i)
		}
	}
	// An old row rewritten by UPDATE gets a full record.
	mustExec(t, db, `UPDATE t SET a = a + 1 WHERE rowid = 5`)
	idx := colIndex(t, db, "t")
	cols := []Column{
		{Index: RowID},
		{Index: idx["a"]},
		{Index: idx["b"], DefaultNull: true},
		{Index: idx["d"], Default: 7},
		{Index: idx["e"], Default: -123456789012},
	}
	w := want(t, db, "t", []string{"rowid", "a", "b", "d", "e"})
	root := rootPage(t, db, "t")
	closeDB(t, db)

	f := mustOpen(t, path)
	leaves, err := f.Leaves(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaves) < 2 {
		t.Fatalf("%d leaves", len(leaves))
	}
	got := readAll(t, f, leaves, cols, 50)
	same(t, "defaults", got, w)

	// The old rows' records really are short: other defaults show through.
	probe := readAll(t, f, leaves, []Column{{Index: RowID}, {Index: idx["b"], Default: -1}, {Index: idx["d"], DefaultNull: true}, {Index: idx["e"], Default: 99}}, 50)
	for r := 0; r < probe.n(); r++ {
		id := probe.vals[r*4]
		old := id <= nOld && id != 5
		for c := 1; c < 4; c++ {
			wv, wn := w.vals[r*5+c+1], w.nulls[r*5+c+1]
			if old {
				wv, wn = []int64{0, -1, 0, 99}[c], []uint8{0, 0, 1, 0}[c]
			}
			if probe.vals[r*4+c] != wv || probe.nulls[r*4+c] != wn {
				t.Fatalf("rowid %d column %d = %d (null %d), want %d (null %d)", id, c,
					probe.vals[r*4+c], probe.nulls[r*4+c], wv, wn)
			}
		}
	}
}

// ---- 6. non-integer values -------------------------------------------------

func TestNonInteger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mixed.db")
	db := openDB(t, path)
	mustExec(t, db, `CREATE TABLE t(v, r REAL, s TEXT)`)
	cases := []struct {
		lit  string
		want int64
		null bool
	}{
		{"NULL", 0, true},
		{"42", 42, false},
		{"-42", -42, false},
		{"3.9", 3, false},
		{"-3.9", -3, false},
		{"0.5", 0, false},
		{"-0.5", 0, false},
		{"-0.0", 0, false},
		{"2.0", 2, false},
		{"1e18", 1e18, false},
		{"4503599627370497.0", 4503599627370497, false},
		{"1e300", math.MaxInt64, false},
		{"-1e300", math.MinInt64, false},
		{"9223372036854775808.0", math.MaxInt64, false},
		{"-9223372036854775808.0", math.MinInt64, false},
		{"'123'", 123, false},
		{"'  -45'", -45, false},
		{"'12abc'", 12, false},
		{"'abc'", 0, false},
		{"''", 0, false},
		{"'+7'", 7, false},
		{"'-'", 0, false},
		{"'- 5'", 0, false},
		{"'+-5'", 0, false},
		{"'3.9'", 3, false},
		{"'-3.9'", -3, false},
		{"'1e5'", 1, false},
		{"'0x1F'", 0, false},
		{"'  12  '", 12, false},
		{"'000000000000000000000000042'", 42, false},
		{"'9223372036854775807'", math.MaxInt64, false},
		{"'9223372036854775808'", math.MaxInt64, false},
		{"'99999999999999999999'", math.MaxInt64, false},
		{"'-9223372036854775808'", math.MinInt64, false},
		{"'-9223372036854775809'", math.MinInt64, false},
		{"'-99999999999999999999'", math.MinInt64, false},
		{"'18446744073709551616'", math.MaxInt64, false},
		{"'١٢'", 0, false},
		{"char(9, 10, 11, 12, 13, 32) || '5'", 5, false},
		{"x'3132'", 12, false},
		{"x'2D3730'", -70, false},
		{"x'203132'", 12, false},
		{"x''", 0, false},
		{"x'00'", 0, false},
		{"x'0031'", 0, false},
		{"zeroblob(16)", 0, false},
		{"'12' || char(0) || '34'", 12, false},
	}
	for _, c := range cases {
		mustExec(t, db, fmt.Sprintf(`INSERT INTO t(v, r, s) VALUES (%[1]s, %[1]s, %[1]s)`, c.lit))
	}
	cols := []Column{{Index: 0}, {Index: 1}, {Index: 2}}
	w := want(t, db, "t", []string{"CAST(v AS INTEGER)", "CAST(r AS INTEGER)", "CAST(s AS INTEGER)"})
	root := rootPage(t, db, "t")
	closeDB(t, db)

	f := mustOpen(t, path)
	leaves, err := f.Leaves(root)
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, f, leaves, cols, 10)
	same(t, "CAST(x AS INTEGER)", got, w)
	for i, c := range cases {
		if v, n := got.vals[i*3], got.nulls[i*3]; v != c.want || (n == 1) != c.null {
			t.Errorf("%s: %d (null %d), want %d (null %v)", c.lit, v, n, c.want, c.null)
		}
	}
}

// TestConversions checks the conversion helpers on values SQLite cannot
// store (NaN) and the varint edge cases.
func TestConversions(t *testing.T) {
	for _, c := range []struct {
		r    float64
		want int64
	}{
		{math.NaN(), 0}, {math.Inf(1), math.MaxInt64}, {math.Inf(-1), math.MinInt64},
		{9.223372036854775e18, 9223372036854774784}, {-9.223372036854775e18, -9223372036854774784},
		{1e19, math.MaxInt64}, {-1e19, math.MinInt64}, {-0.9, 0},
	} {
		if got := floatToInt(c.r); got != c.want {
			t.Errorf("floatToInt(%g) = %d, want %d", c.r, got, c.want)
		}
	}
	for _, c := range []struct {
		b    []byte
		v    uint64
		size int
	}{
		{nil, 0, 0},
		{[]byte{0x7f}, 0x7f, 1},
		{[]byte{0x81, 0x00}, 0x80, 2},
		{[]byte{0x81}, 0, 0},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, math.MaxUint64, 9},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0, 0},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x55}, 1, 9},
	} {
		v, k := uvarint(c.b)
		if v != c.v || k != c.size {
			t.Errorf("uvarint(%x) = %d, %d; want %d, %d", c.b, v, k, c.v, c.size)
		}
	}
	for _, st := range []uint64{10, 11, 1<<40 + 1, math.MaxUint64} {
		if n := contentSize(st); n >= 0 {
			t.Errorf("contentSize(%d) = %d, want < 0", st, n)
		}
	}
}

// ---- 7. errors -----------------------------------------------------------

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	db := openDB(t, good)
	mustExec(t, db, `CREATE TABLE t(a INTEGER)`)
	mustExec(t, db, `INSERT INTO t VALUES (1), (2)`)
	closeDB(t, db)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := Open(good); err != nil {
		t.Fatalf("Open(good): %v", err)
	} else {
		f.Close()
	}

	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	patched := func(off int, b ...byte) []byte {
		d := bytes.Clone(data)
		copy(d[off:], b)
		return d
	}
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrCorrupt},
		{"text", []byte(strings.Repeat("this is not a database\n", 20)), ErrCorrupt},
		{"short header", data[:50], ErrCorrupt},
		{"header only", data[:100], ErrCorrupt},                       // its header counts pages the file does not hold (SQLite: malformed)
		{"header only, no count", patched(28, 0, 0, 0, 0)[:100], nil}, // opens: it has no pages
		{"count past the end", patched(28, 0, 0, 1, 0), ErrCorrupt},
		{"header only, legacy count", patched(92, 0xff, 0xff, 0xff, 0xff)[:100], nil}, // version-valid-for differs: the file size (no pages) counts
		{"page size 768", patched(16, 0x03, 0x00), ErrCorrupt},
		{"page size 256", patched(16, 0x01, 0x00), ErrCorrupt},
		{"page size 0", patched(16, 0, 0), ErrCorrupt},
		{"page size 65535", patched(16, 0xff, 0xff), ErrCorrupt},
		{"reserved bytes", patched(16, 0x02, 0x00, 1, 1, 40), ErrCorrupt},
		{"write version 2", patched(18, 2), ErrUnsupported},
		{"read version 2", patched(19, 2), ErrUnsupported},
		{"utf-16 encoding", patched(56, 0, 0, 0, 2), ErrUnsupported},
		{"version 3", patched(18, 3, 3), ErrUnsupported},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := Open(write(strings.ReplaceAll(c.name, " ", "_"), c.data))
			if c.want == nil {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer f.Close()
				// A header-only file has no pages to read.
				if _, err := f.Leaves(1); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Leaves(1) of a header: %v, want ErrCorrupt", err)
				}
				_, err := readAllErr(f, []uint32{1}, []Column{{Index: 0}}, 4)
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Read of a header: %v, want ErrCorrupt", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("Open: %v, want %v", err, c.want)
			}
			if f != nil {
				t.Fatal("Open returned a File with an error")
			}
		})
	}
	if _, err := Open(filepath.Join(dir, "missing.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(missing): %v", err)
	}

	t.Run("wal", func(t *testing.T) {
		path := filepath.Join(dir, "wal.db")
		db := openDB(t, path, "PRAGMA journal_mode = WAL")
		mustExec(t, db, `CREATE TABLE t(a INTEGER)`)
		mustExec(t, db, `INSERT INTO t VALUES (1)`)
		closeDB(t, db)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if b[18] != 2 || b[19] != 2 {
			t.Fatalf("WAL database header bytes 18/19 = %d/%d", b[18], b[19])
		}
		if _, err := Open(path); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Open(WAL): %v, want ErrUnsupported", err)
		}
	})
	t.Run("utf-16 database", func(t *testing.T) {
		path := filepath.Join(dir, "utf16.db")
		db := openDB(t, path, "PRAGMA encoding = 'UTF-16le'")
		mustExec(t, db, `CREATE TABLE t(a INTEGER)`)
		closeDB(t, db)
		if _, err := Open(path); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Open(UTF-16): %v, want ErrUnsupported", err)
		}
	})
}

// finish runs f, failing the test if it takes longer than d (an endless
// walk).
func finish(t *testing.T, d time.Duration, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("still running after %v", d)
		return nil
	}
}

// scanFile opens path and reads every row of the table at root, through
// Leaves or (when leaves is not nil) the given leaf list.
func scanFile(path string, root uint32, leaves []uint32) error {
	f, err := Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if leaves == nil {
		if leaves, err = f.Leaves(root); err != nil {
			return err
		}
	}
	for _, cols := range [][]Column{
		{{Index: RowID}, {Index: 0}, {Index: 1}, {Index: 2}, {Index: 9, DefaultNull: true}},
		{{Index: 1}},
	} {
		if _, err := readAllErr(f, leaves, cols, 37); err != nil {
			return err
		}
	}
	return nil
}

// corruptDB builds a multi-level table with overflowing rows on 512-byte
// pages and returns the path, the image, the root and the leaves.
func corruptDB(t *testing.T) (string, []byte, uint32, []uint32) {
	path := filepath.Join(t.TempDir(), "victim.db")
	db := openDB(t, path, "PRAGMA page_size = 512")
	mustExec(t, db, `CREATE TABLE t(a INTEGER, b INTEGER, big)`)
	mustExec(t, db, `WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s WHERE x < 5000)
		INSERT INTO t(a, b, big) SELECT x, x*x,
			CASE WHEN x % 97 = 0 THEN replace(hex(zeroblob(400 + x % 600)), '0', 'x') END FROM s`)
	root := rootPage(t, db, "t")
	closeDB(t, db)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := mustOpen(t, path)
	leaves, err := f.Leaves(root)
	if err != nil {
		t.Fatal(err)
	}
	checkLeaves(t, data, 512, root, leaves)
	if err := scanFile(path, root, nil); err != nil {
		t.Fatal(err)
	}
	return path, data, root, leaves
}

func TestCorrupt(t *testing.T) {
	_, data, root, leaves := corruptDB(t)
	const ps = 512
	nPages := uint32(len(data) / ps)
	dir := t.TempDir()
	rp := pageOf(data, ps, root)
	if rp[0] != interiorTable {
		t.Fatalf("root %d is not interior", root)
	}
	// An interior page below the root.
	mid := binary.BigEndian.Uint32(rp[binary.BigEndian.Uint16(rp[12:]):])
	if pageOf(data, ps, mid)[0] != interiorTable {
		t.Fatalf("page %d is not interior", mid)
	}
	// A leaf whose first cell does not overflow.
	leaf := leaves[len(leaves)/2]
	for i := len(leaves) / 2; leafCells(t, pageOf(data, ps, leaf), leaf, ps)[0].ovfl != 0; i++ {
		leaf = leaves[i+1]
	}
	// A leaf with an overflowing cell whose chain has several pages, and
	// the first cell of a leaf with a small record.
	var ovLeaf uint32
	var ov cellInfo
	for _, p := range leaves {
		for _, c := range leafCells(t, pageOf(data, ps, p), p, ps) {
			if c.ovfl != 0 && c.size > 3*ps+100 {
				ovLeaf, ov = p, c
			}
		}
	}
	if ovLeaf == 0 {
		t.Fatal("no overflowing cell")
	}
	small := leafCells(t, pageOf(data, ps, leaf), leaf, ps)[0]
	second := binary.BigEndian.Uint32(pageOf(data, ps, ov.ovfl)) // the chain's second page
	if second == 0 {
		t.Fatal("one-page overflow chain")
	}

	po := func(p uint32) int { return int(p-1) * ps } // page offset in the image
	put16 := func(d []byte, off int, v uint16) { binary.BigEndian.PutUint16(d[off:], v) }
	put32 := func(d []byte, off int, v uint32) { binary.BigEndian.PutUint32(d[off:], v) }
	rootCell := po(root) + int(binary.BigEndian.Uint16(rp[12:]))
	midCell := po(mid) + int(binary.BigEndian.Uint16(pageOf(data, ps, mid)[12:]))
	recHdr := po(leaf) + small.payload // the record header size varint
	// The second cells of the root and of mid: children that are not the
	// first of their level.
	rootCell2 := po(root) + int(binary.BigEndian.Uint16(rp[14:]))
	midCell2 := po(mid) + int(binary.BigEndian.Uint16(pageOf(data, ps, mid)[14:]))

	cases := []struct {
		name   string
		patch  func(d []byte) []byte
		leaves bool // also read with the good leaf list, past Leaves
	}{
		{"root type", func(d []byte) []byte { d[po(root)] = 0x0a; return d }, false},
		{"root type index", func(d []byte) []byte { d[po(root)] = 0x02; return d }, false},
		{"root cell count", func(d []byte) []byte { put16(d, po(root)+3, 0xffff); return d }, false},
		{"root cell count just too big", func(d []byte) []byte { put16(d, po(root)+3, (ps-12)/2+1); return d }, false},
		{"root cell pointer past page", func(d []byte) []byte { put16(d, po(root)+12, 0xffff); return d }, false},
		{"root cell pointer at page end", func(d []byte) []byte { put16(d, po(root)+12, ps-2); return d }, false},
		{"root cell pointer into header", func(d []byte) []byte { put16(d, po(root)+12, 0); return d }, false},
		{"root child 0", func(d []byte) []byte { put32(d, rootCell, 0); return d }, false},
		{"root child past file", func(d []byte) []byte { put32(d, rootCell, nPages+1); return d }, false},
		{"root child max", func(d []byte) []byte { put32(d, rootCell, math.MaxUint32); return d }, false},
		{"root child is root", func(d []byte) []byte { put32(d, rootCell, root); return d }, false},
		{"root right is root", func(d []byte) []byte { put32(d, po(root)+8, root); return d }, false},
		{"root right 0", func(d []byte) []byte { put32(d, po(root)+8, 0); return d }, false},
		{"mid child is root", func(d []byte) []byte { put32(d, midCell, root); return d }, false},
		{"mid right is mid", func(d []byte) []byte { put32(d, po(mid)+8, mid); return d }, false},
		{"mid child is page 1 (schema leaf)", func(d []byte) []byte { put32(d, midCell, 1); d[headerSize] = 0x0a; return d }, false},
		{"mid type", func(d []byte) []byte { d[po(mid)] = 0x0a; return d }, false},
		// Leaves reads one page per level; the rest of the last level
		// is checked by the cursor.
		{"root second child is a leaf", func(d []byte) []byte { put32(d, rootCell2, leaf); return d }, false},
		{"root second child 0", func(d []byte) []byte { put32(d, rootCell2, 0); return d }, false},
		{"mid second child 0", func(d []byte) []byte { put32(d, midCell2, 0); return d }, false},
		{"mid second child past file", func(d []byte) []byte { put32(d, midCell2, nPages+1); return d }, false},
		{"mid second child is mid", func(d []byte) []byte { put32(d, midCell2, mid); return d }, false},
		{"mid second child is an overflow page", func(d []byte) []byte { put32(d, midCell2, ov.ovfl); return d }, false},
		{"mid right past file", func(d []byte) []byte { put32(d, po(mid)+8, nPages+100); return d }, false},
		{"leaf type", func(d []byte) []byte { d[po(leaf)] = 0x0a; return d }, true},
		{"leaf type interior", func(d []byte) []byte { d[po(leaf)] = 0x05; put16(d, po(leaf)+3, 0); return d }, true},
		{"leaf cell count", func(d []byte) []byte { put16(d, po(leaf)+3, 0xffff); return d }, true},
		{"leaf cell count just too big", func(d []byte) []byte { put16(d, po(leaf)+3, (ps-8)/2+1); return d }, true},
		{"leaf cell pointer past page", func(d []byte) []byte { put16(d, po(leaf)+8, 0xffff); return d }, true},
		{"leaf cell pointer at page end", func(d []byte) []byte { put16(d, po(leaf)+8, ps-1); return d }, true},
		{"leaf cell pointer into header", func(d []byte) []byte { put16(d, po(leaf)+8, 2); return d }, true},
		{"payload size huge", func(d []byte) []byte {
			copy(d[po(leaf)+small.at:], bytes.Repeat([]byte{0xff}, 9))
			return d
		}, true},
		{"payload size past page", func(d []byte) []byte {
			// A local payload (< usable-35) that runs past the page's end.
			at := ps - 40
			put16(d, po(leaf)+8, uint16(at))
			d[po(leaf)+at], d[po(leaf)+at+1], d[po(leaf)+at+2] = 0x83, 0x00, 1 // 384 bytes, rowid 1
			return d
		}, true},
		{"record header size huge", func(d []byte) []byte { d[recHdr] = 0x7f; return d }, true},
		{"record header size 0", func(d []byte) []byte { d[recHdr] = 0; return d }, true},
		{"serial type 10", func(d []byte) []byte { d[recHdr+1] = 10; return d }, true},
		{"serial type 11", func(d []byte) []byte { d[recHdr+1] = 11; return d }, true},
		{"serial type long text", func(d []byte) []byte { d[recHdr+1] = 0x7f; return d }, true},
		{"serial type unterminated varint", func(d []byte) []byte {
			for i := 1; i < int(d[recHdr]); i++ {
				d[recHdr+i] = 0x80
			}
			return d
		}, true},
		{"overflow pointer 0", func(d []byte) []byte { put32(d, po(ovLeaf)+ov.payload+ov.local, 0); return d }, true},
		{"overflow pointer past file", func(d []byte) []byte { put32(d, po(ovLeaf)+ov.payload+ov.local, nPages+7); return d }, true},
		{"overflow chain ends early", func(d []byte) []byte { put32(d, po(ov.ovfl), 0); return d }, true},
		{"overflow chain leaves file", func(d []byte) []byte { put32(d, po(second), nPages+1); return d }, true},
		{"overflow payload larger than file", func(d []byte) []byte {
			at := po(ovLeaf) + ov.at
			copy(d[at:], []byte{0x8f, 0xff, 0xff, 0xff, 0x7f}) // a 4 GiB payload
			return d
		}, true},
		{"truncated", func(d []byte) []byte { return d[:len(d)-3*ps] }, true},
		{"truncated mid-page", func(d []byte) []byte { return d[:len(d)*2/3+100] }, true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.patch(bytes.Clone(data))
			path := filepath.Join(dir, fmt.Sprintf("c%d.db", i))
			if err := os.WriteFile(path, d, 0o644); err != nil {
				t.Fatal(err)
			}
			err := finish(t, 20*time.Second, func() error { return scanFile(path, root, nil) })
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("through Leaves: %v, want ErrCorrupt", err)
			}
			if c.leaves {
				err := finish(t, 20*time.Second, func() error { return scanFile(path, root, leaves) })
				if !errors.Is(err, ErrCorrupt) {
					t.Errorf("with the good leaves: %v, want ErrCorrupt", err)
				}
			}
		})
	}

	// Damage that the format cannot tell from data: no error needed, but
	// no panic and no endless walk either.
	for i, patch := range []func(d []byte) []byte{
		func(d []byte) []byte { put32(d, po(second), ov.ovfl); return d },  // a cycle in the chain
		func(d []byte) []byte { put32(d, po(ov.ovfl), ov.ovfl); return d }, // a page that is its own next
		func(d []byte) []byte { put32(d, rootCell+0, mid); return d },      // a subtree listed twice
		func(d []byte) []byte { put16(d, 16, 512); return d },              // wrong page size
		func(d []byte) []byte { d[20] = 32; return d },                     // reserved bytes
	} {
		d := patch(bytes.Clone(data))
		path := filepath.Join(dir, fmt.Sprintf("odd%d.db", i))
		if err := os.WriteFile(path, d, 0o644); err != nil {
			t.Fatal(err)
		}
		err := finish(t, 20*time.Second, func() error { return scanFile(path, root, nil) })
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("odd damage %d: %v, want nil or ErrCorrupt", i, err)
		}
	}

	// Random damage to the pages of the table.
	rng := rand.New(rand.NewPCG(1, 2))
	path := filepath.Join(dir, "random.db")
	for iter := 0; iter < 150; iter++ {
		d := bytes.Clone(data)
		for k := 1 + rng.IntN(8); k > 0; k-- {
			var p uint32
			switch rng.IntN(3) {
			case 0:
				p = root
			case 1:
				p = leaves[rng.IntN(len(leaves))]
			default:
				p = 1 + uint32(rng.IntN(int(nPages)))
			}
			off := po(p) + rng.IntN(16)
			if rng.IntN(2) == 0 {
				off = po(p) + rng.IntN(ps)
			}
			d[off] = byte(rng.Uint32())
		}
		if err := os.WriteFile(path, d, 0o644); err != nil {
			t.Fatal(err)
		}
		err := finish(t, 20*time.Second, func() error { return scanFile(path, root, nil) })
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("random damage %d: %v", iter, err)
		}
	}
}

// ---- 8. fuzzing ------------------------------------------------------------

// fuzzSeed builds a small database: three tables on 512-byte pages, one
// with an overflowing row and one of an interior page and its leaves.
func fuzzSeed(tb testing.TB) []byte {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "seed.db")
	db := openDB(tb, path, "PRAGMA page_size = 512")
	mustExec(tb, db, `CREATE TABLE a(x INTEGER, y, z)`)
	mustExec(tb, db, `INSERT INTO a VALUES (0, 1, NULL), (-1, 300, 70000), (2147483648, -140737488355329, 9223372036854775807), (3, 3.9, '12abc')`)
	mustExec(tb, db, `CREATE TABLE b(id INTEGER PRIMARY KEY, v, w INTEGER)`)
	mustExec(tb, db, `INSERT INTO b VALUES (5, 1, 2), (9, replace(hex(zeroblob(400)), '0', ' ') || '77', -3)`)
	mustExec(tb, db, `CREATE TABLE c(p INTEGER, q INTEGER)`)
	mustExec(tb, db, `WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s WHERE x < 80)
		INSERT INTO c SELECT x*1000, -x FROM s`)
	mustExec(tb, db, `ALTER TABLE c ADD COLUMN r INTEGER DEFAULT 7`)
	mustExec(tb, db, `INSERT INTO c VALUES (1, 2, 3)`)
	closeDB(tb, db)
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func FuzzCursor(f *testing.F) {
	seed := fuzzSeed(f)
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	// One file per fuzzing process, rewritten for each input: the inputs
	// of a process run one at a time.
	path := filepath.Join(f.TempDir(), "fuzz.db")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		defer watchdog(data)()
		if err := fuzzScan(path); err != nil {
			t.Fatal(err)
		}
	})
}

// fuzzScan opens path and reads every b-tree it finds, with a few column
// layouts. Damage must give errors wrapping ErrCorrupt (or
// ErrUnsupported from Open); anything else is returned.
func fuzzScan(path string) error {
	file, err := Open(path)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
			return fmt.Errorf("Open: %w", err)
		}
		return nil
	}
	defer file.Close()
	layouts := [][]Column{
		{{Index: RowID}, {Index: 0}, {Index: 1}, {Index: 2}},
		{{Index: Null}, {Index: 4, DefaultNull: true}, {Index: 1, Default: 7}},
	}
	vals := make([]int64, 20)
	nulls := make([]uint8, 20)
	for root := uint32(1); root <= min(file.nPages, 64); root++ {
		leaves, err := file.Leaves(root)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				return fmt.Errorf("Leaves(%d): %w", root, err)
			}
			continue
		}
		if len(leaves) > int(file.nPages) {
			return fmt.Errorf("Leaves(%d): %d leaves in %d pages", root, len(leaves), file.nPages)
		}
		for _, cols := range layouts {
			c := file.NewCursor(leaves, cols)
			per := len(vals) / len(cols)
			for calls := 0; ; calls++ {
				if calls > 1<<20 {
					return fmt.Errorf("Read does not end")
				}
				n, err := c.Read(vals, nulls)
				if n < 0 || n > per {
					return fmt.Errorf("Read: %d rows into room for %d", n, per)
				}
				for i := 0; i < n*len(cols); i++ {
					if nulls[i] > 1 || nulls[i] == 1 && vals[i] != 0 {
						return fmt.Errorf("value %d null %d", vals[i], nulls[i])
					}
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					if !errors.Is(err, ErrCorrupt) {
						return fmt.Errorf("Read: %w", err)
					}
					break
				}
				if n == 0 {
					return fmt.Errorf("Read returned no rows and no error")
				}
			}
		}
	}
	return nil
}

// ---- benchmark ---------------------------------------------------------------

// BenchmarkCursor reads a million rows of six integer columns through
// Read (header, then columns) and ReadNullable (ints: a plan per distinct
// header, the block fillers' path).
func BenchmarkCursor(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.db")
	db := openDB(b, path)
	root := buildBig(b, db, 1000000)
	closeDB(b, db)
	f := mustOpen(b, path)
	cols := []Column{{Index: 0}, {Index: 1}, {Index: 2}, {Index: 3}, {Index: 4}, {Index: 5}}
	for _, nullable := range []bool{false, true} {
		name := "Read"
		if nullable {
			name = "ReadNullable"
		}
		b.Run(name, func(b *testing.B) {
			vals := make([]int64, 4096*len(cols))
			rows := make([]sql.NullInt64, 4096*len(cols))
			nulls := make([]uint8, 4096*len(cols))
			nrows := 0
			for b.Loop() {
				leaves, err := f.Leaves(root)
				if err != nil {
					b.Fatal(err)
				}
				c := f.NewCursor(leaves, cols)
				for {
					var n int
					if nullable {
						n, err = c.ReadNullable(rows, nulls, nil)
					} else {
						n, err = c.Read(vals, nulls)
					}
					nrows += n
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(nrows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
