package job

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/ingest/nsys"
)

// Exit codes of umtrace (README.md documents them; keep them in sync).
const (
	ExitOK       = 0 // success
	ExitFail     = 1 // a check failed: gate thresholds, --fail-on-storm, reproduce --validate mismatch
	ExitUsage    = 2 // bad flags, arguments or option values
	ExitBadInput = 3 // an input is missing, unreadable, not a trace/log, or corrupt (batch: at least one input failed)
	ExitInternal = 4 // an output could not be written, out of memory, or an internal error
)

// Error is an error with the exit code it maps to.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// WithCode gives err an exit code (nil stays nil; an err that has a code
// keeps it).
func WithCode(code int, err error) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	return &Error{code, err}
}

// Code is the exit code of err: 0 for nil, the code of an *Error in its
// chain, else ExitInternal.
func Code(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitInternal
}

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
	// (results marked Partial) instead of failing with ExitBadInput.
	Salvage bool
	// Read is the reader's read path (nsys.Options.Read; the CLI takes it
	// from UMTRACE_READER, for tests and diagnosis).
	Read nsys.ReadPath
}

// Analyze opens path and analyzes it: the one place where umtrace turns a
// file name into an analysis. Every error names the file and carries its
// exit code: ExitBadInput for a file that is missing, unreadable, not a
// trace, corrupt or without CUDA activity, ExitUsage for an option the
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
		return nil, &Error{inputCode(err), named(path, salvageHint(err))}
	}
	if opts.Phases == nil && os.Getenv("UMTRACE_PHASES") != "" {
		opts.Phases = os.Stderr // per-phase timings, for performance work (docs/performance.md)
	}
	f, err := analyze.AnalyzeFile(r, opts)
	if err != nil {
		r.Close()
		var sr *analyze.StepRangeError
		if errors.As(err, &sr) {
			return nil, &Error{ExitUsage, named(path, err)}
		}
		// ingest.ErrNoCUDA, nsys.ErrCorrupt and read errors alike.
		return nil, &Error{inputCode(err), named(path, salvageHint(err))}
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
// ExitBadInput, but ExitInternal when SQLite ran out of memory.
func inputCode(err error) int {
	if errors.Is(err, nsys.ErrOutOfMemory) {
		return ExitInternal
	}
	return ExitBadInput
}

// named prefixes err with path unless its message already names it.
func named(path string, err error) error {
	if strings.Contains(err.Error(), path) || strings.Contains(err.Error(), filepath.Base(path)) {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}
