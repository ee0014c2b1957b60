package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/umtrace/umtrace/cmd/umtrace/internal/exitcode"
)

// Exit codes (exitcode defines them; README.md documents them).
const (
	exitOK       = exitcode.OK
	exitFail     = exitcode.Fail
	exitUsage    = exitcode.Usage
	exitBadInput = exitcode.BadInput
	exitInternal = exitcode.Internal
)

// command is one umtrace subcommand. Each lives in its own file and
// registers itself from init, so adding one never touches this file.
type command struct {
	name    string
	summary string // one line, shown by umtrace help
	usage   string // after "umtrace NAME "
	// about is a paragraph shown by --help after the usage line (optional).
	about string
	// examples are command lines shown by --help, each optionally
	// followed by "  # comment".
	examples []string
	run      func(stdout, stderr io.Writer, args []string) error
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("umtrace: duplicate command " + c.name)
	}
	commands[c.name] = c
}

// usageErr, badInput, failed and internal give an error its exit code;
// run maps every error to its code with exitcode.Of.
func usageErr(format string, a ...any) error {
	return &exitcode.Error{Code: exitUsage, Err: fmt.Errorf(format, a...)}
}
func badInput(err error) error { return exitcode.With(exitBadInput, err) }
func failed(err error) error   { return exitcode.With(exitFail, err) }
func internal(err error) error { return exitcode.With(exitInternal, err) }

// run is the whole program: it parses args, runs one command, prints any
// error as one line on stderr and returns the exit code.
func run(stdout, stderr io.Writer, args []string) int {
	setupGC(args) // gc.go
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	if (args[0] == "version" || args[0] == "--version") && len(args) > 1 && (args[1] == "-h" || args[1] == "--help") {
		args = []string{"help", "version"}
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 && args[0] == "help" && (args[1] == "version" || args[1] == "help") {
			fmt.Fprint(stdout, builtinHelp[args[1]]+"\n"+exitCodesHelp)
			return exitOK
		}
		if len(args) > 1 && args[0] == "help" {
			c, ok := commands[args[1]]
			if !ok {
				fmt.Fprintf(stderr, "umtrace help: unknown command %q (run umtrace help)\n", args[1])
				return exitUsage
			}
			args = []string{c.name, "--help"}
		} else {
			printUsage(stdout)
			return exitOK
		}
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
	if p := os.Getenv("UMTRACE_EXECTRACE"); p != "" {
		// For performance reports on many cores: an execution trace
		// (go tool trace) of the command, where the wall time goes.
		if f, err := os.Create(p); err == nil {
			if trace.Start(f) == nil {
				defer func() { trace.Stop(); f.Close() }()
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
	return exitcode.Of(err)
}

// Version is the umtrace version; it is part of batch caches' keys.
const Version = "0.1.0"

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }

// helpWidth is the widest line --help prints.
const helpWidth = 100

// exitCodesHelp ends every --help.
const exitCodesHelp = `Exit codes:
  0  success
  1  a check failed (gate thresholds, analyze --fail-on-storm, reproduce --validate)
  2  bad flags, arguments or option values; an output that is an input (or its -wal/-shm/-journal)
  3  bad input: a file missing, unreadable, not a regular file, not a trace or log, or corrupt;
     reproduce: no CUDA device
  4  an output could not be written, out of memory, or an internal error
  130, 143  interrupted by SIGINT, SIGTERM (temporary files removed)
`

// builtinHelp is the help of the commands run handles itself.
var builtinHelp = map[string]string{
	"version": "umtrace version: print the version\n\nUsage: umtrace version (or umtrace --version)\n\n" +
		"Prints \"umtrace VERSION\" on stdout. The version is part of batch's cache keys and of\n" +
		"every summary row (umtrace_version).\n",
	"help": "umtrace help: list the commands, or show one command's flags, examples and exit codes\n\n" +
		"Usage: umtrace help [COMMAND] (or umtrace COMMAND --help)\n",
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "umtrace finds CUDA Unified Memory implicit-synchronization storms in Nsight Systems")
	fmt.Fprintln(w, "traces (SQLite exports, or .nsys-rep/.qdrep when nsys is installed).")
	fmt.Fprintln(w, "\nUsage: umtrace COMMAND [flags] ARGS\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "  help       show a command's flags, examples and exit codes: umtrace help COMMAND")
	fmt.Fprintln(w, "  version    print the version")
	fmt.Fprintln(w, "\nExamples:\n  umtrace analyze run.sqlite\n  umtrace help analyze")
	fmt.Fprintln(w)
	fmt.Fprint(w, exitCodesHelp)
}

// printHelp writes command c's help (its --help) to w.
func printHelp(w io.Writer, c command, fs *pflag.FlagSet) {
	fmt.Fprint(w, wrapText("umtrace "+c.name+": "+c.summary, helpWidth, ""))
	fmt.Fprint(w, "\n"+wrapText("Usage: umtrace "+c.name+" "+c.usage, helpWidth, "         "))
	if c.about != "" {
		fmt.Fprint(w, "\n"+wrapText(c.about, helpWidth, ""))
	}
	fmt.Fprint(w, "\nFlags:\n"+fs.FlagUsagesWrapped(helpWidth))
	fmt.Fprint(w, "\nExamples:\n")
	for _, e := range c.examples {
		fmt.Fprintf(w, "  %s\n", e)
	}
	fmt.Fprint(w, "\n"+exitCodesHelp)
}

// wrapText breaks s at spaces into lines of at most width columns, the
// lines after the first indented by indent.
func wrapText(s string, width int, indent string) string {
	var b strings.Builder
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) > width:
			b.WriteString(line + "\n")
			line = indent + w
		default:
			line += " " + w
		}
	}
	b.WriteString(line + "\n")
	return b.String()
}

// newFlags returns command c's flag set. Flag errors come back as errors
// (parseFlags makes them usage errors); --help and -h print the command's
// help to stdout; pflag's own notes (deprecated flags) go to stderr.
func newFlags(c string, stdout, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(c, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() { printHelp(stdout, commands[c], fs) }
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
