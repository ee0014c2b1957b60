package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRedactReportUnchanged: the JSON analysis report of a redacted trace
// equals the original's (but for the trace's file name), and planted secrets are gone.
func TestRedactReportUnchanged(t *testing.T) {
	src := tracePath(t, "um_pingpong_default")
	dir := t.TempDir()
	in := filepath.Join(dir, "in.sqlite")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", in)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`INSERT INTO META_DATA_CAPTURE(name, value) VALUES ('PROCESS_0:ENVIRONMENT_VARIABLE_AWS_SECRET', 'xyzPLANTED')`,
		`UPDATE TARGET_INFO_SYSTEM_ENV SET value = 'node-secret-42' WHERE name = 'Hostname'`,
		`UPDATE META_DATA_CAPTURE SET value = '/home/carol/run' WHERE name = 'PROCESS_0:WORKING_DIR'`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	out := filepath.Join(dir, "out.sqlite")
	var so, se bytes.Buffer
	if code := run(&so, &se, []string{"redact", in, out}); code != exitOK {
		t.Fatalf("redact exit %d: %s", code, se.String())
	}
	red, _ := os.ReadFile(out)
	for _, s := range []string{"xyzPLANTED", "node-secret-42", "/home/carol"} {
		if bytes.Contains(red, []byte(s)) {
			t.Errorf("redacted trace still holds %q", s)
		}
	}
	report := func(p string) []byte {
		var o, e bytes.Buffer
		code := run(&o, &e, []string{"analyze", "--format", "json", p})
		if code != exitOK {
			t.Fatalf("analyze %s: exit %d: %s", p, code, e.String())
		}
		b := regexp.MustCompile(`"(path|file)":\s*"[^"]*"`).ReplaceAll(o.Bytes(), []byte(`"$1":""`))
		return regexp.MustCompile(`"files":\s*\[[^\]]*\]`).ReplaceAll(b, []byte(`"files":[]`))
	}
	if a, b := report(in), report(out); !bytes.Equal(a, b) {
		t.Errorf("analysis report changed by redaction:\n%s\n---\n%s", a, b)
	}
}

func TestRedactUsage(t *testing.T) {
	var so, se bytes.Buffer
	if code := run(&so, &se, []string{"redact", "only-one"}); code != exitUsage {
		t.Errorf("one argument: exit %d, want %d", code, exitUsage)
	}
	if code := run(&so, &se, []string{"redact", filepath.Join(t.TempDir(), "missing.sqlite"), "x"}); code != exitBadInput {
		t.Errorf("missing input: exit %d, want %d", code, exitBadInput)
	}
	p := filepath.Join(t.TempDir(), "a.sqlite")
	os.WriteFile(p, []byte("not sqlite, just text......"), 0o644)
	if code := run(&so, &se, []string{"redact", p, p + ".out"}); code != exitBadInput {
		t.Errorf("not sqlite: exit %d, want %d", code, exitBadInput)
	}
}

// redact --report says what was replaced where (table, column, rule,
// count) and never a value; --report=FILE.json writes the same as JSON.
func TestRedactReportFlag(t *testing.T) {
	src := tracePath(t, "um_pingpong_default")
	dir := t.TempDir()
	in := filepath.Join(dir, "in.sqlite")
	copyTo(t, src, in)
	db, err := sql.Open("sqlite3", in)
	if err != nil {
		t.Fatal(err)
	}
	const tok = "ghp_REPORTTEST0123456789abcdefghijklmnop"
	for _, s := range []string{
		`INSERT INTO META_DATA_CAPTURE(name, value) VALUES ('CUSTOM_NOTE', 'pushed with ` + tok + `')`,
		`INSERT INTO StringIds(id, value) VALUES ((SELECT max(id) + 1 FROM StringIds), CAST('DB_PASSWORD=hunter2x' AS BLOB))`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	out := filepath.Join(dir, "out.sqlite")
	var so, se bytes.Buffer
	if code := run(&so, &se, []string{"redact", in, out, "-q", "--report"}); code != exitOK {
		t.Fatalf("redact --report: exit %d: %s", code, se.String())
	}
	rep := se.String()
	for _, want := range []string{"META_DATA_CAPTURE  value", "github-token", "StringIds", "environment"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
	for _, leak := range []string{tok, "hunter2x"} {
		if strings.Contains(rep, leak) {
			t.Errorf("report prints the value %q", leak)
		}
	}
	jf := filepath.Join(dir, "rep.json")
	se.Reset()
	if code := run(&so, &se, []string{"redact", in, filepath.Join(dir, "out2.sqlite"), "-q", "--report=" + jf}); code != exitOK {
		t.Fatalf("redact --report=FILE: exit %d: %s", code, se.String())
	}
	var got struct {
		Replaced []struct {
			Table, Column, Rule string
			Count               int
		}
	}
	b := readFile(t, jf)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range got.Replaced {
		if r.Table == "META_DATA_CAPTURE" && r.Column == "value" && r.Rule == "github-token" && r.Count == 1 {
			found = true
		}
	}
	if !found || bytes.Contains(b, []byte(tok)) || se.Len() != 0 {
		t.Errorf("JSON report %s (stderr %q): want a github-token line with count 1 and no value", b, se.String())
	}
	red := readFile(t, out)
	if bytes.Contains(red, []byte(tok)) || bytes.Contains(red, []byte("hunter2x")) {
		t.Error("redacted output still holds a planted secret")
	}
}
