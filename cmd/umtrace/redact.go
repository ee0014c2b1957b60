package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/umtrace/umtrace/ingest/nsys"
	"github.com/umtrace/umtrace/redact"
)

// checkExport opens p as an nsys export (schema, metadata and string table
// detection) and closes it.
func checkExport(p string) error {
	r, err := nsys.Open(p, nsys.Options{})
	if err != nil {
		return err
	}
	return r.Close()
}

func init() {
	register(command{
		name:    "redact",
		summary: "copy a trace without environments, argv secrets, home paths, user and host names",
		usage:   "IN OUT [flags] | IN -o OUT [flags]",
		about: "IN is an nsys SQLite export; OUT a new file (never IN). Event data is untouched, " +
			"so OUT analyzes exactly as IN does.",
		examples: []string{
			"umtrace redact run.sqlite run.redacted.sqlite",
			"umtrace redact run.sqlite -o run.redacted.sqlite -q",
		},
		run: cmdRedact,
	})
}

func cmdRedact(stdout, stderr io.Writer, args []string) error {
	fs := newFlags("redact", stdout, stderr)
	output := outputArg(fs, "redacted copy")
	quiet := fs.BoolP("quiet", "q", false, "print nothing on success")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ins, out, err := output()
	if err != nil {
		return err
	}
	if len(ins) != 1 {
		return usageErr("want one IN and one OUT, got %d arguments", fs.NArg())
	}
	in := ins[0]
	if _, err := os.Stat(in); err != nil {
		return badInput(err)
	}
	if sameFile(in, out) {
		return usageErr("OUT %s is the input file: redact never modifies its input", out)
	}
	// The input must be a readable nsys export (exit 3 otherwise), and
	// the redacted copy must read as one too before it is handed over.
	if err := checkExport(in); err != nil {
		return badInput(err)
	}
	st, err := redact.FileOpts(in, out, redact.Options{Check: checkExport})
	switch {
	case errors.Is(err, redact.ErrNotSQLite), errors.Is(err, redact.ErrCorrupt):
		return badInput(err)
	case err != nil:
		return internal(fmt.Errorf("redact %s: %w", in, err))
	}
	if !*quiet {
		fmt.Fprintf(stdout, "%s: %d environment rows removed, %d variables dropped from environment blocks, %d values masked (%s); event data untouched\n",
			out, st.EnvRowsDeleted, st.EnvEntriesDropped, st.ValuesMasked, strings.Join(st.Tables, ", "))
	}
	return nil
}
