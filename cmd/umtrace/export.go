package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/job"
	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys"
	"github.com/umtrace/umtrace/report"
	"github.com/umtrace/umtrace/report/export"
)

func init() {
	register(command{
		name:    "export",
		summary: "write traces' tables as Parquet or Arrow IPC, one Hive partition per trace (DIR/<table>/trace_id=<id>/)",
		usage:   exportUsage,
		run:     cmdExport,
	})
}

const exportUsage = "TRACE|DIR|GLOB... --out DIR [--format parquet|arrow] [--shard I/N]"

// exportOne exports one trace; errors are bad input unless writing failed.
func exportOne(path, id, out, format, sha string, opts analyze.Options) (outErr, inErr error) {
	r, err := nsys.Open(path, nsys.Options{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	res, err := analyze.Analyze(r, opts)
	if err != nil {
		if errors.Is(err, ingest.ErrNoCUDA) || errors.Is(err, nsys.ErrCorrupt) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	row := report.SummaryRowFromResult(id, filepath.Base(path), sha, Version, res)
	if err := export.Trace(r, out, id, format, row); err != nil {
		return err, nil
	}
	return nil, nil
}

func cmdExport(stdout, stderr io.Writer, args []string) error {
	fs := newFlags("export", stderr, exportUsage)
	format := fs.StringP("format", "f", "parquet", "file format: parquet or arrow (Arrow IPC file)")
	out := fs.StringP("out", "o", "", "dataset directory (required); see docs/export.md")
	shardFlag := fs.String("shard", "", "export only part I of N of the sorted inputs (index % N == I-1)")
	quiet := fs.BoolP("quiet", "q", false, "no progress lines on stderr")
	opts := analyze.DefaultOptions()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageErr("want at least one trace, directory or glob (usage: umtrace export %s)", exportUsage)
	}
	if *out == "" {
		return usageErr("--out DIR is required")
	}
	if !slices.Contains(export.Formats, *format) {
		return usageErr("unknown --format %q (want %s)", *format, strings.Join(export.Formats, " or "))
	}
	sh, err := parseShardFlag(*shardFlag)
	if err != nil {
		return err
	}
	all, missing := job.Expand(fs.Args())
	ids := job.TraceIDs(all, nil)
	paths := sh.Select(all)
	if sh.Index > 1 {
		missing = nil // reported by shard 1
	}
	var fails []string
	for _, m := range missing {
		fails = append(fails, m.Reason)
	}
	for i, p := range paths {
		sha, err := job.HashFile(p)
		var outErr, inErr error
		if err != nil {
			inErr = err
		} else {
			outErr, inErr = exportOne(p, ids[p], *out, *format, sha, opts)
		}
		if outErr != nil {
			return internal(outErr)
		}
		status := "exported as trace_id=" + ids[p]
		if inErr != nil {
			fails = append(fails, oneLine(inErr.Error()))
			status = "failed: " + oneLine(inErr.Error())
		}
		if !*quiet {
			fmt.Fprintf(stderr, "export: [%d/%d] %s: %s\n", i+1, len(paths), p, status)
		}
	}
	if len(fails) > 0 {
		return badInput(fmt.Errorf("%d of %d inputs failed: %s", len(fails), len(paths)+len(missing), strings.Join(fails, "; ")))
	}
	return nil
}
