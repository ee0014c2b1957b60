// Package batch runs umtrace batch: it expands inputs, splits them into
// shards, names each trace, skips traces a previous run already analyzed
// (same content hash and umtrace version), runs analyses concurrently
// through the opener and writes a summary sorted by severity as
// Markdown, CSV and Parquet.
package batch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/umtrace/umtrace/cmd/umtrace/internal/opener"
	"github.com/umtrace/umtrace/report"
)

// TraceExt is the extension of SQLite exports; a directory walk collects
// them and report files (ReportExts).
const TraceExt = ".sqlite"

// isTraceFile reports whether a directory walk collects path.
func isTraceFile(path string) bool {
	return strings.EqualFold(filepath.Ext(path), TraceExt) || opener.IsReport(path)
}

// hasExport reports whether the report file path has a SQLite export
// beside it (run.nsys-rep and run.sqlite): the walk takes the export only.
func hasExport(path string) bool {
	st, err := os.Stat(strings.TrimSuffix(path, filepath.Ext(path)) + TraceExt)
	return err == nil && st.Mode().IsRegular()
}

// Failure is an input that could not be analyzed, with the reason.
type Failure struct {
	Trace  string `json:"trace"` // trace id, or the argument when it matched nothing
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Expand turns arguments into a sorted, de-duplicated list of files. An
// argument that names an existing file or directory is taken literally,
// even when it holds glob metacharacters (run[1].sqlite); otherwise an
// argument with metacharacters contributes its matches. A directory
// contributes every *.sqlite, *.nsys-rep and *.qdrep file below it
// (recursively; a report file only when no .sqlite of the same name is
// beside it). A regular file is taken as is, so a bad file is reported
// when it is analyzed. Arguments that name nothing, and files that are
// not regular files (a FIFO, device or socket, given or found in a
// directory: reading one could block forever), are returned as failures.
func Expand(args []string) ([]string, []Failure) {
	seen := map[string]bool{}
	var out []string
	var fails []Failure
	add := func(p string) {
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	walk := func(dir string) error {
		return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !isTraceFile(p) || (opener.IsReport(p) && hasExport(p)) {
				return nil
			}
			if err := opener.CheckInput(p); err != nil {
				fails = append(fails, Failure{Trace: p, Path: p, Reason: err.Error()})
				return nil
			}
			add(p)
			return nil
		})
	}
	for _, a := range args {
		var matches []string
		if _, err := os.Lstat(a); err != nil && strings.ContainsAny(a, "*?[") {
			m, err := filepath.Glob(a)
			if err != nil {
				fails = append(fails, Failure{Trace: a, Path: a, Reason: fmt.Sprintf("bad pattern %q: %v", a, err)})
				continue
			}
			if len(m) == 0 {
				fails = append(fails, Failure{Trace: a, Path: a, Reason: fmt.Sprintf("%s: no files match", a)})
				continue
			}
			matches = m
		} else {
			matches = []string{a}
		}
		for _, m := range matches {
			st, err := os.Stat(m)
			switch {
			case err != nil:
				fails = append(fails, Failure{Trace: m, Path: m, Reason: oneLine(err.Error())})
			case st.IsDir():
				before := len(out)
				if err := walk(m); err != nil {
					fails = append(fails, Failure{Trace: m, Path: m, Reason: oneLine(err.Error())})
				} else if len(out) == before {
					fails = append(fails, Failure{Trace: m, Path: m, Reason: fmt.Sprintf("%s: no trace files (%s, %s) in directory", m, TraceExt, strings.Join(opener.ReportExts, ", "))})
				}
			default:
				if err := opener.CheckInput(m); err != nil {
					fails = append(fails, Failure{Trace: m, Path: m, Reason: err.Error()})
					continue
				}
				add(m)
			}
		}
	}
	sort.Strings(out)
	return out, fails
}

// Shard selects part I of N of a sorted input list: the inputs whose
// zero-based index i in the sorted list satisfies i % N == I-1. Every
// job of an array that sees the same inputs computes the same list, so
// the N shards are disjoint and together cover every input. The zero
// Shard (or 1/1) selects everything.
type Shard struct {
	Index int // 1-based
	Count int
}

// ParseShard parses "I/N" with 1 <= I <= N.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want I/N, e.g. 2/8", s)
	}
	idx, err1 := strconv.Atoi(strings.TrimSpace(i))
	cnt, err2 := strconv.Atoi(strings.TrimSpace(n))
	if err1 != nil || err2 != nil || cnt < 1 || idx < 1 || idx > cnt {
		return Shard{}, fmt.Errorf("shard %q: want I/N with 1 <= I <= N", s)
	}
	return Shard{Index: idx, Count: cnt}, nil
}

// String formats the shard as I/N ("" for the zero shard).
func (s Shard) String() string {
	if s.Count == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// All reports whether the shard selects every input.
func (s Shard) All() bool { return s.Count <= 1 }

// Select returns the shard's part of paths, which must be sorted.
func (s Shard) Select(paths []string) []string {
	if s.All() {
		return paths
	}
	var out []string
	for i, p := range paths {
		if i%s.Count == s.Index-1 {
			out = append(out, p)
		}
	}
	return out
}

// TraceIDs names every path: its BaseID, or, when several paths share a
// BaseID, the BaseID plus "-" and the first 8 hex digits of the file's
// SHA-256. Pass the full sorted input list (before sharding) so every
// shard names traces alike. hash is called only for clashing names (nil
// means HashFile); a file that cannot be read keeps a suffix from its
// path's hash so it can still be reported.
func TraceIDs(paths []string, hash func(string) (string, error)) map[string]string {
	if hash == nil {
		hash = opener.HashFile
	}
	byBase := map[string][]string{}
	for _, p := range paths {
		b := report.BaseID(p)
		byBase[b] = append(byBase[b], p)
	}
	ids := make(map[string]string, len(paths))
	used := map[string]bool{}
	for _, p := range paths {
		if b := report.BaseID(p); len(byBase[b]) == 1 {
			ids[p] = b
			used[b] = true
		}
	}
	for _, p := range paths {
		b := report.BaseID(p)
		if len(byBase[b]) == 1 {
			continue
		}
		h, err := hash(p)
		if err != nil || len(h) < 8 {
			s := sha256.Sum256([]byte(p))
			h = "p" + hex.EncodeToString(s[:])
		}
		id := b + "-" + h[:8]
		// Identical copies under different directories share a hash:
		// disambiguate deterministically (paths are sorted).
		for n := 2; used[id]; n++ {
			id = fmt.Sprintf("%s-%s-%d", b, h[:8], n)
		}
		used[id] = true
		ids[p] = id
	}
	return ids
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }
