package redact

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
)

var sharedTrace = testshared.Path("traces", "um_pingpong_default.sqlite")

// secrets planted into the fixture; none may survive redaction.
var secrets = []string{
	"xyzAWSSECRET123", "ghp_plantedtoken456", "alice-laptop.corp.example", "alicesmith", "/home/alicesmith",
	"10.1.2.3 55555",
}

func fixture(t *testing.T) string {
	t.Helper()
	src := sharedTrace
	if _, err := os.Stat(src); err != nil {
		testshared.Skip(t, src)
	}
	dst := filepath.Join(t.TempDir(), "in.sqlite")
	copyFile(t, src, dst)
	db, err := sql.Open("sqlite3", dst)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stmts := []string{
		`INSERT INTO META_DATA_CAPTURE(name, value) VALUES ('PROCESS_0:ENVIRONMENT_VARIABLE_AWS_SECRET', 'xyzAWSSECRET123')`,
		`INSERT INTO META_DATA_CAPTURE(name, value) VALUES ('PROCESS_0:ENVIRONMENT_VARIABLE', 'GITHUB_TOKEN="ghp_plantedtoken456"')`,
		`INSERT INTO META_DATA_CAPTURE(name, value) VALUES ('PROCESS_0:ENVIRONMENT_VARIABLE', 'SSH_CONNECTION="10.1.2.3 55555 10.0.0.1 22"')`,
		`UPDATE META_DATA_CAPTURE SET value = '/home/alicesmith/proj' WHERE name = 'PROCESS_0:WORKING_DIR'`,
		`UPDATE META_DATA_CAPTURE SET value = '/home/alicesmith/proj/um_cupti' WHERE name = 'PROCESS_0:COMMAND'`,
		`UPDATE META_DATA_CAPTURE SET value = 'alice-laptop.corp.example' WHERE name = 'DEVICE_DISPLAY_NAME'`,
		`UPDATE META_DATA_EXPORT SET value = 'alicesmith' WHERE name = 'EXPORT_USER'`,
		`UPDATE META_DATA_EXPORT SET value = 'alice-laptop.corp.example' WHERE name = 'EXPORT_HOST'`,
		`UPDATE META_DATA_EXPORT SET value = '/home/alicesmith/proj/um_mode0.sqlite' WHERE name LIKE 'EXPORT_PARAM_OUTPUT_PATH%'`,
		`UPDATE TARGET_INFO_SYSTEM_ENV SET value = 'alice-laptop.corp.example' WHERE name = 'Hostname'`,
		`UPDATE TARGET_INFO_SYSTEM_ENV SET value = 'AWS_KEY=xyzAWSSECRET123;HOME=/home/alicesmith' WHERE name = 'DeviceEnvironment'`,
		`INSERT INTO StringIds(id, value) VALUES ((SELECT max(id) + 1 FROM StringIds), '/home/alicesmith/proj/libfoo.so')`,
		`INSERT INTO StringIds(id, value) VALUES ((SELECT max(id) + 1 FROM StringIds), 'connect to alice-laptop.corp.example')`,
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return dst
}

func copyFile(t *testing.T, src, dst string) { testshared.CopyFile(t, src, dst) }

func fileHash(t *testing.T, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// tableDigest hashes every row of every event table (all tables except
// the metadata and string tables) in rowid order.
func tableDigest(t *testing.T, path string) map[string]string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables, err := listTables(db)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tb := range tables {
		if isMetaTable(tb) || tb == "StringIds" {
			continue
		}
		rows, err := db.Query(fmt.Sprintf("SELECT * FROM %q", tb))
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		h := sha256.New()
		n := 0
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(h, "%v\n", vals)
			n++
		}
		rows.Close()
		out[tb] = fmt.Sprintf("%d:%x", n, h.Sum(nil))
	}
	return out
}

func TestRedactRemovesSecretsAndKeepsEvents(t *testing.T) {
	in := fixture(t)
	before := fileHash(t, in)
	raw, _ := os.ReadFile(in)
	for _, s := range secrets {
		if !bytes.Contains(raw, []byte(s)) {
			t.Fatalf("fixture lacks %q", s)
		}
	}
	out := filepath.Join(t.TempDir(), "out.sqlite")
	st, err := File(in, out)
	if err != nil {
		t.Fatal(err)
	}
	if fileHash(t, in) != before {
		t.Fatal("redact modified its input")
	}
	if st.EnvRowsDeleted < 4 {
		t.Errorf("deleted %d environment rows, want at least 4 (3 planted + DeviceEnvironment)", st.EnvRowsDeleted)
	}
	red, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if bytes.Contains(red, []byte(s)) {
			t.Errorf("redacted file still contains %q", s)
		}
	}
	if !bytes.Contains(red, []byte("~/proj/libfoo.so")) {
		t.Error("home path in StringIds not masked to ~/...")
	}
	if !bytes.Contains(red, []byte(HostMask)) || !bytes.Contains(red, []byte(UserMask)) {
		t.Error("masks missing from the redacted file")
	}
	b, a := tableDigest(t, in), tableDigest(t, out)
	if len(b) == 0 {
		t.Fatal("no event tables found")
	}
	for tb, d := range b {
		if a[tb] != d {
			t.Errorf("event table %s changed: %s -> %s", tb, d, a[tb])
		}
	}
}

func TestRedactRefusesInPlace(t *testing.T) {
	in := fixture(t)
	if _, err := File(in, in); err == nil || !strings.Contains(err.Error(), "never modifies") {
		t.Fatalf("File(in, in) = %v, want refusal", err)
	}
}

func TestRedactNotSQLite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.sqlite")
	if err := os.WriteFile(p, []byte("hello, not a database at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := File(p, p+".out"); err == nil {
		t.Fatal("want error for a non-SQLite input")
	}
	if _, err := os.Stat(p + ".out"); err == nil {
		t.Fatal("output written for a bad input")
	}
}

func TestMask(t *testing.T) {
	m := newMasker(identities{hosts: []string{"gpu-node7.example.org", "gpu-node7"}, users: []string{"bob99"}})
	cases := []struct {
		in     string
		strict bool
		want   string
	}{
		{"/home/bob99/src/app", false, "~/src/app"},
		{"/Users/bob99/x", false, "~/x"},
		{`C:\Users\bob99\AppData`, false, `~\AppData`},
		{"/root/WorkSpace/a.out", false, "~/WorkSpace/a.out"},
		{"/rootfs/x", false, "/rootfs/x"},
		{"ssh bob99@gpu-node7.example.org", false, "ssh " + UserMask + "@" + HostMask},
		{"gpu-node7", false, HostMask},
		{"bob99_kernel", true, "bob99_kernel"},
		{"gpu-node7 kernel", true, HostMask + " kernel"},
	}
	for _, c := range cases {
		if got := m.mask(c.in, c.strict); got != c.want {
			t.Errorf("mask(%q, %v) = %q, want %q", c.in, c.strict, got, c.want)
		}
	}
}

// The NUL-separated environment block nsys keeps in StringIds loses every
// variable but the kept ones, entry by entry: HOME=/home/alice\0SECRET=X
// must lose X and alice (it once became HOME=~=X).
func TestEnvBlockEntries(t *testing.T) {
	id := identities{}
	block := "HOME=/home/alice\x00AWS_SECRET_ACCESS_KEY=X1secret\x00USER=alice\x00RANK=3\x00" +
		"SSH_CONNECTION=203.0.113.7 5555 198.51.100.9 22\x00CUDA_VISIBLE_DEVICES=0,1\x00LOCAL_RANK=/home/alice\x00"
	for _, e := range strings.Split(block, "\x00") {
		if k, v, ok := strings.Cut(e, "="); ok {
			id.addEnv(k, v)
		}
	}
	if !slicesHas(id.users, "alice") || !slicesHas(id.hosts, "203.0.113.7") || !slicesHas(id.homes, "/home/alice") {
		t.Fatalf("identities from the block: %+v", id)
	}
	m := newMasker(id)
	got, n := m.stringValue(block)
	if want := "RANK=3\x00CUDA_VISIBLE_DEVICES=0,1"; got != want || n != 5 {
		t.Errorf("stringValue(block) = %q, %d dropped; want %q, 5", got, n, want)
	}
	cases := []struct{ in, want string }{
		{"HOME=/home/alice\x00AWS_SECRET_ACCESS_KEY=X", EnvMask},
		{"PATH=/usr/local/cuda/bin:/usr/bin", EnvMask}, // a one-entry environment
		{"WORLD_SIZE=8", "WORLD_SIZE=8"},               // kept
		{"RANK_TOKEN=3", EnvMask},                      // not in the allowlist
		{"python\x00train.py\x00--token\x00abc", "python\x00train.py\x00--token\x00" + SecretMask},
		{"/home/alice/src/k.cu", "~/src/k.cu"},       // a file name
		{"lr = 0.1 at step=5", "lr = 0.1 at step=5"}, // program output, not an entry
		{"std::string::operator=(x)", "std::string::operator=(x)"},
	}
	for _, c := range cases {
		if got, _ := m.stringValue(c.in); got != c.want {
			t.Errorf("stringValue(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// DeviceEnvironment in nsys 2024.x joins entries with ';'.
	semi := "LESSOPEN=| /usr/bin/lesspipe %s;VSCODE_CWD=/home/alice;USER=alice;SLURM_PROCID=2;SSH_CLIENT=203.0.113.7 1 22"
	if got, n := m.filterEnvBlock(semi); got != "SLURM_PROCID=2" || n != 4 {
		t.Errorf("filterEnvBlock(;) = %q, %d; want SLURM_PROCID=2, 4", got, n)
	}
}

func slicesHas(v []string, s string) bool {
	for _, x := range v {
		if x == s {
			return true
		}
	}
	return false
}

func TestArgvAndPaths(t *testing.T) {
	m := newMasker(identities{users: []string{"kevinliu"}, homes: []string{"/lustre/u/kl"}, hosts: []string{"203.0.113.7"}})
	args := []string{"--password", "hunter2", "--api-token=abc", "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z", "AWS_SECRET_ACCESS_KEY=q", "USER=kevinliu",
		"--out", "/pscratch/sd/k/kevinliu/run", "/lustre/u/kl/data", "--host", "203.0.113.7", "8", "--scenario", "managed"}
	want := []string{"--password", SecretMask, "--api-token=" + SecretMask, SecretMask, "AWS_SECRET_ACCESS_KEY=" + SecretMask, "USER=" + SecretMask,
		"--out", "~/run", "~/data", "--host", HostMask, "8", "--scenario", "managed"}
	got := m.maskArgv(args)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("arg %d: %q -> %q, want %q", i, args[i], got[i], want[i])
		}
	}
	paths := map[string]string{
		"/global/u1/a/alicew/x.cu":         "~/x.cu",
		"/global/homes/a/alicew":           "~",
		"PATH=/data/kevinliu/bin:/usr/bin": "PATH=~/bin:/usr/bin",
		`D:\work\kevinliu\a.exe`:           `~\a.exe`,
		"/opt/kevinliux/bin":               "/opt/kevinliux/bin",
		"/lustre/u/klx":                    "/lustre/u/klx",
	}
	for in, w := range paths {
		if g := m.mask(in, true); g != w {
			t.Errorf("mask(%q, strict) = %q, want %q", in, g, w)
		}
	}
}

// An environment table without name/value columns is filtered cell by
// cell as blocks; a row left with nothing is deleted.
func TestEnvTableBlocks(t *testing.T) {
	in := fixture(t)
	db, err := sql.Open("sqlite3", in)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE PROCESS_ENV(globalPid INTEGER, env TEXT)`,
		"INSERT INTO PROCESS_ENV VALUES (1, 'HOME=/home/carol' || char(0) || 'API_TOKEN=zzPLANTEDzz' || char(0) || 'LOCAL_RANK=2')",
		"INSERT INTO PROCESS_ENV VALUES (2, 'USER=carol' || char(0) || 'SHELL=/bin/bash')",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	out := filepath.Join(t.TempDir(), "out.sqlite")
	st, err := File(in, out)
	if err != nil {
		t.Fatal(err)
	}
	o, err := sql.Open("sqlite3", "file:"+out+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	rows, err := o.Query(`SELECT globalPid, env FROM PROCESS_ENV ORDER BY globalPid`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var pid int
		var env string
		rows.Scan(&pid, &env)
		got = append(got, fmt.Sprintf("%d:%s", pid, env))
	}
	rows.Close()
	if len(got) != 1 || got[0] != "1:LOCAL_RANK=2" {
		t.Errorf("PROCESS_ENV after redact = %q, want [1:LOCAL_RANK=2]", got)
	}
	red, _ := os.ReadFile(out)
	for _, s := range []string{"zzPLANTEDzz", "carol", "/bin/bash"} {
		if bytes.Contains(red, []byte(s)) {
			t.Errorf("redacted file still holds %q", s)
		}
	}
	if st.EnvEntriesDropped < 2 || !strings.Contains(strings.Join(st.Tables, ","), "PROCESS_ENV") {
		t.Errorf("stats %+v: want PROCESS_ENV changed and 2+ entries dropped", st)
	}
}

// A damaged input is refused with ErrCorrupt before anything is written
// under the output's name, and the working copy is removed.
func TestRedactCorruptInput(t *testing.T) {
	in := fixture(t)
	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	// Overwrite the middle of the file (b-tree pages) with garbage.
	for i := len(b) / 2; i < len(b)/2+8192 && i < len(b); i++ {
		b[i] = byte(i * 7)
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out.sqlite")
	_, err = File(in, out)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("File(corrupt) = %v, want ErrCorrupt", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left %s in the output directory", left[0].Name())
	}
}

// The working copy is private (0600) while it holds unredacted bytes:
// Write creates it so, and the handed-over file gets the input's mode.
func TestRedactWorkingCopyMode(t *testing.T) {
	in := fixture(t)
	dir := t.TempDir()
	w := filepath.Join(dir, TempPrefix+"x")
	if _, err := Write(in, w, Options{Check: func(p string) error {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			return fmt.Errorf("working copy mode %o, want 600", m)
		}
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	os.Remove(w)
	out := filepath.Join(dir, "out.sqlite")
	if _, err := File(in, out); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 || left[0].Name() != "out.sqlite" {
		t.Errorf("output directory holds %v, want out.sqlite only", left)
	}
	// A failing check keeps the copy from being handed over.
	out2 := filepath.Join(dir, "out2.sqlite")
	if _, err := FileOpts(in, out2, Options{Check: func(string) error { return errors.New("no") }}); !errors.Is(err, ErrVerify) {
		t.Errorf("FileOpts with a failing check = %v, want ErrVerify", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("a refused copy left files: %v", left)
	}
}

// The scanner reads every TEXT and BLOB value whatever the column's
// declared type, in WITHOUT ROWID tables too, and keeps a BLOB a BLOB;
// the report counts per table, column and rule.
func TestScanEveryValue(t *testing.T) {
	in := fixture(t)
	db, err := sql.Open("sqlite3", in)
	if err != nil {
		t.Fatal(err)
	}
	const tok = "hf_SCANTESTabcdefghijklmnopqrstuvwxyz0123"
	for _, q := range []string{
		`CREATE TABLE NOTES(k TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID`,
		`INSERT INTO NOTES VALUES ('a', CAST('login ` + tok + `' AS BLOB))`,
		`CREATE TABLE COUNTS(id INTEGER PRIMARY KEY, n INTEGER)`,
		`INSERT INTO COUNTS VALUES (1, 'Authorization: Bearer abcdefgh12345678')`,
		// Captured program output: ANALYSIS_FILE.contentId names a string.
		`INSERT INTO StringIds(id, value) VALUES ((SELECT max(id) + 1 FROM StringIds), 'export AWS_ACCESS_KEY_ID=AKIAABCDEFGHIJKLMNOP' || char(10) || 'done')`,
		`UPDATE ANALYSIS_FILE SET contentId = (SELECT max(id) FROM StringIds) WHERE rowid = (SELECT min(rowid) FROM ANALYSIS_FILE)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	out := filepath.Join(t.TempDir(), "out.sqlite")
	st, err := File(in, out)
	if err != nil {
		t.Fatal(err)
	}
	o, err := sql.Open("sqlite3", "file:"+out+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	var typ, v, n, content string
	if err := o.QueryRow(`SELECT typeof(v), CAST(v AS TEXT) FROM NOTES`).Scan(&typ, &v); err != nil {
		t.Fatal(err)
	}
	if typ != "blob" || v != "login "+SecretMask {
		t.Errorf("NOTES.v = %s %q, want blob %q", typ, v, "login "+SecretMask)
	}
	if err := o.QueryRow(`SELECT n FROM COUNTS`).Scan(&n); err != nil || n != "Authorization: Bearer "+SecretMask {
		t.Errorf("COUNTS.n = %q (%v)", n, err)
	}
	if err := o.QueryRow(`SELECT s.value FROM ANALYSIS_FILE a JOIN StringIds s ON s.id = a.contentId ORDER BY a.rowid LIMIT 1`).Scan(&content); err != nil || content != "export AWS_ACCESS_KEY_ID="+SecretMask+"\ndone" {
		t.Errorf("ANALYSIS_FILE content = %q (%v)", content, err)
	}
	want := map[string]bool{"NOTES/v/huggingface-token": true, "COUNTS/n/authorization": true, "StringIds/value/aws-access-key": true}
	for _, r := range st.Replaced {
		delete(want, r.Table+"/"+r.Column+"/"+r.Rule)
	}
	if len(want) != 0 {
		t.Errorf("report %+v lacks %v", st.Replaced, want)
	}
}
