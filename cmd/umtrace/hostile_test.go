package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
)

// copyInto copies src into dir and returns the copy's path.
func copyInto(t *testing.T, dir, src string) string {
	p := filepath.Join(dir, filepath.Base(src))
	testshared.CopyFile(t, src, p)
	return p
}

// analyzeJSON runs analyze -f json on path and decodes the report.
func analyzeJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	var so, se bytes.Buffer
	if code := run(&so, &se, []string{"analyze", path, "-f", "json"}); code != exitOK {
		t.Fatalf("analyze %s: exit %d: %s", path, code, se.String())
	}
	var m map[string]any
	if err := json.Unmarshal(so.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A memcpy whose copyKind is out of range (valid SQLite; -45 once crashed
// every command with an index out of range, -1 counted the copy as a
// kernel run) is read as an unknown copy: every command runs, the kernels
// are those of the original trace, and the report says what was replaced.
func TestOutOfRangeCopyKind(t *testing.T) {
	orig := testshared.Need(t, "traces", "um_pingpong_default.sqlite")
	want := analyzeJSON(t, orig)
	for _, kind := range []string{"-45", "-1", "1000000"} {
		dir := t.TempDir()
		p := copyInto(t, dir, orig)
		db, err := sql.Open("sqlite3", p)
		if err != nil {
			t.Fatal(err)
		}
		// The first ordinary copy (kind 11, a UM HtoD) becomes an
		// unknown kind: no longer a migration, a copy on its stream.
		if _, err := db.Exec(`UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind=` + kind + ` WHERE rowid=(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_MEMCPY)`); err != nil {
			t.Fatal(err)
		}
		db.Close()
		got := analyzeJSON(t, p)
		if !reflect.DeepEqual(got["kernels"], want["kernels"]) {
			t.Errorf("copyKind=%s: kernels\n%v\nwant\n%v", kind, got["kernels"], want["kernels"])
		}
		ws, _ := json.Marshal(got["warnings"])
		if !strings.Contains(string(ws), "CUPTI_ACTIVITY_KIND_MEMCPY.copyKind: 1 row with values outside 0..13") {
			t.Errorf("copyKind=%s: warnings %s", kind, ws)
		}
		other := copyInto(t, t.TempDir(), orig)
		for _, args := range [][]string{
			{"analyze", p, "-f", "md"},
			{"analyze", p, "-f", "html"},
			{"batch", dir, "-q", "--out-dir", filepath.Join(t.TempDir(), "batch")},
			{"diff", other, p},
			{"gate", p},
			{"export", p, "--out-dir", filepath.Join(t.TempDir(), "out")},
		} {
			var so, se bytes.Buffer
			code := run(&so, &se, args)
			if code != exitOK && code != exitFail {
				t.Errorf("copyKind=%s: %q: exit %d: %s", kind, args, code, se.String())
			}
		}
	}
}
