package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRedactByteFlips is a corruption campaign for redact: 120 mutants of
// a real export, each with 1 to 8 bytes changed (a third of them inside
// the first pages, where the schema and the string table live), are
// redacted. Each must exit 3 (bad input) with nothing left in the output
// directory, or exit 0 with an output that passes PRAGMA
// integrity_check and opens as an nsys export; never another code, never a
// panic, never a working file left behind.
func TestRedactByteFlips(t *testing.T) {
	src := tracePath(t, "um_pingpong_explicit")
	orig := readFile(t, src)
	n := 120
	if testing.Short() {
		n = 30
	}
	rng := rand.New(rand.NewPCG(26, 2))
	codes := map[int]int{}
	for i := range n {
		b := bytes.Clone(orig)
		limit := len(b)
		if i%3 == 0 {
			limit = min(len(b), 16<<10)
		}
		flips := 1 + rng.IntN(8)
		for range flips {
			off := rng.IntN(limit)
			b[off] ^= byte(1 + rng.IntN(255))
		}
		dir := t.TempDir()
		in := filepath.Join(dir, "in.sqlite")
		if err := os.WriteFile(in, b, 0o644); err != nil {
			t.Fatal(err)
		}
		outDir := filepath.Join(dir, "out")
		if err := os.Mkdir(outDir, 0o755); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(outDir, "red.sqlite")
		var so, se bytes.Buffer
		code := run(&so, &se, []string{"redact", in, out, "-q"})
		codes[code]++
		left, _ := os.ReadDir(outDir)
		switch code {
		case exitOK:
			if msg := verifiedExport(out); msg != "" {
				t.Errorf("mutant %d: exit 0 with an output that fails verification: %s", i, msg)
			}
			if len(left) != 1 {
				t.Errorf("mutant %d: exit 0 left %d files in the output directory, want 1", i, len(left))
			}
		case exitBadInput:
			if len(left) != 0 {
				t.Errorf("mutant %d: exit 3 left %s in the output directory", i, left[0].Name())
			}
			if msg := strings.TrimSpace(se.String()); strings.Count(msg, "\n") != 0 || !strings.Contains(msg, in) {
				t.Errorf("mutant %d: error is not one line naming the input: %q", i, msg)
			}
		default:
			t.Errorf("mutant %d: exit %d, want 0 or 3: %s", i, code, se.String())
		}
		if !bytes.Equal(readFile(t, in), b) {
			t.Fatalf("mutant %d: redact modified its input", i)
		}
	}
	t.Logf("%d mutants: exit codes %v", n, codes)
	if codes[exitBadInput] == 0 || codes[exitOK] == 0 {
		t.Errorf("exit codes %v: the campaign should see both rejected and accepted mutants", codes)
	}
}

// verifiedExport returns "" when p passes PRAGMA integrity_check and opens
// as an nsys export, or what is wrong.
func verifiedExport(p string) string {
	db, err := sql.Open("sqlite3", "file:"+p+"?mode=ro")
	if err != nil {
		return err.Error()
	}
	defer db.Close()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil {
		return err.Error()
	}
	if res != "ok" {
		return "integrity_check: " + res
	}
	if err := checkExport(p); err != nil {
		return fmt.Sprint("nsys open: ", err)
	}
	return ""
}
