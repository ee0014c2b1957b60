package batch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/opener"
	"github.com/umtrace/umtrace/internal/outfile"
	"github.com/umtrace/umtrace/report"
)

// TracesDir is the subdirectory of the output directory that holds the
// per-trace reports and cache records.
const TracesDir = "traces"

// Report writes one trace's report in one format.
type Report struct {
	Ext   string // file extension, e.g. ".md"
	Write func(w io.Writer, res *analyze.Result) error
}

// JSONReport writes the analysis as analyze's JSON document (kind
// "trace", docs/json.md).
var JSONReport = Report{Ext: ".json", Write: func(w io.Writer, res *analyze.Result) error {
	return report.Write(w, res, "json")
}}

// Options configure Run.
type Options struct {
	Out     string // output directory (created)
	Jobs    int    // concurrent analyses; 0 means DefaultJobs
	Force   bool   // re-analyze even when the cache matches
	Version string // umtrace version: part of the cache key
	Analyze analyze.Options
	Open    opener.Opener // how traces (and .nsys-rep files) are opened
	// Reports are written per trace as traces/<id><Ext>. Default: JSONReport.
	Reports []Report
	// Progress, when set, is called once per finished input, in
	// completion order, never concurrently.
	Progress func(p Progress)
}

// Progress describes one finished input.
type Progress struct {
	Done, Total int
	Trace       string
	Status      string // "analyzed", "cached" or "failed"
	Row         report.SummaryRow
}

// DefaultJobs is GOMAXPROCS capped at 4: each analysis holds one trace's
// working set, so a small cap keeps memory bounded on big nodes.
func DefaultJobs() int {
	n := runtime.GOMAXPROCS(0)
	if n > 4 {
		n = 4
	}
	return n
}

// cacheRecord is traces/<id>.cache.json: what a later run needs to skip
// the trace.
type cacheRecord struct {
	SHA256         string            `json:"sha256"`
	UmtraceVersion string            `json:"umtrace_version"`
	OptionsSHA256  string            `json:"options_sha256"` // analysis options: changing a threshold re-analyzes
	Reports        []string          `json:"reports"`
	Row            report.SummaryRow `json:"row"`
}

// Summary is the outcome of Run.
type Summary struct {
	Rows     []report.SummaryRow // sorted by severity, failures (verdict "error") last
	Analyzed int
	Cached   int
	Failed   int
}

// Run analyzes paths (ids from TraceIDs) with opts.Jobs workers, writing
// per-trace reports under opts.Out/traces. It returns an error only when
// the output cannot be written; inputs that fail become rows with
// verdict "error".
func Run(paths []string, ids map[string]string, opts Options) (*Summary, error) {
	if opts.Jobs <= 0 {
		opts.Jobs = DefaultJobs()
	}
	if len(opts.Reports) == 0 {
		opts.Reports = []Report{JSONReport}
	}
	dir := filepath.Join(opts.Out, TracesDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	type result struct {
		row    report.SummaryRow
		status string
		err    error // output error: fatal
	}
	work := make(chan string)
	results := make(chan result)
	var wg sync.WaitGroup
	for range min(opts.Jobs, max(len(paths), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				row, status, err := one(p, ids[p], dir, opts)
				results <- result{row, status, err}
			}
		}()
	}
	go func() {
		for _, p := range paths {
			work <- p
		}
		close(work)
		wg.Wait()
		close(results)
	}()
	s := &Summary{}
	var firstErr error
	done := 0
	for r := range results {
		done++
		if r.err != nil && firstErr == nil {
			firstErr = r.err
		}
		switch r.status {
		case "analyzed":
			s.Analyzed++
		case "cached":
			s.Cached++
		default:
			s.Failed++
		}
		s.Rows = append(s.Rows, r.row)
		if opts.Progress != nil {
			opts.Progress(Progress{Done: done, Total: len(paths), Trace: r.row.Trace, Status: r.status, Row: r.row})
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	sort.Slice(s.Rows, func(i, j int) bool { return s.Rows[i].Trace < s.Rows[j].Trace })
	report.SortSummaryRows(s.Rows)
	return s, nil
}

// one handles one input. A bad input yields an error row and a nil error;
// the error return is for outputs that cannot be written.
func one(path, id, dir string, opts Options) (report.SummaryRow, string, error) {
	fail := func(err error) (report.SummaryRow, string, error) {
		return report.SummaryRow{Trace: id, File: filepath.Base(path), Verdict: report.VerdictError, Reason: oneLine(err.Error()), UmtraceVersion: opts.Version}, "failed", nil
	}
	sha, err := opener.HashFile(path)
	if err != nil {
		return fail(err)
	}
	cachePath := filepath.Join(dir, id+".cache.json")
	if !opts.Force {
		if row, ok := readCache(cachePath, sha, opts); ok {
			return row, "cached", nil
		}
	}
	// A stale record must not survive a failed re-analysis.
	if err := os.Remove(cachePath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return report.SummaryRow{}, "", fmt.Errorf("remove stale cache record: %w", err)
	}
	t, err := opts.Open.Analyze(path, opts.Analyze)
	if err != nil {
		return fail(err)
	}
	t.Close()
	res := t.Result
	row := report.SummaryRowFromResult(id, filepath.Base(path), sha, opts.Version, res)
	rec := cacheRecord{SHA256: sha, UmtraceVersion: opts.Version, OptionsSHA256: optionsKey(opts), Row: row}
	for _, rep := range opts.Reports {
		var buf bytes.Buffer
		if err := rep.Write(&buf, res); err != nil {
			return report.SummaryRow{}, "", fmt.Errorf("render %s report of %s: %w", rep.Ext, id, err)
		}
		if err := WriteFileAtomic(filepath.Join(dir, id+rep.Ext), buf.Bytes()); err != nil {
			return report.SummaryRow{}, "", err
		}
		rec.Reports = append(rec.Reports, id+rep.Ext)
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return report.SummaryRow{}, "", fmt.Errorf("encode cache record of %s: %w", id, err)
	}
	if err := WriteFileAtomic(cachePath, append(data, '\n')); err != nil {
		return report.SummaryRow{}, "", err
	}
	return row, "analyzed", nil
}

// readCache returns the cached row when the record matches the content
// hash and version and every report it lists (and every report asked
// for) exists.
func readCache(path, sha string, opts Options) (report.SummaryRow, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return report.SummaryRow{}, false
	}
	var rec cacheRecord
	if json.Unmarshal(data, &rec) != nil || rec.SHA256 != sha || rec.UmtraceVersion != opts.Version || rec.OptionsSHA256 != optionsKey(opts) {
		return report.SummaryRow{}, false
	}
	have := map[string]bool{}
	for _, r := range rec.Reports {
		have[r] = true
	}
	dir := filepath.Dir(path)
	for _, rep := range opts.Reports {
		name := rec.Row.Trace + rep.Ext
		if !have[name] {
			return report.SummaryRow{}, false
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return report.SummaryRow{}, false
		}
	}
	return rec.Row, true
}

// WriteFileAtomic writes data to path through outfile (a temporary file
// in the same directory and a rename, so readers and concurrent shards
// never see a partial file; a symlink's target is replaced; a device or
// FIFO is written through).
func WriteFileAtomic(path string, data []byte) error {
	return outfile.Write(path, nil, data)
}

// optionsKey hashes the analysis options, so a run with other thresholds
// does not reuse results.
func optionsKey(opts Options) string {
	data, _ := json.Marshal(opts.Analyze)
	if opts.Open.Salvage {
		// A salvaged (partial) result is no answer to a run without.
		data = append(data, " salvage"...)
	}
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}
