package redact

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	_ "github.com/mattn/go-sqlite3" // SQLite driver

	"github.com/umtrace/umtrace/ingest/nsys/schema"
)

// kvTables are the key/value metadata tables (name, value).
var kvTables = []string{schema.MetaDataCapture, schema.MetaDataExport, schema.ExportMetaData, schema.SystemEnv}

// envRowName marks a key/value row as (part of) an environment:
// PROCESS_0:ENVIRONMENT_VARIABLE, PROCESS_0:ENV_FOO, DeviceEnvironment,
// EnvVars.
var envRowName = regexp.MustCompile(`(?i)environment|^env|[:_]env|envvar`)

// envVarSuffix takes the variable name from a row name that carries it
// (PROCESS_0:ENV_AWS_KEY, PROCESS_0:ENVIRONMENT_VARIABLE_AWS_KEY).
var envVarSuffix = regexp.MustCompile(`(?i)(?:ENVIRONMENT_VARIABLE|ENV)_(.+)$`)

// isEnvTable reports whether t is a table of environment variables
// (ProcessEnv, PROCESS_ENV, ENV_VARS; not TARGET_INFO_SYSTEM_ENV, which is
// system properties with one environment row).
func isEnvTable(t string) bool {
	return t != schema.SystemEnv && strings.Contains(strings.ToUpper(t), "ENV")
}

// fixedIdentity are metadata fields that are an identity outright.
var fixedIdentity = []struct {
	table, name, mask string
	user              bool
}{
	{schema.SystemEnv, "Hostname", HostMask, false},
	{schema.MetaDataExport, "EXPORT_HOST", HostMask, false},
	{schema.MetaDataExport, "EXPORT_USER", UserMask, true},
	{schema.MetaDataCapture, "DEVICE_DISPLAY_NAME", HostMask, false},
	{schema.MetaDataCapture, "%USER_NAME", UserMask, true},
	{schema.ExportMetaData, "EXPORT_HOST", HostMask, false},
	{schema.ExportMetaData, "EXPORT_USER", UserMask, true},
}

// nameColumns hold StringIds ids of names analysis reads, in schemas whose
// CREATE TABLE text lacks the REFERENCES StringIds notes.
var nameColumns = map[string]bool{
	"nameId": true, "textId": true, "shortName": true, "demangledName": true, "mangledName": true,
	"endNameId": true, "funcName": true, "kernelName": true, "varName": true, "symbol": true,
	"module": true, "srcFile": true, "jsonTextId": true,
}

var refStringIds = regexp.MustCompile(`(?m)^\s*"?(\w+)"?\s[^\n]*REFERENCES\s+"?StringIds`)

type dbRedactor struct {
	db      *sql.DB
	tables  []string
	has     map[string]bool
	cols    map[string][]string // text columns
	allCols map[string][]string // every column
	noRowid map[string]bool     // WITHOUT ROWID tables
	st      *Stats
	changed map[string]bool
	counts  map[repKey]int
	m       *masker
	sc      scanner
}

// repKey is one line of the report: what rule replaced values where.
type repKey struct{ table, column, rule string }

// redactDB redacts the private copy at path in place. Driver errors that
// say the file is damaged are returned as ErrCorrupt.
func redactDB(path string) (*Stats, error) {
	st, err := redactDB1(path)
	return st, corrupt(err)
}

// corrupt wraps driver errors that mean a damaged database in ErrCorrupt.
func corrupt(err error) error {
	if err == nil || errors.Is(err, ErrCorrupt) {
		return err
	}
	msg := err.Error()
	for _, s := range []string{"malformed", "not a database", "disk I/O error", "database corrupt", "out of memory"} {
		if strings.Contains(msg, s) {
			return fmt.Errorf("%w (%v)", ErrCorrupt, err)
		}
	}
	return err
}

// integrityCheck runs PRAGMA integrity_check and returns its first
// complaint, or nil when SQLite says ok.
func integrityCheck(db *sql.DB) error {
	rows, err := db.Query("PRAGMA integrity_check(1)")
	if err != nil {
		return err
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return err
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(msgs) == 1 && msgs[0] == "ok" {
		return nil
	}
	if len(msgs) == 0 {
		return errors.New("integrity_check said nothing")
	}
	return errors.New("integrity_check: " + strings.Join(msgs, "; "))
}

// verify checks the redacted copy before it is handed over: SQLite's
// integrity_check passes, no journal or WAL is left beside it, and
// Options.Check (an nsys open, in the CLI) accepts it.
func verify(path string, o Options) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	for _, s := range []string{"-wal", "-journal"} {
		if _, err := os.Stat(path + s); err == nil {
			return fmt.Errorf("%w: %s left beside it", ErrVerify, s)
		}
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: "mode=ro&immutable=1"}
	db, err := sql.Open("sqlite3", u.String())
	if err != nil {
		return fmt.Errorf("%w: %v", ErrVerify, err)
	}
	err = integrityCheck(db)
	db.Close()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrVerify, err)
	}
	if o.Check != nil {
		if err := o.Check(path); err != nil {
			return fmt.Errorf("%w: %v", ErrVerify, err)
		}
	}
	return nil
}

func redactDB1(path string) (*Stats, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	// The file is a private temporary copy: no fsync per change.
	u := url.URL{Scheme: "file", Path: abs, RawQuery: "_journal_mode=DELETE&_synchronous=OFF"}
	db, err := sql.Open("sqlite3", u.String())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// A damaged input is refused before anything is changed (and before
	// a half-read file could be handed over as its redacted copy).
	if err := integrityCheck(db); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	r := &dbRedactor{db: db, has: map[string]bool{}, cols: map[string][]string{}, allCols: map[string][]string{},
		noRowid: map[string]bool{}, st: &Stats{}, changed: map[string]bool{}, counts: map[repKey]int{}}
	if r.tables, err = listTables(db); err != nil {
		return nil, err
	}
	sort.Strings(r.tables)
	for _, t := range r.tables {
		r.has[t] = true
		if r.cols[t], err = textColumns(db, t); err != nil {
			return nil, err
		}
		if r.allCols[t], err = allColumns(db, t); err != nil {
			return nil, err
		}
		var sqlText sql.NullString
		if err := db.QueryRow("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", t).Scan(&sqlText); err != nil {
			return nil, fmt.Errorf("schema of %s: %w", t, err)
		}
		r.noRowid[t] = withoutRowid.MatchString(sqlText.String)
	}
	prot, err := r.protectedIDs()
	if err != nil {
		return nil, err
	}
	id, err := r.collectIdentities()
	if err != nil {
		return nil, err
	}
	r.m = newMasker(id)
	steps := []func() error{
		r.envRows,
		r.envTables,
		r.argvRows,
		r.identityFields,
		r.secretRows,
		func() error { return r.stringIds(prot) },
		func() error { return r.scanCells(prot) },
	}
	// One transaction for all changes (the pool has one connection).
	if _, err := db.Exec("BEGIN"); err != nil {
		return nil, err
	}
	for _, f := range steps {
		if err := f(); err != nil {
			db.Exec("ROLLBACK")
			return nil, err
		}
	}
	if _, err := db.Exec("COMMIT"); err != nil {
		return nil, err
	}
	// Drop the freed pages: without VACUUM deleted values stay in the file.
	if _, err := db.Exec("VACUUM"); err != nil {
		return nil, fmt.Errorf("vacuum: %w", err)
	}
	for t := range r.changed {
		r.st.Tables = append(r.st.Tables, t)
	}
	sort.Strings(r.st.Tables)
	for k, n := range r.counts {
		r.st.Replaced = append(r.st.Replaced, Replacement{Table: k.table, Column: k.column, Rule: k.rule, Count: n})
	}
	sort.Slice(r.st.Replaced, func(i, j int) bool {
		a, b := r.st.Replaced[i], r.st.Replaced[j]
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Rule < b.Rule
	})
	return r.st, db.Close()
}

func (r *dbRedactor) hasCols(t string, cols ...string) bool {
	if !r.has[t] {
		return false
	}
	for _, c := range cols {
		found := false
		for _, tc := range r.cols[t] {
			if strings.EqualFold(tc, c) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

type row struct {
	rowid int64
	name  string
	val   string
}

// kvRows reads the rows of a key/value table whose name matches like.
func (r *dbRedactor) kvRows(t, like string) ([]row, error) {
	rows, err := r.db.Query(fmt.Sprintf("SELECT rowid, name, value FROM %q WHERE name LIKE ? AND typeof(value) IN ('text', 'blob') ORDER BY rowid", t), like)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t, err)
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		var x row
		var n sql.NullString
		if err := rows.Scan(&x.rowid, &n, &x.val); err != nil {
			return nil, err
		}
		x.name = n.String
		out = append(out, x)
	}
	return out, rows.Err()
}

// eachKVRow calls f on every row of every key/value table that has name
// and value columns, a table at a time in rowid order; a table's rows are
// all read before f sees the first, so f may change the table.
func (r *dbRedactor) eachKVRow(f func(t string, x row) error) error {
	for _, t := range kvTables {
		if !r.hasCols(t, "name", "value") {
			continue
		}
		rows, err := r.kvRows(t, "%")
		if err != nil {
			return err
		}
		for _, x := range rows {
			if err := f(t, x); err != nil {
				return err
			}
		}
	}
	return nil
}

// set rewrites one cell, keeping its storage class (a BLOB stays a
// BLOB), and counts it under rule.
func (r *dbRedactor) set(t, col string, rowid int64, v, rule string) error {
	q := fmt.Sprintf("UPDATE %q SET %q = CASE WHEN typeof(%q) = 'blob' THEN CAST(? AS BLOB) ELSE ? END WHERE rowid = ?", t, col, col)
	if _, err := r.db.Exec(q, v, v, rowid); err != nil {
		return fmt.Errorf("mask %s.%s: %w", t, col, err)
	}
	r.st.ValuesMasked++
	r.changed[t] = true
	r.counts[repKey{t, col, rule}]++
	return nil
}

func (r *dbRedactor) del(t string, rowid int64) error {
	if _, err := r.db.Exec(fmt.Sprintf("DELETE FROM %q WHERE rowid = ?", t), rowid); err != nil {
		return fmt.Errorf("delete environment row from %s: %w", t, err)
	}
	r.st.EnvRowsDeleted++
	r.changed[t] = true
	r.counts[repKey{t, "(row)", ruleEnv}]++
	return nil
}

// protectedIDs returns the StringIds ids that a name column references.
func (r *dbRedactor) protectedIDs() (map[int64]bool, error) {
	out := map[int64]bool{}
	if !r.has[schema.StringIds.Name] {
		return out, nil
	}
	for _, t := range r.tables {
		if t == schema.StringIds.Name {
			continue
		}
		var sqlText sql.NullString
		if err := r.db.QueryRow("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", t).Scan(&sqlText); err != nil {
			return nil, fmt.Errorf("schema of %s: %w", t, err)
		}
		refs := map[string]bool{}
		for _, m := range refStringIds.FindAllStringSubmatch(sqlText.String, -1) {
			refs[m[1]] = true
		}
		cols, err := allColumns(r.db, t)
		if err != nil {
			return nil, err
		}
		for _, c := range cols {
			// Stream contents and file names are not names: they are
			// masked as metadata.
			if c == "contentId" || c == "filenameId" || !(refs[c] || nameColumns[c]) {
				continue
			}
			rows, err := r.db.Query(fmt.Sprintf("SELECT DISTINCT %q FROM %q WHERE typeof(%q) = 'integer'", c, t, c))
			if err != nil {
				return nil, fmt.Errorf("read %s.%s: %w", t, c, err)
			}
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return nil, err
				}
				out[id] = true
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// collectIdentities reads who ran the capture and where: environment
// entries from every place nsys stores them, the identity fields, and the
// users named by home paths in any metadata or string.
func (r *dbRedactor) collectIdentities() (identities, error) {
	var id identities
	addBlock := func(s string) {
		entries, _ := splitEnvBlock(s)
		for _, e := range entries {
			if k, v, ok := strings.Cut(e, "="); ok {
				id.addEnv(k, v)
			} else {
				id.addPaths(e)
			}
		}
	}
	if r.has[schema.StringIds.Name] {
		if err := r.eachText(schema.StringIds.Name, "value", "", func(_ int64, s string) error {
			if strings.Contains(s, "\x00") || isEnvEntry(s) {
				addBlock(s)
			} else {
				id.addPaths(s)
			}
			return nil
		}); err != nil {
			return id, err
		}
	}
	if err := r.eachKVRow(func(_ string, x row) error {
		if envRowName.MatchString(x.name) {
			addBlock(x.val)
			if m := envVarSuffix.FindStringSubmatch(x.name); m != nil && !strings.Contains(x.val, "=") {
				id.addEnv(m[1], x.val)
			}
		}
		return nil
	}); err != nil {
		return id, err
	}
	for _, f := range fixedIdentity {
		if !r.hasCols(f.table, "name", "value") {
			continue
		}
		rows, err := r.kvRows(f.table, f.name)
		if err != nil {
			return id, err
		}
		for _, x := range rows {
			if v := strings.TrimSpace(x.val); v != "" {
				if f.user {
					id.users = append(id.users, v)
				} else {
					id.hosts = append(id.hosts, v)
				}
			}
		}
	}
	// Home paths in every metadata text (the key/value tables included)
	// and the environment tables' blocks.
	for _, t := range r.tables {
		if !isEnvTable(t) && !isMetaTable(t) {
			continue
		}
		for _, c := range r.cols[t] {
			if err := r.eachText(t, c, "", func(_ int64, s string) error {
				if isEnvTable(t) {
					addBlock(s)
				}
				id.addPaths(s)
				return nil
			}); err != nil {
				return id, err
			}
		}
		if k, v := envPairColumns(r, t); k != "" {
			rows, err := r.db.Query(fmt.Sprintf("SELECT %q, %q FROM %q", k, v, t))
			if err != nil {
				return id, fmt.Errorf("read %s: %w", t, err)
			}
			for rows.Next() {
				var a, b sql.NullString
				if rows.Scan(&a, &b) == nil {
					id.addEnv(a.String, b.String)
				}
			}
			rows.Close()
		}
	}
	return id, nil
}

// eachText calls f for every text value of t.c (where, if not empty,
// filters further).
func (r *dbRedactor) eachText(t, c, where string, f func(rowid int64, s string) error) error {
	q := fmt.Sprintf("SELECT rowid, %q FROM %q WHERE typeof(%q) IN ('text', 'blob')", c, t, c)
	if where != "" {
		q += " AND (" + where + ")"
	}
	rows, err := r.db.Query(q + " ORDER BY rowid")
	if err != nil {
		return fmt.Errorf("read %s.%s: %w", t, c, err)
	}
	type cell struct {
		rowid int64
		val   string
	}
	var cells []cell
	for rows.Next() {
		var x cell
		if err := rows.Scan(&x.rowid, &x.val); err != nil {
			rows.Close()
			return err
		}
		cells = append(cells, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, x := range cells {
		if err := f(x.rowid, x.val); err != nil {
			return err
		}
	}
	return nil
}

// envRows filters the environment rows of the key/value tables: a row
// holding one variable (NAME="VALUE", or the value of PROCESS_0:ENV_NAME)
// is deleted unless the variable is kept; a row holding a block keeps
// only the kept variables, and is deleted when none is left.
func (r *dbRedactor) envRows() error {
	return r.eachKVRow(func(t string, x row) error {
		if !envRowName.MatchString(x.name) {
			return nil
		}
		entries, _ := splitEnvBlock(x.val)
		if len(entries) <= 1 {
			k, v, ok := strings.Cut(x.val, "=")
			if m := envVarSuffix.FindStringSubmatch(x.name); m != nil && (!ok || !envKey.MatchString(k)) {
				k, v, ok = m[1], x.val, true
			}
			if ok && keepEnv(k, v) {
				return nil
			}
			return r.del(t, x.rowid)
		}
		nv, dropped := r.m.filterEnvBlock(x.val)
		if nv == "" {
			return r.del(t, x.rowid)
		}
		r.st.EnvEntriesDropped += dropped
		if nv != x.val {
			return r.set(t, "value", x.rowid, nv, ruleEnv)
		}
		return nil
	})
}

// envPairColumns returns the variable-name and value columns of an
// environment table laid out as one variable per row, or "", "".
func envPairColumns(r *dbRedactor, t string) (string, string) {
	var k, v string
	for _, c := range r.cols[t] {
		switch strings.ToLower(c) {
		case "name", "key", "variable", "var", "envname":
			k = c
		case "value", "val", "envvalue":
			v = c
		}
	}
	if k == "" || v == "" {
		return "", ""
	}
	return k, v
}

// envTables filters tables of environment variables (ProcessEnv and the
// like): one variable per row (a name and a value column) is deleted
// unless kept; other text cells are filtered as blocks, and a row whose
// cells are all emptied is deleted.
func (r *dbRedactor) envTables() error {
	for _, t := range r.tables {
		if !isEnvTable(t) {
			continue
		}
		if k, v := envPairColumns(r, t); k != "" {
			type pair struct {
				rowid     int64
				name, val sql.NullString
			}
			rows, err := r.db.Query(fmt.Sprintf("SELECT rowid, %q, %q FROM %q ORDER BY rowid", k, v, t))
			if err != nil {
				return fmt.Errorf("read %s: %w", t, err)
			}
			var ps []pair
			for rows.Next() {
				var p pair
				if err := rows.Scan(&p.rowid, &p.name, &p.val); err != nil {
					rows.Close()
					return err
				}
				ps = append(ps, p)
			}
			rows.Close()
			for _, p := range ps {
				if keepEnv(p.name.String, p.val.String) {
					continue
				}
				if err := r.del(t, p.rowid); err != nil {
					return err
				}
			}
			continue
		}
		type cellv struct {
			rowid int64
			vals  []sql.NullString
		}
		cols := r.cols[t]
		if len(cols) == 0 {
			continue
		}
		quoted := make([]string, len(cols))
		for i, c := range cols {
			quoted[i] = fmt.Sprintf("%q", c)
		}
		rows, err := r.db.Query(fmt.Sprintf("SELECT rowid, %s FROM %q ORDER BY rowid", strings.Join(quoted, ", "), t))
		if err != nil {
			return fmt.Errorf("read %s: %w", t, err)
		}
		var cs []cellv
		for rows.Next() {
			c := cellv{vals: make([]sql.NullString, len(cols))}
			dst := []any{&c.rowid}
			for i := range c.vals {
				dst = append(dst, &c.vals[i])
			}
			if err := rows.Scan(dst...); err != nil {
				rows.Close()
				return err
			}
			cs = append(cs, c)
		}
		rows.Close()
		for _, c := range cs {
			var nv []string
			empty := true
			dropped := 0
			for _, v := range c.vals {
				s, n := r.m.filterEnvBlock(v.String)
				dropped += n
				nv = append(nv, s)
				if s != "" {
					empty = false
				}
			}
			if empty {
				if err := r.del(t, c.rowid); err != nil {
					return err
				}
				continue
			}
			r.st.EnvEntriesDropped += dropped
			for i, v := range c.vals {
				if v.Valid && nv[i] != v.String {
					if err := r.set(t, cols[i], c.rowid, nv[i], ruleEnv); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

var argRow = regexp.MustCompile(`^PROCESS_(\d+):ARGUMENT_(\d+)$`)

// argvRows masks each process's PROCESS_n:ARGUMENT_k rows as one argument
// list, in k order, so that a secret flag masks the argument after it.
func (r *dbRedactor) argvRows() error {
	t := schema.MetaDataCapture
	if !r.hasCols(t, "name", "value") {
		return nil
	}
	rows, err := r.kvRows(t, "PROCESS_%:ARGUMENT_%")
	if err != nil {
		return err
	}
	type arg struct {
		row
		proc, idx int
	}
	var args []arg
	for _, x := range rows {
		m := argRow.FindStringSubmatch(x.name)
		if m == nil {
			continue
		}
		p, _ := strconv.Atoi(m[1])
		i, _ := strconv.Atoi(m[2])
		args = append(args, arg{x, p, i})
	}
	sort.SliceStable(args, func(i, j int) bool {
		if args[i].proc != args[j].proc {
			return args[i].proc < args[j].proc
		}
		return args[i].idx < args[j].idx
	})
	for i, a := range args {
		prev := ""
		if i > 0 && args[i-1].proc == a.proc {
			prev = args[i-1].val
		}
		if nv := r.m.maskArg(prev, a.val); nv != a.val {
			if err := r.set(t, "value", a.rowid, nv, ruleArgv); err != nil {
				return err
			}
		}
	}
	return nil
}

// identityFields sets host and user fields outright.
func (r *dbRedactor) identityFields() error {
	for _, f := range fixedIdentity {
		if !r.hasCols(f.table, "name", "value") {
			continue
		}
		res, err := r.db.Exec(fmt.Sprintf("UPDATE %q SET value = ? WHERE name LIKE ? AND value IS NOT NULL AND value <> '' AND value <> ?", f.table), f.mask, f.name, f.mask)
		if err != nil {
			return fmt.Errorf("mask %s %s: %w", f.table, f.name, err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			r.st.ValuesMasked += int(n)
			r.changed[f.table] = true
			r.counts[repKey{f.table, "value", ruleIdentity}] += int(n)
		}
	}
	return nil
}

// secretRows masks metadata rows named like credentials.
func (r *dbRedactor) secretRows() error {
	return r.eachKVRow(func(t string, x row) error {
		if secretRowName.MatchString(x.name) && x.val != "" && x.val != SecretMask {
			return r.set(t, "value", x.rowid, SecretMask, ruleSecretRow)
		}
		return nil
	})
}

// stringIds redacts the string table: names that event tables reference
// are masked strictly; every other string (environment blocks, argv,
// stream contents, file names) as metadata.
func (r *dbRedactor) stringIds(prot map[int64]bool) error {
	if !r.hasCols(schema.StringIds.Name, "value") {
		return nil
	}
	return r.eachText(schema.StringIds.Name, "value", "", func(rowid int64, s string) error {
		var nv string
		rule := ruleIdentity
		if prot[rowid] {
			nv = r.m.mask(s, true)
		} else {
			var n int
			nv, n = r.m.stringValue(s)
			r.st.EnvEntriesDropped += n
			if n > 0 || nv == EnvMask {
				rule = ruleEnv
			} else if strings.Contains(s, "\x00") {
				rule = ruleArgv
			}
		}
		if nv == s {
			return nil
		}
		return r.set(schema.StringIds.Name, "value", rowid, nv, rule)
	})
}

// Rule names in the report for the policy steps (the secret rules are
// named in secrets.go).
const (
	ruleEnv       = "environment"
	ruleArgv      = "argv"
	ruleIdentity  = "identity"
	ruleSecretRow = "secret-row"
)

var withoutRowid = regexp.MustCompile(`(?i)\)\s*WITHOUT\s+ROWID`)

// scanCells reads every TEXT and BLOB value of every table, whatever the
// column's declared type: outside StringIds it masks identities (fully in
// metadata tables, strictly elsewhere), and everywhere it applies the
// secret rules (strictly to the StringIds names event tables reference
// and to event tables' text, which analysis reads).
func (r *dbRedactor) scanCells(prot map[int64]bool) error {
	for _, t := range r.tables {
		cols := r.allCols[t]
		if len(cols) == 0 {
			continue
		}
		meta := isMetaTable(t)
		quoted := make([]string, len(cols))
		conds := make([]string, len(cols))
		for i, c := range cols {
			quoted[i] = fmt.Sprintf("%q", c)
			conds[i] = fmt.Sprintf("typeof(%q) IN ('text', 'blob')", c)
		}
		key := "rowid"
		if r.noRowid[t] {
			key = "NULL"
		}
		rows, err := r.db.Query(fmt.Sprintf("SELECT %s, %s FROM %q WHERE %s", key, strings.Join(quoted, ", "), t, strings.Join(conds, " OR ")))
		if err != nil {
			return fmt.Errorf("read %s: %w", t, err)
		}
		type change struct {
			rowid  sql.NullInt64
			col    string
			old    any
			nv     string
			blob   bool
			rules  []hit
			masked bool
		}
		var changes []change
		vals := make([]any, len(cols))
		dst := make([]any, len(cols)+1)
		var rowid sql.NullInt64
		dst[0] = &rowid
		for i := range vals {
			dst[i+1] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(dst...); err != nil {
				rows.Close()
				return err
			}
			for i, v := range vals {
				var s string
				blob := false
				switch x := v.(type) {
				case string:
					s = x
				case []byte:
					s, blob = string(x), true
				default:
					continue
				}
				strict := !meta
				if t == schema.StringIds.Name {
					strict = prot[rowid.Int64]
				}
				ns := s
				masked := false
				if t != schema.StringIds.Name {
					ns = r.m.mask(s, strict)
					masked = ns != s
				}
				ns, hits := r.sc.scan(ns, strict)
				if ns == s {
					continue
				}
				var old any = s
				if blob {
					old = []byte(s)
				}
				changes = append(changes, change{rowid, cols[i], old, ns, blob, hits, masked})
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, c := range changes {
			var nv any = c.nv
			if c.blob {
				nv = []byte(c.nv)
			}
			var err error
			if r.noRowid[t] {
				_, err = r.db.Exec(fmt.Sprintf("UPDATE %q SET %q = ? WHERE %q IS ?", t, c.col, c.col), nv, c.old)
			} else {
				_, err = r.db.Exec(fmt.Sprintf("UPDATE %q SET %q = ? WHERE rowid = ?", t, c.col), nv, c.rowid.Int64)
			}
			if err != nil {
				return fmt.Errorf("mask %s.%s: %w", t, c.col, err)
			}
			r.st.ValuesMasked++
			r.changed[t] = true
			if c.masked {
				r.counts[repKey{t, c.col, ruleIdentity}]++
			}
			for _, h := range c.rules {
				r.counts[repKey{t, c.col, h.rule}] += h.n
			}
		}
	}
	return nil
}

func listTables(db *sql.DB) ([]string, error) {
	rows, err := db.Query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

type column struct{ name, typ string }

func tableInfo(db *sql.DB, table string) ([]column, error) {
	rows, err := db.Query(fmt.Sprintf("PRAGMA table_info(%q)", table))
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	defer rows.Close()
	var out []column
	for rows.Next() {
		var (
			cid, notnull, pk int
			name, typ        string
			dflt             sql.NullString
		)
		if err := rows.Scan(&cid, &name, &typ, &notnull, &dflt, &pk); err != nil {
			return nil, err
		}
		out = append(out, column{name, strings.ToUpper(typ)})
	}
	return out, rows.Err()
}

func allColumns(db *sql.DB, table string) ([]string, error) {
	cs, err := tableInfo(db, table)
	var out []string
	for _, c := range cs {
		out = append(out, c.name)
	}
	return out, err
}

// textColumns are the columns that may hold text: declared TEXT/CHAR/BLOB
// or untyped (the scanner reads every column).
func textColumns(db *sql.DB, table string) ([]string, error) {
	cs, err := tableInfo(db, table)
	var out []string
	for _, c := range cs {
		if c.typ == "" || strings.Contains(c.typ, "TEXT") || strings.Contains(c.typ, "CHAR") || strings.Contains(c.typ, "CLOB") || strings.Contains(c.typ, "BLOB") {
			out = append(out, c.name)
		}
	}
	return out, err
}
