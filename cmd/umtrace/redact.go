package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/umtrace/umtrace/ingest/nsys"
	"github.com/umtrace/umtrace/internal/outfile"
	"github.com/umtrace/umtrace/redact"
	"github.com/umtrace/umtrace/report"
)

// checkExport opens p as an nsys export (schema, metadata and string table
// detection) and closes it.
func checkExport(p string) error {
	r, err := nsys.Open(p, nsys.Options{Read: readPathEnv()})
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
			"umtrace redact run.sqlite run.redacted.sqlite --report  # what was replaced where, on stderr",
			"umtrace redact run.sqlite run.redacted.sqlite --report=redact.json",
			"umtrace redact run.sqlite -o run.redacted.sqlite -q",
		},
		run: cmdRedact,
	})
}

func cmdRedact(stdout, stderr io.Writer, args []string) error {
	fs := newFlags("redact", stdout, stderr)
	output := outputArg(fs, "redacted copy")
	quiet := fs.BoolP("quiet", "q", false, "print nothing on success")
	report := fs.String("report", "", "say what was replaced where (table, column, rule, count; never the values): "+
		"--report alone prints it on stderr, --report=`FILE` writes it to FILE (JSON if FILE ends in .json)")
	fs.Lookup("report").NoOptDefVal = "-"
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
	// The input must be a readable nsys export (exit 3 otherwise), and
	// the redacted copy must read as one too before it is handed over.
	if err := checkExport(in); err != nil {
		return badInput(err)
	}
	if err := outfile.Check(out); err != nil {
		return internal(err)
	}
	// redact writes its copy in a private scratch directory (0700, removed
	// on SIGINT/SIGTERM, and by a later run after SIGKILL) beside OUT, or
	// in the temp directory when OUT is a device, FIFO or stdout; outfile
	// then puts the finished, checked copy in place.
	scratch, remove, err := outfile.TempDir(out)
	if err != nil {
		return internal(fmt.Errorf("write %s: %w", out, err))
	}
	defer remove()
	tmp := filepath.Join(scratch, "redacted.sqlite")
	st, err := redact.FileOpts(in, tmp, redact.Options{Check: checkExport})
	switch {
	case errors.Is(err, redact.ErrNotSQLite), errors.Is(err, redact.ErrCorrupt):
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
	if *report != "" {
		if err := writeRedactReport(stderr, *report, out, st); err != nil {
			return err
		}
	}
	if !*quiet {
		fmt.Fprintf(stdout, "%s: %d environment rows removed, %d variables dropped from environment blocks, %d values masked (%s); event data untouched\n",
			out, st.EnvRowsDeleted, st.EnvEntriesDropped, st.ValuesMasked, strings.Join(st.Tables, ", "))
	}
	return nil
}

// writeRedactReport writes what redact replaced where: to stderr when dst
// is "-", else to the file dst (JSON when it ends in .json). Counts only:
// the values replaced are never written.
func writeRedactReport(stderr io.Writer, dst, out string, st *redact.Stats) error {
	var b bytes.Buffer
	rep := report.Redact{Output: out, EnvRowsDeleted: st.EnvRowsDeleted, EnvEntriesDropped: st.EnvEntriesDropped, ValuesMasked: st.ValuesMasked}
	for _, r := range st.Replaced {
		rep.Replaced = append(rep.Replaced, report.RedactReplacement{Table: r.Table, Column: r.Column, Rule: r.Rule, Count: r.Count})
	}
	format := "text"
	if strings.HasSuffix(dst, ".json") {
		format, rep.Output = "json", filepath.Base(out)
	}
	if err := report.Write(&b, rep, format); err != nil {
		return internal(err)
	}
	if dst == "-" {
		_, err := stderr.Write(b.Bytes())
		return err
	}
	if err := os.WriteFile(dst, b.Bytes(), 0o644); err != nil {
		return internal(fmt.Errorf("write report: %w", err))
	}
	return nil
}

func total(rs []redact.Replacement) int {
	n := 0
	for _, r := range rs {
		n += r.Count
	}
	return n
}
