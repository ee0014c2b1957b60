package nsys

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/redact"
)

// fileState is a file's bytes and modification time.
type fileState struct {
	data  []byte
	mtime int64
}

func states(t *testing.T, paths ...string) map[string]fileState {
	t.Helper()
	m := map[string]fileState{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(p)
		m[p] = fileState{b, fi.ModTime().UnixNano()}
	}
	return m
}

func unchanged(t *testing.T, before map[string]fileState) {
	t.Helper()
	after := states(t, keys(before)...)
	for p, s := range before {
		if !bytes.Equal(s.data, after[p].data) || s.mtime != after[p].mtime {
			t.Errorf("%s changed", p)
		}
	}
	for p := range before {
		if _, err := os.Stat(strings.TrimSuffix(strings.TrimSuffix(p, "-wal"), "-journal") + "-shm"); err == nil {
			t.Errorf("%s-shm created beside the input", p)
		}
	}
}

func keys(m map[string]fileState) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// sumStart scans t and returns its rows and the sum of its start column.
func sumStart(t *testing.T, path string, tab *ingest.Table) (rows, sum int64, warnings []string) {
	t.Helper()
	r, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d := digest(t, r, tab)
	return scanAll(t, r)[tab.Name], d[ingest.ColStart], r.Warnings()
}

// A database in WAL mode whose -wal holds committed rows is read with
// them (by the reader and by redact), and neither touches the input.
func TestWALRowsAreRead(t *testing.T) {
	orig := filepath.Join(sharedDir(t, "traces"), "um_pingpong_explicit.sqlite")
	work := copyTrace(t, orig)
	db, err := openRW(work + "?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`PRAGMA wal_autocheckpoint=0`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME`,
	} {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The input: the main file and the -wal, copied while the writer
	// still holds them (closing it would checkpoint).
	in := filepath.Join(t.TempDir(), "wal.sqlite")
	for _, s := range []string{"", "-wal"} {
		if err := copyFile(work+s, in+s); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	before := states(t, in, in+"-wal")
	origRows, origSum, _ := sumStart(t, orig, ingest.API)
	rows, sum, w := sumStart(t, in, ingest.API)
	if rows != 2*origRows || sum != 2*origSum {
		t.Errorf("read %d API rows (start sum %d), want the %d committed in the WAL too (%d)", rows, sum, 2*origRows, 2*origSum)
	}
	if len(w) != 1 || !strings.Contains(w[0], "wal.sqlite-wal applied") {
		t.Errorf("warnings %q, want one saying the WAL was applied", w)
	}
	out := filepath.Join(t.TempDir(), "redacted.sqlite")
	if _, err := redact.File(in, out); err != nil {
		t.Fatal(err)
	}
	if rows, sum, _ := sumStart(t, out, ingest.API); rows != 2*origRows || sum != 2*origSum {
		t.Errorf("redacted copy: %d API rows, want %d (the WAL's rows kept)", rows, 2*origRows)
	}
	if _, err := os.Stat(out + "-wal"); err == nil {
		t.Errorf("redact left %s-wal", out)
	}
	unchanged(t, before)
}

// A hot rollback journal (a write cut off mid-transaction: the main file
// already half changed) is rolled back, as SQLite would, on a copy: the
// rows are the committed ones, and the input stays as it is.
func TestHotJournalRolledBack(t *testing.T) {
	orig := filepath.Join(sharedDir(t, "traces"), "um_pingpong_explicit.sqlite")
	work := copyTrace(t, orig)
	db, err := openRW(work + "?_journal_mode=DELETE")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`PRAGMA cache_size=1`, `BEGIN`, `UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start=start+1000`, `UPDATE StringIds SET value=value||'x'`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	in := filepath.Join(t.TempDir(), "hot.sqlite")
	for _, s := range []string{"", "-journal"} {
		if err := copyFile(work+s, in+s); err != nil {
			t.Fatal(err)
		}
	}
	conn.ExecContext(ctx, `ROLLBACK`)
	conn.Close()
	if sidecar(in) != in+"-journal" {
		t.Fatal("the copied journal is not hot; the test makes no case")
	}
	if b, _ := os.ReadFile(in); bytes.Equal(b, mustRead(t, orig)) {
		t.Fatal("the main file is unchanged by the cut-off write; the test makes no case")
	}
	before := states(t, in, in+"-journal")
	origRows, origSum, _ := sumStart(t, orig, ingest.API)
	rows, sum, _ := sumStart(t, in, ingest.API)
	if rows != origRows || sum != origSum {
		t.Errorf("read %d API rows (start sum %d), want the committed %d (%d)", rows, sum, origRows, origSum)
	}
	unchanged(t, before)
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
