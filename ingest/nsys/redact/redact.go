// Package redact makes a shareable copy of an Nsight Systems SQLite export:
// it removes the profiled process's environment dumps and masks home
// paths, user names and host names in the metadata tables and the string
// table, then VACUUMs so the removed bytes are gone from the file. Event
// tables are never touched, so an analysis of the copy equals one of the
// original.
package redact

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	_ "github.com/mattn/go-sqlite3" // SQLite driver
)

// Masks written in place of what was removed.
const (
	HostMask = "REDACTED-HOST"
	UserMask = "REDACTED-USER"
	HomeMask = "~"
)

// Stats says what File changed.
type Stats struct {
	EnvRowsDeleted int      `json:"env_rows_deleted"` // environment-variable rows removed
	ValuesMasked   int      `json:"values_masked"`    // text cells rewritten
	Tables         []string `json:"tables"`           // tables that were changed
}

// metaTables are the non-event tables whose text is masked. Event tables
// (CUPTI_*, CUDA_*, NVTX_EVENTS, OSRT_*, ...) hold numbers and StringIds
// references only and are left alone.
func isMetaTable(t string) bool {
	switch t {
	case "StringIds", "PROCESSES", "META_DATA_CAPTURE", "META_DATA_EXPORT", "EXPORT_META_DATA", "ANALYSIS_DETAILS", "ANALYSIS_FILE":
		return true
	}
	return strings.HasPrefix(t, "TARGET_INFO_")
}

// File writes a redacted copy of the export in to out. in is only read;
// out is written through a temporary file next to it and replaced at the
// end, so a failure never leaves a half-redacted out behind.
func File(in, out string) (*Stats, error) {
	if err := checkDistinct(in, out); err != nil {
		return nil, err
	}
	tmp, err := copyToTemp(in, out)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		for _, suffix := range []string{"-wal", "-journal", "-shm"} {
			os.Remove(tmp + suffix)
		}
		if !ok {
			os.Remove(tmp)
		}
	}()
	st, err := redactDB(tmp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, err
	}
	ok = true
	return st, nil
}

func checkDistinct(in, out string) error {
	fi, err := os.Stat(in)
	if err != nil {
		return err
	}
	if fo, err := os.Stat(out); err == nil && os.SameFile(fi, fo) {
		return errors.New("output is the input file: redact never modifies its input")
	}
	return nil
}

// ErrNotSQLite is returned (wrapped) when the input is not a SQLite file.
var ErrNotSQLite = errors.New("not a SQLite database")

func copyToTemp(in, out string) (string, error) {
	src, err := os.Open(in)
	if err != nil {
		return "", err
	}
	defer src.Close()
	head := make([]byte, 16)
	if _, err := io.ReadFull(src, head); err != nil || string(head) != "SQLite format 3\x00" {
		return "", fmt.Errorf("%s: %w", in, ErrNotSQLite)
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	dst, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".redact-*")
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		os.Remove(dst.Name())
		return "", err
	}
	if err := dst.Close(); err != nil {
		os.Remove(dst.Name())
		return "", err
	}
	// Committed rows in a -wal file, or a hot journal, are part of the
	// database: copy them beside the copy, and SQLite applies them when
	// redactDB opens it (switching to DELETE journal mode checkpoints).
	for _, suffix := range []string{"-wal", "-journal"} {
		side, err := os.ReadFile(in + suffix)
		if err != nil || len(side) == 0 {
			continue
		}
		if err := os.WriteFile(dst.Name()+suffix, side, 0o600); err != nil {
			os.Remove(dst.Name())
			return "", err
		}
	}
	// CreateTemp makes the file 0600; give the copy the input's permissions.
	if fi, err := src.Stat(); err == nil {
		if err := os.Chmod(dst.Name(), fi.Mode().Perm()|0o600); err != nil {
			os.Remove(dst.Name())
			return "", err
		}
	}
	return dst.Name(), nil
}

type cell struct {
	rowid int64
	val   string
}

func redactDB(path string) (*Stats, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: "_journal_mode=DELETE"}
	db, err := sql.Open("sqlite3", u.String())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tables, err := listTables(db)
	if err != nil {
		return nil, err
	}
	has := map[string]bool{}
	for _, t := range tables {
		has[t] = true
	}
	st := &Stats{}
	changed := map[string]bool{}

	// Who and where: host names and user names to mask everywhere.
	hosts, users, err := collectIdentities(db, has)
	if err != nil {
		return nil, err
	}

	// 1. Environment dumps.
	envDeletes := []struct{ table, where string }{
		{"META_DATA_CAPTURE", "name LIKE '%ENVIRONMENT_VARIABLE%' OR name LIKE '%ENVIRONMENT%'"},
		{"EXPORT_META_DATA", "name LIKE '%ENVIRONMENT%'"},
		{"TARGET_INFO_SYSTEM_ENV", "name LIKE '%Environment%' OR name LIKE '%ENVIRONMENT%'"},
	}
	for _, d := range envDeletes {
		if !has[d.table] {
			continue
		}
		res, err := db.Exec("DELETE FROM " + d.table + " WHERE " + d.where)
		if err != nil {
			return nil, fmt.Errorf("delete environment rows from %s: %w", d.table, err)
		}
		n, _ := res.RowsAffected()
		if n > 0 {
			st.EnvRowsDeleted += int(n)
			changed[d.table] = true
		}
	}

	// 2. Identity fields set outright.
	type field struct{ table, name, mask string }
	fields := []field{
		{"TARGET_INFO_SYSTEM_ENV", "Hostname", HostMask},
		{"META_DATA_EXPORT", "EXPORT_HOST", HostMask},
		{"META_DATA_EXPORT", "EXPORT_USER", UserMask},
		{"META_DATA_CAPTURE", "DEVICE_DISPLAY_NAME", HostMask},
		{"META_DATA_CAPTURE", "%USER_NAME", UserMask},
		{"EXPORT_META_DATA", "EXPORT_HOST", HostMask},
		{"EXPORT_META_DATA", "EXPORT_USER", UserMask},
	}
	for _, f := range fields {
		if !has[f.table] {
			continue
		}
		res, err := db.Exec("UPDATE "+f.table+" SET value = ? WHERE name LIKE ? AND value IS NOT NULL AND value <> '' AND value <> ?", f.mask, f.name, f.mask)
		if err != nil {
			return nil, fmt.Errorf("mask %s %s: %w", f.table, f.name, err)
		}
		n, _ := res.RowsAffected()
		if n > 0 {
			st.ValuesMasked += int(n)
			changed[f.table] = true
		}
	}

	// 3. Text masking of every text cell of the metadata tables.
	m := newMasker(hosts, users)
	for _, t := range tables {
		if !isMetaTable(t) {
			continue
		}
		cols, err := textColumns(db, t)
		if err != nil {
			return nil, err
		}
		strict := t == "StringIds" // names of kernels and ranges: paths and long host names only
		for _, c := range cols {
			cells, err := candidates(db, t, c)
			if err != nil {
				return nil, err
			}
			for _, ce := range cells {
				nv := m.mask(ce.val, strict)
				if nv == ce.val {
					continue
				}
				if _, err := db.Exec(fmt.Sprintf("UPDATE %q SET %q = ? WHERE rowid = ?", t, c), nv, ce.rowid); err != nil {
					return nil, fmt.Errorf("mask %s.%s: %w", t, c, err)
				}
				st.ValuesMasked++
				changed[t] = true
			}
		}
	}

	// 4. Drop the freed pages: without VACUUM deleted values stay in the file.
	if _, err := db.Exec("VACUUM"); err != nil {
		return nil, fmt.Errorf("vacuum: %w", err)
	}
	for t := range changed {
		st.Tables = append(st.Tables, t)
	}
	sort.Strings(st.Tables)
	return st, db.Close()
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

func textColumns(db *sql.DB, table string) ([]string, error) {
	rows, err := db.Query(fmt.Sprintf("PRAGMA table_info(%q)", table))
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var (
			cid, notnull, pk int
			name, typ        string
			dflt             sql.NullString
		)
		if err := rows.Scan(&cid, &name, &typ, &notnull, &dflt, &pk); err != nil {
			return nil, err
		}
		typ = strings.ToUpper(typ)
		if typ == "" || strings.Contains(typ, "TEXT") || strings.Contains(typ, "CHAR") {
			out = append(out, name)
		}
	}
	return out, rows.Err()
}

// candidates returns the cells of table.col that may need masking.
func candidates(db *sql.DB, table, col string) ([]cell, error) {
	rows, err := db.Query(fmt.Sprintf("SELECT rowid, %q FROM %q WHERE typeof(%q) = 'text'", col, table, col))
	if err != nil {
		return nil, fmt.Errorf("read %s.%s: %w", table, col, err)
	}
	defer rows.Close()
	var out []cell
	for rows.Next() {
		var c cell
		if err := rows.Scan(&c.rowid, &c.val); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

var (
	homeRE    = regexp.MustCompile(`(/home|/Users)/([^/\\\s"';:,|=]+)`)
	rootRE    = regexp.MustCompile(`(^|[^\w.\-/])/root(/|$|[\s"';:,|])`)
	winHomeRE = regexp.MustCompile(`(?i)[A-Z]:\\{1,2}Users\\{1,2}([^\\\s"';]+)`)
)

// ignoredNames are host and user names too generic to be worth masking
// inside other text (the identity fields themselves are still masked).
var ignoredNames = map[string]bool{
	"unknown": true, "localhost": true, "root": true, "user": true, "ubuntu": true, "admin": true,
	"redacted-host": true, "redacted-user": true, "none": true, "null": true,
}

func collectIdentities(db *sql.DB, has map[string]bool) (hosts, users []string, err error) {
	q := func(table, where string, into *[]string) error {
		if !has[table] {
			return nil
		}
		rows, err := db.Query("SELECT value FROM " + table + " WHERE " + where)
		if err != nil {
			return fmt.Errorf("read %s: %w", table, err)
		}
		defer rows.Close()
		for rows.Next() {
			var v sql.NullString
			if err := rows.Scan(&v); err != nil {
				return err
			}
			if v.Valid && strings.TrimSpace(v.String) != "" {
				*into = append(*into, strings.TrimSpace(v.String))
			}
		}
		return rows.Err()
	}
	if err = q("TARGET_INFO_SYSTEM_ENV", "name = 'Hostname'", &hosts); err != nil {
		return
	}
	if err = q("META_DATA_EXPORT", "name = 'EXPORT_HOST'", &hosts); err != nil {
		return
	}
	if err = q("META_DATA_CAPTURE", "name = 'DEVICE_DISPLAY_NAME'", &hosts); err != nil {
		return
	}
	if err = q("META_DATA_EXPORT", "name = 'EXPORT_USER'", &users); err != nil {
		return
	}
	if err = q("META_DATA_CAPTURE", "name LIKE '%USER_NAME'", &users); err != nil {
		return
	}
	// User names from home paths anywhere in the metadata.
	var paths []string
	for _, t := range []string{"META_DATA_CAPTURE", "META_DATA_EXPORT", "TARGET_INFO_SYSTEM_ENV"} {
		if err = q(t, "value LIKE '%/home/%' OR value LIKE '%/Users/%' OR value LIKE '%\\Users\\%'", &paths); err != nil {
			return
		}
	}
	for _, p := range paths {
		for _, m := range homeRE.FindAllStringSubmatch(p, -1) {
			users = append(users, m[2])
		}
		for _, m := range winHomeRE.FindAllStringSubmatch(p, -1) {
			users = append(users, m[1])
		}
	}
	// Short host names ("vm", a cluster's "nid001") also appear as prefixes
	// of FQDNs: keep both forms.
	var more []string
	for _, h := range hosts {
		if i := strings.IndexByte(h, '.'); i > 0 {
			more = append(more, h[:i])
		}
	}
	return dedupe(append(hosts, more...)), dedupe(users), nil
}

func dedupe(v []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range v {
		if len(s) < 3 || ignoredNames[strings.ToLower(s)] || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	// Longest first, so "node1.example.org" is replaced before "node1".
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

type masker struct {
	hosts, users []*regexp.Regexp
	longHosts    []*regexp.Regexp // hosts of 4+ characters, also masked in StringIds
}

func wordRE(s string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[^A-Za-z0-9\-])` + regexp.QuoteMeta(s) + `($|[^A-Za-z0-9\-])`)
}

func newMasker(hosts, users []string) *masker {
	m := &masker{}
	for _, h := range hosts {
		re := wordRE(h)
		m.hosts = append(m.hosts, re)
		if len(h) >= 4 {
			m.longHosts = append(m.longHosts, re)
		}
	}
	for _, u := range users {
		m.users = append(m.users, wordRE(u))
	}
	return m
}

// mask rewrites home paths, and host and user names, in s. strict (for the
// string table, which also holds kernel and range names) masks paths and
// long host names only.
func (m *masker) mask(s string, strict bool) string {
	s = homeRE.ReplaceAllString(s, HomeMask)
	s = winHomeRE.ReplaceAllString(s, HomeMask)
	s = rootRE.ReplaceAllString(s, "${1}"+HomeMask+"${2}")
	hosts := m.hosts
	if strict {
		hosts = m.longHosts
	}
	for _, re := range hosts {
		s = replaceWord(re, s, HostMask)
	}
	if !strict {
		for _, re := range m.users {
			s = replaceWord(re, s, UserMask)
		}
	}
	return s
}

// replaceWord replaces every match of re (built by wordRE) with mask,
// keeping the delimiter characters around it. Adjacent matches that share
// a delimiter are caught by repeating until nothing changes.
func replaceWord(re *regexp.Regexp, s, mask string) string {
	for i := 0; i < 8; i++ {
		ns := re.ReplaceAllString(s, "${1}"+mask+"${2}")
		if ns == s {
			return s
		}
		s = ns
	}
	return s
}
