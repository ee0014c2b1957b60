package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/umtrace/umtrace/internal/outfile"
	"github.com/umtrace/umtrace/redact"
)

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
	if err := outfile.CheckInputs(out, in); err != nil {
		return usageErr("OUT %v: redact never modifies its input", err)
	}
	if err := outfile.Check(out); err != nil {
		return internal(err)
	}
	// redact writes its copy in a private scratch directory (0700, removed
	// on SIGINT/SIGTERM, and by a later run after SIGKILL) beside OUT, or
	// in the temp directory when OUT is a device, FIFO or stdout; outfile
	// then puts the finished copy in place.
	scratch, remove, err := outfile.TempDir(out)
	if err != nil {
		return internal(fmt.Errorf("write %s: %w", out, err))
	}
	defer remove()
	tmp := filepath.Join(scratch, "redacted.sqlite")
	st, err := redact.File(in, tmp)
	switch {
	case errors.Is(err, redact.ErrNotSQLite):
		return badInput(err)
	case err != nil:
		return internal(fmt.Errorf("redact %s: %w", in, err))
	}
	if err := outfile.Place(tmp, out, stdout); err != nil {
		return internal(err)
	}
	if out == outfile.Stdout {
		stdout = stderr // the summary line must not end up in the copy
	}
	if !*quiet {
		fmt.Fprintf(stdout, "%s: %d environment rows removed, %d variables dropped from environment blocks, %d values masked (%s); event data untouched\n",
			out, st.EnvRowsDeleted, st.EnvEntriesDropped, st.ValuesMasked, strings.Join(st.Tables, ", "))
	}
	return nil
}
