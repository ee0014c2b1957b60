package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/opener"
	"github.com/umtrace/umtrace/report"
	"github.com/umtrace/umtrace/report/export"
)

func init() {
	register(command{
		name:    "export",
		summary: "write traces' tables as Parquet or Arrow IPC, one Hive partition per trace",
		usage:   "TRACE|DIR|GLOB... --out-dir DIR [flags]",
		about: "Every Arrow table (api, kernel, memcpy, memset, sync, gpu_fault, cpu_fault, nvtx, " +
			"mem_usage, thread, gpu) and a per-trace summary, as DIR/<table>/trace_id=<id>/part-0.parquet " +
			"(or .arrow). Schema: docs/export.md.",
		examples: []string{
			"umtrace export runs/*.sqlite --out-dir dataset",
			"umtrace export runs --out-dir dataset -f arrow --shard 1/4",
		},
		run: cmdExport,
	})
}

// exportOne exports one trace; errors are bad input unless writing failed.
func exportOne(o opener.Opener, path, id, out, format, sha string, opts analyze.Options) (outErr, inErr error) {
	t, err := o.Analyze(path, opts)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	row := report.SummaryRowFromResult(id, filepath.Base(path), sha, Version, t.Result)
	if err := export.Trace(t.Reader, out, id, format, row); err != nil {
		var re *export.ReadError
		if errors.As(err, &re) {
			// A table analysis does not read can be the damaged one.
			return nil, badInput(err)
		}
		return err, nil
	}
	return nil, nil
}

func cmdExport(stdout, stderr io.Writer, args []string) error {
	fs := newFlags("export", stdout, stderr)
	format := fs.StringP("format", "f", "parquet", "file format: parquet or arrow (Arrow IPC file)")
	outDir := outDirFlag(fs, "", "dataset `DIR` (required); see docs/export.md")
	shardFlag := fs.String("shard", "", "export only part I of N of the sorted inputs (index % N == I-1)")
	quiet := fs.BoolP("quiet", "q", false, "no progress lines on stderr")
	af := addAnalysisFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageErr("want at least one trace, directory or glob (usage: umtrace export TRACE|DIR|GLOB... --out-dir DIR)")
	}
	out, err := outDir()
	if err != nil {
		return err
	}
	if out == "" {
		return usageErr("--out-dir DIR is required")
	}
	opts, err := af.options()
	if err != nil {
		return err
	}
	if !slices.Contains(export.Formats, *format) {
		return usageErr("unknown --format %q (want %s)", *format, strings.Join(export.Formats, " or "))
	}
	in, err := expandInputs(fs.Args(), *shardFlag)
	if err != nil {
		return err
	}
	paths, ids, missing := in.paths, in.ids, in.missing
	var fails []string
	for _, m := range missing {
		fails = append(fails, m.Reason)
	}
	for i, p := range paths {
		sha, err := opener.HashFile(p)
		var outErr, inErr error
		if err != nil {
			inErr = err
		} else {
			outErr, inErr = exportOne(af.opener(), p, ids[p], out, *format, sha, opts)
		}
		if outErr != nil {
			return internal(outErr)
		}
		status := "exported as trace_id=" + ids[p]
		if inErr != nil {
			fails = append(fails, oneLine(inErr.Error()))
			status = "failed: " + strings.TrimPrefix(oneLine(inErr.Error()), p+": ")
		}
		if !*quiet || inErr != nil {
			fmt.Fprintf(stderr, "export: [%d/%d] %s: %s\n", i+1, len(paths), p, status)
		}
	}
	for _, m := range missing {
		fmt.Fprintf(stderr, "export: %s: failed: %s\n", m.Path, m.Reason)
	}
	if len(fails) > 0 {
		// Each failure has had its own line; one line per input, not
		// all of them on one.
		return badInput(fmt.Errorf("%d of %d inputs failed (listed above)", len(fails), len(paths)+len(missing)))
	}
	return nil
}
