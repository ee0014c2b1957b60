package main

import (
	"bytes"
	"io"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/compare"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/opener"
	"github.com/umtrace/umtrace/report"
)

func init() {
	register(command{
		name:    "diff",
		summary: "compare two traces (before/after a fix) with significance tests",
		usage:   "BEFORE AFTER [flags]",
		about: "Step time, per-API sync P50/P95/P99, blocked share, faults, migrated bytes and storm " +
			"time: before, after, change and whether the change is significant (Mann-Whitney U, " +
			"alpha 0.05). BEFORE and AFTER are SQLite exports or .nsys-rep/.qdrep reports.",
		examples: []string{
			"umtrace diff before.sqlite after.sqlite",
			"umtrace diff before.sqlite after.sqlite -o diff.json   # JSON (format from the extension)",
		},
		run: cmdDiff,
	})
}

// diffSide analyzes one trace with its per-call sync samples, in one read.
func diffSide(o opener.Opener, path string, opts analyze.Options) (compare.Side, error) {
	opts.SyncSamples = true
	t, err := o.Analyze(path, opts)
	if err != nil {
		return compare.Side{}, err
	}
	t.Close()
	return compare.Side{Result: t.Result, Sync: t.File.Sync}, nil
}

func cmdDiff(stdout, stderr io.Writer, args []string) error {
	fs := newFlags("diff", stdout, stderr)
	out := outputFlags(fs, "comparison", "md", "md", "text", "html", "json")
	af := addAnalysisFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usageErr("want two traces, BEFORE and AFTER, got %d (usage: umtrace diff BEFORE AFTER)", fs.NArg())
	}
	format, err := out.resolve(fs.Args()...)
	if err != nil {
		return err
	}
	opts, err := af.options()
	if err != nil {
		return err
	}
	before, err := diffSide(af.opener(), fs.Arg(0), opts)
	if err != nil {
		return err
	}
	after, err := diffSide(af.opener(), fs.Arg(1), opts)
	if err != nil {
		return err
	}
	d := compare.Compare(before, after)
	var buf bytes.Buffer
	if err = report.Write(&buf, report.Diff{Diff: d, Before: before.Result, After: after.Result}, format); err != nil {
		return internal(err)
	}
	return out.write(stdout, buf.Bytes())
}
