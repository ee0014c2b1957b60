package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// Exit codes. Documented in README.md; keep them in sync.
const (
	exitOK       = 0 // success
	exitFail     = 1 // a check failed: gate thresholds exceeded, reproduce --validate mismatch
	exitUsage    = 2 // bad flags or arguments
	exitBadInput = 3 // an input file is missing, unreadable, not a trace/log, or corrupt (batch: at least one input failed)
	exitInternal = 4 // an output could not be written, or an internal error
)

// command is one umtrace subcommand. Each lives in its own file and
// registers itself from init, so adding one never touches this file.
type command struct {
	name    string
	summary string
	usage   string // one line after "umtrace NAME "
	run     func(stdout, stderr io.Writer, args []string) error
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("umtrace: duplicate command " + c.name)
	}
	commands[c.name] = c
}

// exitError carries an exit code with an error. Commands return
// usageErr/badInput/... and run maps them to codes.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, a...)}
}
func badInput(err error) error { return &exitError{exitBadInput, err} }
func failed(err error) error   { return &exitError{exitFail, err} }
func internal(err error) error { return &exitError{exitInternal, err} }

// run is the whole program: it parses args, runs one command, prints any
// error as one line on stderr and returns the exit code.
func run(stdout, stderr io.Writer, args []string) int {
	// Traces reach tens of millions of rows and the analysis keeps a few
	// hundred MB of compact records live: the heap may grow by half its
	// live size between collections (not double), under a soft limit. The
	// limit is a target, not a cap: a larger live heap still works, but
	// near it the GC runs back to back, so it sits well above what the
	// bench trace needs (docs/performance.md).
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemLimit)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "version" || args[0] == "--version" {
		fmt.Fprintln(stdout, "umtrace", Version)
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "umtrace: unknown command %q (run umtrace help)\n", args[0])
		return exitUsage
	}
	if p := os.Getenv("UMTRACE_CPUPROFILE"); p != "" {
		// For performance reports: a pprof CPU profile of the command.
		if f, err := os.Create(p); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer func() { pprof.StopCPUProfile(); f.Close() }()
			}
		}
	}
	if p := os.Getenv("UMTRACE_MEMPROFILE"); p != "" {
		// For performance reports: where the command allocated.
		runtime.MemProfileRate = 64 << 10
		defer func() {
			if f, err := os.Create(p); err == nil {
				pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	err := c.run(stdout, stderr, args[1:])
	if err == nil {
		return exitOK
	}
	if errors.Is(err, pflag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "umtrace %s: %s\n", c.name, oneLine(err.Error()))
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitInternal
}

// defaultMemLimit is the soft memory limit (GOMEMLIMIT overrides it) and
// defaultGCPercent the GC target (GOGC overrides it).
const (
	defaultMemLimit  = 320 << 20
	defaultGCPercent = 50
)

// Version is the umtrace version; it is part of batch caches' keys.
const Version = "0.1.0"

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "umtrace finds CUDA Unified Memory implicit-synchronization storms in Nsight Systems traces.")
	fmt.Fprintln(w, "\nUsage: umtrace COMMAND [flags] ARGS\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun umtrace COMMAND --help for a command's flags. Exit codes: 0 ok, 1 check failed, 2 usage, 3 bad input, 4 output/internal error.")
}

// newFlags returns a flag set for command c that reports errors as usage
// errors rather than exiting.
func newFlags(c string, stderr io.Writer, usage string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(c, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: umtrace %s %s\n", c, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, mapping flag errors to usage errors.
func parseFlags(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageErr("%v", err)
	}
	return nil
}
