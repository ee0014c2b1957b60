package sqlitefile

import (
	"database/sql"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// TestReadText compares text columns with what go-sqlite3 returns for the
// same values, formatted as ingest/nsys formats driver values: strings and
// blobs as they are, integers in decimal, reals in strconv's 'g' form.
func TestReadText(t *testing.T) {
	p := filepath.Join(t.TempDir(), "text.sqlite")
	db, err := sql.Open("sqlite3", p)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("überlong ", 2000) // spills to overflow pages
	vals := []any{"forward", "", "naïve ünicode", nil, int64(-42), 1.5, 1e300, []byte("blob\x00bytes"), long, "forward"}
	if _, err := db.Exec(`CREATE TABLE t (n INTEGER, txt TEXT, anyv)`); err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if _, err := db.Exec(`INSERT INTO t VALUES (?, ?, ?)`, i, v, v); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]sql.NullString{}
	for _, col := range []string{"txt", "anyv"} {
		rows, err := db.Query(`SELECT ` + col + ` FROM t ORDER BY rowid`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var v any
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			var s sql.NullString
			switch x := v.(type) {
			case nil:
			case string:
				s = sql.NullString{String: x, Valid: true}
			case []byte:
				s = sql.NullString{String: string(x), Valid: true}
			case int64:
				s = sql.NullString{String: strconv.FormatInt(x, 10), Valid: true}
			case float64:
				s = sql.NullString{String: strconv.FormatFloat(x, 'g', -1, 64), Valid: true}
			default:
				t.Fatalf("driver value %T", v)
			}
			want[col] = append(want[col], s)
		}
		rows.Close()
	}
	var root int64
	if err := db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 't'`).Scan(&root); err != nil {
		t.Fatal(err)
	}
	db.Close()

	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	leaves, err := f.Leaves(uint32(root))
	if err != nil {
		t.Fatal(err)
	}
	cols := []Column{{Index: 0}, {Index: 1, Text: true}, {Index: 2, Text: true}, {Index: RowID, Text: true}, {Index: Null, Text: true}}
	cur := f.NewCursor(leaves, cols)
	if _, err := cur.Read(make([]int64, 5), make([]uint8, 5)); err == nil {
		t.Error("Read on a cursor with text columns: no error")
	}
	nc := len(cols)
	v, z, tx := make([]int64, 3*nc), make([]uint8, 3*nc), make([]string, 3*nc) // 3 rows a call
	row := 0
	for {
		n, err := cur.ReadText(v, z, tx)
		for i := 0; i < n; i++ {
			r := i * nc
			if v[r] != int64(row) {
				t.Errorf("row %d: n = %d", row, v[r])
			}
			for k, col := range []string{"txt", "anyv"} {
				got := sql.NullString{String: tx[r+1+k], Valid: z[r+1+k] == 0}
				if got != want[col][row] {
					t.Errorf("row %d %s: %q (valid %v), want %q (valid %v)", row, col, trunc(got.String), got.Valid, trunc(want[col][row].String), want[col][row].Valid)
				}
			}
			if tx[r+3] != strconv.Itoa(row+1) || z[r+4] != 1 {
				t.Errorf("row %d: rowid text %q, null column %d", row, tx[r+3], z[r+4])
			}
			row++
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if row != len(vals) {
		t.Errorf("%d rows, want %d", row, len(vals))
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
