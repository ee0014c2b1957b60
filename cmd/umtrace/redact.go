package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/umtrace/umtrace/ingest/nsys/redact"
)

func init() {
	register(command{
		name:    "redact",
		summary: "copy a trace without environment dumps, home paths, user and host names",
		usage:   "IN OUT [flags]",
		about: "IN is an nsys SQLite export; OUT a new file (never IN). Event data is untouched, " +
			"so OUT analyzes exactly as IN does.",
		examples: []string{
			"umtrace redact run.sqlite run.redacted.sqlite",
		},
		run: cmdRedact,
	})
}

func cmdRedact(stdout, stderr io.Writer, args []string) error {
	fs := newFlags("redact", stdout, stderr)
	quiet := fs.BoolP("quiet", "q", false, "print nothing on success")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usageErr("want IN and OUT, got %d arguments", fs.NArg())
	}
	in, out := fs.Arg(0), fs.Arg(1)
	if _, err := os.Stat(in); err != nil {
		return badInput(err)
	}
	st, err := redact.File(in, out)
	switch {
	case errors.Is(err, redact.ErrNotSQLite):
		return badInput(err)
	case err != nil && strings.Contains(err.Error(), "never modifies"):
		return usageErr("%v", err)
	case err != nil:
		return internal(fmt.Errorf("redact %s: %w", in, err))
	}
	if !*quiet {
		fmt.Fprintf(stdout, "%s: %d environment rows removed, %d values masked (%s); event data untouched\n",
			out, st.EnvRowsDeleted, st.ValuesMasked, strings.Join(st.Tables, ", "))
	}
	return nil
}
