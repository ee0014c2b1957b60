package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/ingest/testshared"
)

// The planted identity and secrets. None may survive redaction, in the
// output file or beside it.
var (
	plantUser = "zorblatt"
	plantHost = "zorbhost.example.org"
	plantIPs  = []string{"203.0.113.77", "198.51.100.9"}
	// A GitHub-style token passed as a bare argument (PLANTEDSECRET8).
	plantGHToken = "ghp_PLANTEDSECRET8aB3dE5fG7hJ9kL1mN3pQ5r"
)

// blobUser is named only by an environment block stored as a BLOB (and
// in a note that redaction must find it in).
const blobUser = "blobuserqz"

func planted(i int) string { return fmt.Sprintf("PLANTEDSECRET%d", i) }

// sharedExports lists every shared and external nsys SQLite export.
func sharedExports(t *testing.T) []string {
	var out []string
	for _, dir := range []string{testshared.Path("traces"), testshared.Path("external", "nsys")} {
		m, _ := filepath.Glob(filepath.Join(dir, "*.sqlite"))
		out = append(out, m...)
	}
	if len(out) == 0 {
		t.Skipf("no shared exports under %s (set UMTRACE_SHARED or clone beside ../shared)", testshared.SharedDir())
	}
	sort.Strings(out)
	return out
}

// TestRedactPlantedSecrets plants a value holding a secret of every rule
// (plantedSecret) as TEXT and as BLOB in a new row of every table of each
// shared and external export (plantEveryTable), and secrets and an
// identity in every place nsys stores environments, argv, users and hosts
// that exists in the export's schema (StringIds environment blocks,
// argv lists and paths; META_DATA_CAPTURE environment, PROCESS_0:ENV_*,
// argument, working-directory and user rows; TARGET_INFO_SYSTEM_ENV
// EnvVars; META_DATA_EXPORT/EXPORT_META_DATA user and paths; a ProcessEnv
// table; a committed row left in the -wal), redacts it with the CLI, and
// checks that the output bytes (and any -wal/-journal beside them) hold
// none of them nor the file's own users, home paths and SSH addresses;
// that the kept rank variables survive; that the output is the same
// bytes twice; and that the JSON analysis of the output equals the
// input's.
func TestRedactPlantedSecrets(t *testing.T) {
	files := sharedExports(t)
	if testing.Short() && len(files) > 3 {
		files = files[:3]
	}
	for i, src := range files {
		t.Run(strings.TrimSuffix(filepath.Base(src), ".sqlite"), func(t *testing.T) {
			dir := t.TempDir()
			real := originalIdentities(t, src)
			in, ref, kept := plantSecrets(t, src, dir)
			plantedBytes := readFile(t, ref)
			for _, s := range secretLeaks {
				if !bytes.Contains(plantedBytes, []byte(s)) {
					t.Fatalf("the planted copy lacks %q", s)
				}
			}
			raw, err := os.ReadFile(in + "-wal")
			if err != nil || !bytes.Contains(raw, []byte(planted(12))) {
				t.Fatalf("the -wal beside the input lacks the planted row (%v)", err)
			}
			out := filepath.Join(dir, "out.sqlite")
			var so, se bytes.Buffer
			if code := run(&so, &se, []string{"redact", in, out, "-q"}); code != exitOK {
				t.Fatalf("redact: exit %d: %s", code, se.String())
			}
			var red []byte
			for _, s := range []string{"", "-wal", "-journal", "-shm"} {
				b, err := os.ReadFile(out + s)
				if err == nil {
					red = append(red, b...)
				}
			}
			leaks := []string{plantUser, plantHost, "zorbhost", plantGHToken}
			leaks = append(leaks, plantIPs...)
			leaks = append(leaks, blobUser)
			for i := 1; i <= 14; i++ {
				leaks = append(leaks, planted(i))
			}
			leaks = append(leaks, real...)
			leaks = append(leaks, secretLeaks...)
			for _, s := range leaks {
				if bytes.Contains(red, []byte(s)) {
					t.Errorf("redacted output still holds %q", s)
				}
			}
			db := openRO(t, out)
			for _, q := range kept {
				var n int
				if err := db.QueryRow(q).Scan(&n); err != nil || n == 0 {
					t.Errorf("kept variable lost: %s (%d rows, %v)", q, n, err)
				}
			}
			db.Close()

			// Same input, same bytes (on every fourth export: a redaction
			// is most of this test's time).
			if i%4 == 0 {
				out2 := filepath.Join(dir, "out2.sqlite")
				if code := run(&so, &se, []string{"redact", in, out2, "-q"}); code != exitOK {
					t.Fatalf("redact again: exit %d: %s", code, se.String())
				}
				if a, b := readFile(t, out), readFile(t, out2); !bytes.Equal(a, b) {
					t.Errorf("two redactions of the same input differ")
				}
			}

			ra, ca := redactedAnalysis(t, ref)
			rb, cb := redactedAnalysis(t, out)
			if ca != cb || !bytes.Equal(ra, rb) {

				t.Errorf("analysis changed by redaction (exit %d vs %d):\n%s", ca, cb, lineDiff(ra, rb))
			}
		})
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openRO(t *testing.T, p string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+p+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	return db
}

var (
	pathField = regexp.MustCompile(`"(path|file|trace)":\s*"[^"]*"`)
	// Home directories in names (a process named /root/x/app) are the one
	// change redaction may make to a report: they read ~ in both.
	homeInName = regexp.MustCompile(`(?:/root|/home/[^/"\\]+|/Users/[^/"\\]+|/global/(?:u\d+|homes)/[^/"]/[^/"\\]+)([/"])`)
)

// redactedAnalysis runs umtrace analyze -f json on p and returns the report
// without its file name fields and with home directories read as ~ (or
// the error line without the path), and the exit code.
func redactedAnalysis(t *testing.T, p string) ([]byte, int) {
	t.Helper()
	var o, e bytes.Buffer
	code := run(&o, &e, []string{"analyze", "--format", "json", p})
	b := pathField.ReplaceAll(o.Bytes(), []byte(`"$1":""`))
	// A job report lists its files by name.
	b = bytes.ReplaceAll(b, []byte(`"`+filepath.Base(p)+`"`), []byte(`"TRACE"`))
	b = homeInName.ReplaceAll(b, []byte(`~$1`))
	b = append(b, bytes.ReplaceAll(e.Bytes(), []byte(p), []byte("TRACE"))...)
	return b, code
}

// originalIdentities reads, without the redact package, the users, home
// directories and SSH addresses that the export itself records in its
// environments and export metadata. System accounts (root, gdm, ...) and
// values under 4 bytes are left out: they are not anyone's identity.
func originalIdentities(t *testing.T, p string) []string {
	t.Helper()
	db := openRO(t, p)
	defer db.Close()
	var text []string
	collect := func(q string) {
		rows, err := db.Query(q)
		if err != nil {
			return // table absent in this schema
		}
		defer rows.Close()
		for rows.Next() {
			var v sql.NullString
			if rows.Scan(&v) == nil {
				text = append(text, v.String)
			}
		}
	}
	collect(`SELECT value FROM StringIds`)
	collect(`SELECT value FROM META_DATA_CAPTURE WHERE name LIKE '%ENV%'`)
	collect(`SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name LIKE '%Env%'`)
	all := strings.Join(text, "\x00")
	system := regexp.MustCompile(`^(root|gdm3?|colord|nobody|daemon|messagebus|syslog|avahi|kernoops|rtkit|whoopsie|pulse|lightdm|sddm|polkitd|xrdp|netdata|UNKNOWN|systemd-.*)$`)
	re := regexp.MustCompile(`(?:^|[\x00;\n])(USER|LOGNAME|USERNAME|SLURM_JOB_USER|SSH_CONNECTION|SSH_CLIENT|HOME|COMPUTERNAME|PMI_SHARED_SECRET|VSCODE_CLI_REQUIRE_TOKEN)="?([^\x00;\n"]*)`)
	seen := map[string]bool{}
	var out []string
	add := func(v string) {
		v = strings.TrimSpace(v)
		if len(v) >= 4 && !system.MatchString(v) && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, m := range re.FindAllStringSubmatch(all, -1) {
		switch m[1] {
		case "SSH_CONNECTION", "SSH_CLIENT":
			for _, f := range strings.Fields(m[2]) {
				if strings.Count(f, ".") == 3 {
					add(f)
				}
			}
		case "HOME":
			if regexp.MustCompile(`^/(home|Users|global)/`).MatchString(m[2]) {
				add(m[2])
			}
		default:
			add(m[2])
		}
	}
	for _, q := range []string{`SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_USER'`, `SELECT value FROM EXPORT_META_DATA WHERE name = 'EXPORT_USER'`} {
		text = text[:0]
		collect(q)
		for _, v := range text {
			add(v)
		}
	}
	return out
}

// plantSecrets copies src to dir/in.sqlite, plants the secrets where the
// schema has room for them, and leaves one committed row in in.sqlite-wal.
// ref is the same content with the WAL checkpointed (what the analysis is
// compared against); kept are queries that must find the kept rank
// variables in the redacted copy.
func plantSecrets(t *testing.T, src, dir string) (in, ref string, kept []string) {
	t.Helper()
	work := filepath.Join(dir, "work.sqlite")
	if err := os.WriteFile(work, readFile(t, src), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+work+"?_journal_mode=DELETE")
	if err != nil {
		t.Fatal(err)
	}
	has := map[string]bool{}
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		has[n] = true
	}
	rows.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	nextID := func() int64 {
		var id int64
		if err := db.QueryRow(`SELECT coalesce(max(id), 0) + 1 FROM StringIds`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	home := "/home/" + plantUser
	if has["StringIds"] {
		block := strings.Join([]string{"HOME=" + home, "AWS_SECRET_ACCESS_KEY=" + planted(1), "USER=" + plantUser,
			"SSH_CONNECTION=" + plantIPs[0] + " 5555 " + plantIPs[1] + " 22", "HOSTNAME=" + plantHost, "RANK=3",
			"PATH=/global/u1/z/" + plantUser + "/bin:/usr/bin", "LOGNAME=" + plantUser}, "\x00")
		exec(`INSERT INTO StringIds(id, value) VALUES (?, ?)`, nextID(), block)
		kept = append(kept, `SELECT count(*) FROM StringIds WHERE value = 'RANK=3'`)
		exec(`INSERT INTO StringIds(id, value) VALUES (?, ?)`, nextID(), "GITLAB_TOKEN="+planted(2))
		exec(`INSERT INTO StringIds(id, value) VALUES (?, ?)`, nextID(), "python\x00train.py\x00--password\x00"+planted(3))
		exec(`INSERT INTO StringIds(id, value) VALUES (?, ?)`, nextID(), "/global/u1/z/"+plantUser+"/src/kernel.cu")
		exec(`INSERT INTO StringIds(id, value) VALUES (?, ?)`, nextID(), "/scratch/"+plantUser+"/out.log")
	}
	if has["META_DATA_CAPTURE"] {
		for _, v := range []string{`AWS_SECRET_ACCESS_KEY="` + planted(4) + `"`, `USER="` + plantUser + `"`, `HOME="` + home + `"`,
			`SSH_CONNECTION="` + plantIPs[0] + ` 5555 ` + plantIPs[1] + ` 22"`, `HOSTNAME="` + plantHost + `"`, `RANK="3"`, `WORLD_SIZE="4"`} {
			exec(`INSERT INTO META_DATA_CAPTURE(name, value) VALUES ('PROCESS_0:ENVIRONMENT_VARIABLE', ?)`, v)
		}
		kept = append(kept, `SELECT count(*) FROM META_DATA_CAPTURE WHERE name = 'PROCESS_0:ENVIRONMENT_VARIABLE' AND value = 'RANK="3"'`,
			`SELECT count(*) FROM META_DATA_CAPTURE WHERE name = 'PROCESS_0:ENVIRONMENT_VARIABLE' AND value = 'WORLD_SIZE="4"'`)
		for _, nv := range [][2]string{
			{"PROCESS_0:ENV_HF_TOKEN", planted(5)},
			{"PROCESS_0:ARGUMENT_90", "--api-token=" + planted(6)},
			{"PROCESS_0:ARGUMENT_91", "--password"},
			{"PROCESS_0:ARGUMENT_92", planted(7)},
			{"PROCESS_0:ARGUMENT_93", plantGHToken},
			{"PROCESS_0:ARGUMENT_94", "/global/homes/z/" + plantUser + "/data"},
			{"PROCESS_0:AUTH_COOKIE", planted(9)},
			{"PROCESS_1:WORKING_DIR", "/global/homes/z/" + plantUser + "/run"},
			{"PROCESS_1:USER_NAME", plantUser},
			{"PROCESS_1:NOTE", "ssh " + plantUser + "@" + plantHost},
		} {
			exec(`INSERT INTO META_DATA_CAPTURE(name, value) VALUES (?, ?)`, nv[0], nv[1])
		}
		exec(`UPDATE META_DATA_CAPTURE SET value = ? WHERE name = 'PROCESS_0:WORKING_DIR'`, "/global/u1/z/"+plantUser+"/run")
	}
	if has["TARGET_INFO_SYSTEM_ENV"] {
		plantRow(t, db, "TARGET_INFO_SYSTEM_ENV", map[string]any{"name": "EnvVars",
			"value": "HOME=" + home + "\x00STRIPE_KEY=" + planted(10) + "\x00LOCAL_RANK=1\x00USER=" + plantUser})
		kept = append(kept, `SELECT count(*) FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'EnvVars' AND value = 'LOCAL_RANK=1'`)
	}
	for _, tb := range []string{"META_DATA_EXPORT", "EXPORT_META_DATA"} {
		if has[tb] {
			exec(`INSERT INTO `+tb+`(name, value) VALUES ('EXPORT_USER', ?)`, plantUser)
			exec(`INSERT INTO `+tb+`(name, value) VALUES ('EXPORT_PARAM_INPUT_PATH_ABS', ?)`, "/Users/"+plantUser+"/x.nsys-rep")
		}
	}
	// Environments stored as BLOB: an opaque variable goes, and the user
	// the block names is masked elsewhere too.
	if has["StringIds"] {
		exec(`INSERT INTO StringIds(id, value) VALUES (?, CAST(? AS BLOB))`, nextID(),
			"USER="+blobUser+"\x00OPAQUE_VAR="+planted(13)+"\x00HOME=/home/"+blobUser+"\x00RANK=3")
	}
	if has["META_DATA_CAPTURE"] {
		exec(`INSERT INTO META_DATA_CAPTURE(name, value) VALUES ('PROCESS_0:ENVIRONMENT_VARIABLE', CAST(? AS BLOB))`, `OPAQUE2="`+planted(14)+`"`)
		exec(`INSERT INTO META_DATA_CAPTURE(name, value) VALUES ('PROCESS_0:ENVIRONMENT_VARIABLE', CAST(? AS BLOB))`, `USER="`+blobUser+`"`)
		exec(`INSERT INTO META_DATA_CAPTURE(name, value) VALUES ('PROCESS_2:NOTE', ?)`, "owner "+blobUser+" on shared node")
	} else if has["StringIds"] {
		exec(`INSERT INTO StringIds(id, value) VALUES (?, CAST(? AS BLOB))`, nextID(), "OPAQUE2="+planted(14))
		exec(`INSERT INTO StringIds(id, value) VALUES (?, ?)`, nextID(), "owner "+blobUser+" on shared node")
	} else {
		t.Fatal("no StringIds and no META_DATA_CAPTURE to plant BLOB environments in")
	}
	// A value holding a secret of every rule, as TEXT and as BLOB, in a
	// new row of every table.
	if len(plantEveryTable(t, db)) == 0 {
		t.Fatal("no table planted")
	}
	// No shared export has a ProcessEnv table; one is made here so that
	// the table path is exercised on every schema.
	exec(`CREATE TABLE ProcessEnv(globalPid INTEGER, name TEXT, value TEXT)`)
	exec(`INSERT INTO ProcessEnv VALUES (1, 'DB_PASSWORD', ?), (1, 'USER', ?), (1, 'RANK', '3')`, planted(11), plantUser)
	kept = append(kept, `SELECT count(*) FROM ProcessEnv WHERE name = 'RANK' AND value = '3'`)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// A committed row left in the WAL: written with checkpoints off, and
	// the files copied while the writer still holds them.
	wdb, err := sql.Open("sqlite3", "file:"+work+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer wdb.Close()
	ctx := context.Background()
	conn, err := wdb.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	walTable, walQ := "ProcessEnv", `INSERT INTO ProcessEnv VALUES (2, 'WAL_TOKEN', '`+planted(12)+`'), (2, 'WORLD_SIZE', '5')`
	if has["StringIds"] {
		walTable, walQ = "StringIds", `INSERT INTO StringIds(id, value) VALUES ((SELECT max(id) + 1 FROM StringIds), 'WAL_TOKEN=`+planted(12)+`'||char(0)||'USER=`+plantUser+`'||char(0)||'WORLD_SIZE=5')`
	}
	for _, q := range []string{`PRAGMA wal_autocheckpoint=0`, walQ} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if walTable == "StringIds" {
		kept = append(kept, `SELECT count(*) FROM StringIds WHERE value = 'WORLD_SIZE=5'`)
	} else {
		kept = append(kept, `SELECT count(*) FROM ProcessEnv WHERE name = 'WORLD_SIZE' AND value = '5'`)
	}
	in = filepath.Join(dir, "in.sqlite")
	ref = filepath.Join(dir, "ref.sqlite")
	for _, dst := range []string{in, ref} {
		for _, s := range []string{"", "-wal"} {
			copyTo(t, work+s, dst+s)
		}
	}
	conn.Close()
	// ref: the WAL checkpointed into the main file.
	rdb, err := sql.Open("sqlite3", "file:"+ref+"?_journal_mode=DELETE")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rdb.Exec(`SELECT count(*) FROM sqlite_master`); err != nil {
		t.Fatal(err)
	}
	rdb.Close()
	if _, err := os.Stat(ref + "-wal"); err == nil {
		t.Fatalf("%s-wal not checkpointed", ref)
	}
	return in, ref, kept
}

func copyTo(t *testing.T, src, dst string) { testshared.CopyFile(t, src, dst) }

// plantRow inserts a row into table with vals, taking the other columns
// from an existing row (old schemas declare every column NOT NULL), or
// zeros when the table is empty.
func plantRow(t *testing.T, db *sql.DB, table string, vals map[string]any) {
	t.Helper()
	rows, err := db.Query(fmt.Sprintf("PRAGMA table_info(%q)", table))
	if err != nil {
		t.Fatal(err)
	}
	var names, exprs []string
	var args []any
	var notnull []bool
	for rows.Next() {
		var (
			cid, nn, pk int
			name, typ   string
			dflt        sql.NullString
		)
		if err := rows.Scan(&cid, &name, &typ, &nn, &dflt, &pk); err != nil {
			t.Fatal(err)
		}
		names = append(names, fmt.Sprintf("%q", name))
		notnull = append(notnull, nn == 1)
		if v, ok := vals[name]; ok {
			exprs = append(exprs, "?")
			args = append(args, v)
		} else {
			exprs = append(exprs, fmt.Sprintf("%q", name))
		}
	}
	rows.Close()
	var n int
	db.QueryRow(fmt.Sprintf("SELECT count(*) FROM %q", table)).Scan(&n)
	q := fmt.Sprintf("INSERT INTO %q(%s) SELECT %s FROM %q LIMIT 1", table, strings.Join(names, ", "), strings.Join(exprs, ", "), table)
	if n == 0 {
		for i, e := range exprs {
			if e != "?" {
				exprs[i] = "NULL"
				if notnull[i] {
					exprs[i] = "0"
				}
			}
		}
		q = fmt.Sprintf("INSERT INTO %q(%s) VALUES (%s)", table, strings.Join(names, ", "), strings.Join(exprs, ", "))
	}
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// lineDiff shows the lines where a and b differ (up to 40), with their
// line numbers.
func lineDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	var out []string
	for i := 0; i < max(len(la), len(lb)) && len(out) < 40; i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			out = append(out, fmt.Sprintf("%d: -%s\n%d: +%s", i+1, x, i+1, y))
		}
	}
	return strings.Join(out, "\n")
}
