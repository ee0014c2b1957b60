package main

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// plantedSecret is one value holding a secret of every documented rule
// (docs/reproducer.md#redact), and secretLeaks the parts of it that must
// not survive redaction. Every secret holds "PLNT" so that a leak is
// easy to find in a hex dump.
var (
	plantedSecret = strings.Join([]string{
		"aws AKIAQZPLNT0000000001 ok",
		"aws_secret_access_key=PLNTwJalrXUtnFEMIK7MDENGbPxRfiCYzzzzzz01",
		"gcp AIzaPLNTgcpKEY0123456789abcdefghijklmno",
		"gcp ya29.PLNTgcpOAUTH0123456789ab",
		"azure DefaultEndpointsProtocol=https;AccountKey=PLNTazureKEYabcdefghijklmnop0123==;",
		"gh ghp_PLNTgithub0123456789abcdefghijklmnopq fine github_pat_PLNTfine0123456789_abcdefghijklmnopqrstu",
		"gl glpat-PLNTgitlab0123456789ab",
		"hf hf_PLNThuggingface0123456789abcdefghijkl",
		"slack xoxb-PLNT-0123456789abc",
		"openai sk-proj-PLNTopenai0123456789abcdef stripe sk_live_PLNTstripe0123456789",
		"jwt eyJhbGciOiJIUzI1NiJ9.eyJQTE5UIjoiand0In0.PLNTjwtSIGabcdef123",
		"-----BEGIN RSA PRIVATE KEY-----\nPLNTpemBODYMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
		"git https://plntuser:PLNTurlpass99@example.org/x.git",
		"Authorization: Basic PLNTauthBASIC64xyz==",
		"curl -H 'X: Bearer PLNTbearerTOKEN.abc'",
		`DB_PASSWORD=PLNTpassword01 {"client_secret": "PLNTclientsecret02"}`,
		"train.py --api-token PLNTflagtoken03 --lr 0.1",
	}, "\n")
	secretLeaks = []string{"AKIAQZPLNT0000000001", "PLNTwJalrXUtnFEMIK7MDENGbPxRfiCYzzzzzz01", "AIzaPLNTgcpKEY", "PLNTgcpOAUTH",
		"PLNTazureKEY", "ghp_PLNTgithub", "PLNTfine0123456789", "PLNTgitlab", "PLNThuggingface", "xoxb-PLNT", "PLNTopenai",
		"PLNTstripe", "eyJQTE5UIjoiand0In0", "PLNTjwtSIG", "PLNTpemBODY", "plntuser", "PLNTurlpass99", "PLNTauthBASIC64",
		"PLNTbearerTOKEN", "PLNTpassword01", "PLNTclientsecret02", "PLNTflagtoken03"}
)

// plantInvisible sets columns of the planted rows of tables analysis reads
// so that analysis leaves those rows out (a diagnostic below warning
// level; an NVTX domain-name event; a process with no events), keeping
// the reports of the planted and the redacted copy comparable.
var plantInvisible = map[string]map[string]any{
	"DIAGNOSTIC_EVENT": {"severity": 0},
	"NVTX_EVENTS":      {"eventType": 75},
	"PROCESSES":        {"pid": 987654321, "globalPid": 987654321},
}

// plantKeep are the TEXT columns copied rather than planted: the GPU name
// the report lists for every GPU row (a secret there would show in the
// planted copy's report and not in the redacted one's). The table's other
// TEXT columns are planted.
var plantKeep = map[string]map[string]bool{
	"TARGET_INFO_GPU":      {"name": true},
	"TARGET_INFO_CUDA_GPU": {"name": true},
}

// plantEveryTable inserts, into every table of db, a row whose TEXT
// columns hold plantedSecret and a row where they hold it as a BLOB (a
// table with no TEXT column gets the BLOB in its last column that is not
// the integer primary key). Other columns are copied from an existing row
// (zeros or NULL in an empty table); an INTEGER PRIMARY KEY gets a fresh
// id. It returns the tables planted.
func plantEveryTable(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	for _, tb := range tables {
		cols := tableCols(t, db, tb)
		var text []string
		pk := ""
		for _, c := range cols {
			switch {
			case c.pk && strings.EqualFold(c.typ, "INTEGER"):
				pk = c.name
			case plantKeep[tb][c.name]:
			case c.typ == "" || strings.Contains(c.typ, "TEXT") || strings.Contains(c.typ, "CHAR") || strings.Contains(c.typ, "CLOB"):
				text = append(text, c.name)
			}
		}
		blobOnly := len(text) == 0
		if blobOnly {
			for i := len(cols) - 1; i >= 0; i-- {
				if cols[i].name != pk {
					text = []string{cols[i].name}
					break
				}
			}
			if len(text) == 0 {
				t.Fatalf("%s: no column to plant in", tb)
			}
		}
		for k, asBlob := range []bool{false, true} {
			if blobOnly && !asBlob {
				continue
			}
			vals := map[string]string{}
			var args []any
			for _, c := range text {
				if asBlob {
					vals[c] = "CAST(? AS BLOB)"
				} else {
					vals[c] = "?"
				}
				args = append(args, plantedSecret)
			}
			for c, v := range plantInvisible[tb] {
				vals[c] = fmt.Sprint(v)
			}
			if pk != "" {
				vals[pk] = fmt.Sprintf("(SELECT coalesce(max(%q), 0) + %d FROM %q)", pk, 1000+k, tb)
			}
			insertCopy(t, db, tb, cols, vals, args)
		}
	}
	return tables
}

type tcol struct {
	name, typ string
	notnull   bool
	pk        bool
}

func tableCols(t *testing.T, db *sql.DB, tb string) []tcol {
	t.Helper()
	rows, err := db.Query(fmt.Sprintf("PRAGMA table_info(%q)", tb))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []tcol
	for rows.Next() {
		var (
			cid, nn, pk int
			name, typ   string
			dflt        sql.NullString
		)
		if err := rows.Scan(&cid, &name, &typ, &nn, &dflt, &pk); err != nil {
			t.Fatal(err)
		}
		out = append(out, tcol{name, strings.ToUpper(typ), nn == 1, pk > 0})
	}
	return out
}

// insertCopy inserts one row into tb: the expressions in vals for their
// columns, the other columns copied from the table's first row (or 0 /
// NULL when it is empty).
func insertCopy(t *testing.T, db *sql.DB, tb string, cols []tcol, vals map[string]string, args []any) {
	t.Helper()
	var names, exprs, empty []string
	var ordered []any
	ai := 0
	for _, c := range cols {
		names = append(names, fmt.Sprintf("%q", c.name))
		e, ok := vals[c.name]
		if !ok {
			exprs = append(exprs, fmt.Sprintf("%q", c.name))
			if c.notnull {
				empty = append(empty, "0")
			} else {
				empty = append(empty, "NULL")
			}
			continue
		}
		exprs = append(exprs, e)
		empty = append(empty, e)
		if strings.Contains(e, "?") {
			ordered = append(ordered, args[ai])
			ai++
		}
	}
	var n int
	if err := db.QueryRow(fmt.Sprintf("SELECT count(*) FROM %q", tb)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	q := fmt.Sprintf("INSERT INTO %q(%s) SELECT %s FROM %q LIMIT 1", tb, strings.Join(names, ", "), strings.Join(exprs, ", "), tb)
	if n == 0 {
		q = fmt.Sprintf("INSERT INTO %q(%s) VALUES (%s)", tb, strings.Join(names, ", "), strings.Join(empty, ", "))
	}
	if _, err := db.Exec(q, ordered...); err != nil {
		t.Fatalf("plant into %s: %s: %v", tb, q, err)
	}
}
