package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/umtrace/umtrace/ingest/sanitizer"
	"github.com/umtrace/umtrace/report"
)

func init() {
	register(command{
		name:    "sanitizer",
		summary: "summarize compute-sanitizer / cuda-memcheck logs by kernel and source line",
		usage:   "LOG... [flags]",
		about: "Reads text or XML logs (memcheck incl. leaks and API errors, racecheck, initcheck, " +
			"synccheck) and prints, per log, the tool's summary and the findings grouped by kernel " +
			"and source line. Parse warnings go to stderr and never fail the run.",
		examples: []string{
			"umtrace sanitizer memcheck.txt racecheck.xml",
			"umtrace sanitizer memcheck.txt -o findings.md",
			"umtrace analyze run.sqlite --sanitizer memcheck.txt   # findings beside the trace",
		},
		run: cmdSanitizer,
	})
}

func cmdSanitizer(stdout, stderr io.Writer, args []string) error {
	fs := newFlags("sanitizer", stdout, stderr)
	out := outputFlags(fs, "summary", "text", "text", "md", "html", "json")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageErr("no LOG given")
	}
	format, err := out.resolve(fs.Args()...)
	if err != nil {
		return err
	}
	var sums []report.SanitizerLogSummary
	for _, path := range fs.Args() {
		l, err := sanitizer.ParseFile(path)
		if err != nil {
			return badInput(err)
		}
		for _, w := range l.Warnings {
			fmt.Fprintln(stderr, w.Error())
		}
		sums = append(sums, report.SummarizeSanitizerLog(l))
	}
	var buf bytes.Buffer
	if err = report.Write(&buf, report.Sanitizer{Logs: sums}, format); err != nil {
		return internal(err)
	}
	return out.write(stdout, buf.Bytes())
}
