package nsys

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSQLiteOutOfMemory: where SQLite runs out of memory (its process-wide
// hard heap limit) while opening and checking a small trace, the error is
// ErrOutOfMemory, never a corrupt file: the whole-file integrity check at
// open once reported SQLite's out of memory as damage (exit 3 instead of
// 4). The limit can only be lowered, so the test runs in a child process
// of its own, from a limit the open fits down to ones it does not, each
// failing somewhere else in the open.
func TestSQLiteOutOfMemory(t *testing.T) {
	if os.Getenv("UMTRACE_TEST_SQLITE_NOMEM") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSQLiteOutOfMemory$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "UMTRACE_TEST_SQLITE_NOMEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		t.Logf("child:\n%s", out)
		return
	}
	path := filepath.Join(sharedDir(t, "traces"), "um_pingpong_default.sqlite")
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ooms, opened := 0, 0
	for n := int64(1 << 30); n >= 16<<10; n /= 2 {
		if _, err := db.Exec(fmt.Sprintf("PRAGMA hard_heap_limit=%d", n)); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path, Options{})
		switch {
		case err == nil:
			opened++
			r.Close()
		case errors.Is(err, ErrOutOfMemory) && !errors.Is(err, ErrCorrupt):
			ooms++
			t.Logf("hard heap limit %d: %v", n, err)
		default:
			t.Errorf("hard heap limit %d: %v, want an ErrOutOfMemory error", n, err)
		}
	}
	if ooms == 0 || opened == 0 {
		t.Errorf("%d limits ran out of memory, %d opened; want some of each", ooms, opened)
	}
}
