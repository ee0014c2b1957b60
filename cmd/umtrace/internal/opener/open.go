// Package opener is umtrace's one door from a file name to an analysis:
// every command that reads a trace (single-file and job mode, diff,
// gate, batch, export, reproduce --validate) opens it through an Opener,
// which reads SQLite exports directly and Nsight Systems report files
// through a cached `nsys export`, and gives every error its exit code.
package opener

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/exitcode"
	"github.com/umtrace/umtrace/ingest/nsys"
)

// Trace is one opened and analyzed trace. Close it when done.
type Trace struct {
	Path   string // as given: the .sqlite, .nsys-rep or .qdrep file
	SQLite string // the SQLite export read: Path, or the cached export of a report file
	Reader *nsys.Reader
	File   *analyze.File   // everything the one read gave (analyze.AnalyzeFile)
	Result *analyze.Result // File.Whole
}

// Close closes the reader.
func (t *Trace) Close() error { return t.Reader.Close() }

// Opener opens traces: SQLite exports directly, Nsight Systems report files
// (.nsys-rep, .qdrep) through a cached `nsys export` (see Export).
type Opener struct {
	// Nsys is the nsys binary; "" means $UMTRACE_NSYS, then nsys on PATH,
	// then the standard install locations.
	Nsys string
	// CacheDir holds exports of report files; "" means $UMTRACE_CACHE_DIR,
	// else os.UserCacheDir()/umtrace/nsys-export.
	CacheDir string
	// Salvage reads damaged traces around the damage the reader detects
	// (results marked Partial) instead of failing with exitcode.BadInput.
	Salvage bool
	// Read is the reader's read path (nsys.Options.Read; the CLI takes it
	// from UMTRACE_READER, for tests and diagnosis).
	Read nsys.ReadPath
}

// Analyze opens path and analyzes it: the one place where umtrace turns a
// file name into an analysis. Every error names the file and carries its
// exit code: exitcode.BadInput for a file that is missing, unreadable, not a
// trace, corrupt or without CUDA activity, exitcode.Usage for an option the
// trace cannot satisfy (a --step-range it lacks).
func (o Opener) Analyze(path string, opts analyze.Options) (*Trace, error) {
	if err := CheckInput(path); err != nil {
		return nil, err
	}
	db, err := o.SQLite(path)
	if err != nil {
		return nil, err
	}
	r, err := nsys.Open(db, nsys.Options{Salvage: o.Salvage, Read: o.Read})
	if err != nil {
		return nil, &exitcode.Error{Code: inputCode(err), Err: named(path, salvageHint(err))}
	}
	if opts.Phases == nil {
		opts.Phases = PhasesOut() // per-phase timings, for performance work (phases.go)
	}
	f, err := analyze.AnalyzeFile(r, opts)
	if err != nil {
		r.Close()
		var sr *analyze.StepRangeError
		if errors.As(err, &sr) {
			return nil, &exitcode.Error{Code: exitcode.Usage, Err: named(path, err)}
		}
		// ingest.ErrNoCUDA, nsys.ErrCorrupt and read errors alike.
		return nil, &exitcode.Error{Code: inputCode(err), Err: named(path, salvageHint(err))}
	}
	if r.Partial() {
		f.Whole.Partial = true
		for _, p := range f.Processes {
			p.Partial = true
		}
	}
	if db != path {
		// Reports name the report file, not its cached export.
		f.Name = filepath.Base(path)
		f.Whole.Trace.File = f.Name
		for _, p := range f.Processes {
			p.Trace.File = f.Name
		}
	}
	return &Trace{Path: path, SQLite: db, Reader: r, File: f, Result: f.Whole}, nil
}

// AnalyzeFiles analyzes paths (Analyze, two at a time: each holds one
// trace's working set) and returns their analyses in order, the readers
// closed. The error is that of the first path, in order, that failed.
func (o Opener) AnalyzeFiles(paths []string, opts analyze.Options) ([]*analyze.File, error) {
	files := make([]*analyze.File, len(paths))
	errs := make([]error, len(paths))
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			t, err := o.Analyze(p, opts)
			if err != nil {
				errs[i] = err
				return
			}
			t.Close()
			files[i] = t.File
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

// salvageHint adds to an error of damage the reader detected that
// --salvage reads on around it.
func salvageHint(err error) error {
	if errors.Is(err, nsys.ErrDamaged) {
		return fmt.Errorf("%w (--salvage reads on around it)", err)
	}
	return err
}

// inputCode is the exit code of an error opening or reading a trace:
// exitcode.BadInput, but exitcode.Internal when SQLite ran out of memory.
func inputCode(err error) int {
	if errors.Is(err, nsys.ErrOutOfMemory) {
		return exitcode.Internal
	}
	return exitcode.BadInput
}

// named prefixes err with path unless its message already names it.
func named(path string, err error) error {
	if strings.Contains(err.Error(), path) || strings.Contains(err.Error(), filepath.Base(path)) {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}
