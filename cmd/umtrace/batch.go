package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/batch"
	"github.com/umtrace/umtrace/internal/outfile"
	"github.com/umtrace/umtrace/report"
)

func init() {
	register(command{
		name:    "batch",
		summary: "analyze many traces concurrently; per-trace reports and a summary by severity",
		usage:   "DIR|GLOB|TRACE... [flags]",
		about: "Directories are searched for *.sqlite, *.nsys-rep and *.qdrep (a report beside a " +
			".sqlite of the same name is skipped). Writes OUT-DIR/traces/<id>.{md,json} and " +
			"OUT-DIR/summary.{md,html,json,csv,parquet}, and the summary to stdout (or -o). Traces whose " +
			"content, umtrace version and options match a previous run are not analyzed again. " +
			"Exit 3 when any input failed (listed in the summary). --merge DIR... joins the output " +
			"directories of a finished --shard run into the summary one unsharded run writes (exit 3 " +
			"when a shard is missing, duplicated or of another run).",
		examples: []string{
			"umtrace batch /data/nsys-traces --out-dir triage --jobs 4",
			"umtrace batch 'runs/*.nsys-rep' --out-dir triage -o triage.csv",
			"umtrace batch /data/traces --out-dir t/shard-$SLURM_ARRAY_TASK_ID --shard $SLURM_ARRAY_TASK_ID/8",
			"umtrace batch --merge t/shard-* --out-dir t/merged",
		},
		run: cmdBatch,
	})
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// reportsFor returns batch's per-trace reports: markdown and JSON.
func reportsFor() []batch.Report {
	mk := func(ext, format string) batch.Report {
		return batch.Report{Ext: ext, Write: func(w io.Writer, res *analyze.Result) error { return report.Write(w, res, format) }}
	}
	return []batch.Report{mk(".md", "md"), mk(".json", "json")}
}

// inputs are a multi-trace command's inputs: the shard's part of the
// expanded arguments, every input's id, and the arguments that matched
// nothing (reported by shard 1 only).
type inputs struct {
	shard   batch.Shard
	paths   []string
	ids     map[string]string
	missing []batch.Failure
}

// expandInputs expands args (directories, globs, files) and selects the
// --shard value's part.
func expandInputs(args []string, shard string) (inputs, error) {
	sh, err := parseShardFlag(shard)
	if err != nil {
		return inputs{}, err
	}
	all, missing := batch.Expand(args)
	if sh.Index > 1 {
		missing = nil
	}
	return inputs{shard: sh, paths: sh.Select(all), ids: batch.TraceIDs(all, nil), missing: missing}, nil
}

// parseShardFlag parses --shard ("" selects everything).
func parseShardFlag(s string) (batch.Shard, error) {
	if s == "" {
		return batch.Shard{}, nil
	}
	sh, err := batch.ParseShard(s)
	if err != nil {
		return sh, usageErr("--shard: %v", err)
	}
	return sh, nil
}

// summaryBase names the summary files: "summary", or
// "summary-shard-I-of-N" for one shard, so shards sharing an output
// directory do not overwrite each other's summaries.
func summaryBase(sh batch.Shard) string {
	if sh.All() {
		return "summary"
	}
	return fmt.Sprintf("summary-shard-%d-of-%d", sh.Index, sh.Count)
}

// batchProgress reports each finished input on stderr: a bar on a
// terminal, a line each otherwise; nothing when quiet.
func batchProgress(stderr io.Writer, quiet bool) func(batch.Progress) {
	if quiet {
		return func(batch.Progress) {}
	}
	tty := isTerminal(stderr)
	return func(p batch.Progress) {
		if tty {
			const width = 30
			n := width * p.Done / max(p.Total, 1)
			fmt.Fprintf(stderr, "\r\033[K[%s%s] %d/%d %s (%s)", strings.Repeat("#", n), strings.Repeat(".", width-n), p.Done, p.Total, p.Trace, p.Status)
			if p.Done == p.Total {
				fmt.Fprintln(stderr)
			}
			return
		}
		line := fmt.Sprintf("batch: [%d/%d] %s: %s", p.Done, p.Total, p.Trace, p.Status)
		if p.Status == "failed" {
			line += ": " + p.Row.Reason
		} else {
			line += ", verdict " + p.Row.Verdict
		}
		fmt.Fprintln(stderr, line)
	}
}

func cmdBatch(stdout, stderr io.Writer, args []string) error {
	fs := newFlags("batch", stdout, stderr)
	out := outputFlags(fs, "summary", "md", "md", "text", "html", "json", "csv")
	outDir := outDirFlag(fs, "umtrace-batch", "output `DIR`: traces/<id>.{md,json} per trace, summary.{md,html,json,csv,parquet}")
	jobs := fs.IntP("jobs", "j", batch.DefaultJobs(), "traces analyzed at once (memory grows with it)")
	shardFlag := fs.String("shard", "", "analyze only part I of N of the sorted inputs (index % N == I-1), e.g. for a Slurm array")
	merge := fs.Bool("merge", false, "join the outputs of a finished sharded batch: the arguments are the shards' --out-dir DIRs; writes the summary an unsharded batch writes")
	force := fs.Bool("force", false, "re-analyze traces even when a previous run's results match their content hash and umtrace version")
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	af := addAnalysisFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *merge {
		return cmdBatchMerge(stdout, stderr, fs, out, outDir, *quiet) // batch_merge.go
	}
	if fs.NArg() == 0 {
		return usageErr("want at least one directory, glob or trace (usage: umtrace batch DIR|GLOB|TRACE...)")
	}
	if *jobs < 1 {
		return usageErr("--jobs %d is out of range: want an integer ≥ 1", *jobs)
	}
	dir, err := outDir()
	if err != nil {
		return err
	}
	format, err := out.resolve()
	if err != nil {
		return err
	}
	opts, err := af.options()
	if err != nil {
		return err
	}
	in, err := expandInputs(fs.Args(), *shardFlag)
	if err != nil {
		return err
	}
	sh, paths, ids, missing := in.shard, in.paths, in.ids, in.missing
	if err := outfile.CheckInputs(*out.path, paths...); err != nil {
		return usageErr("-o %v; refusing to overwrite it", err)
	}

	sum, err := batch.Run(paths, ids, batch.Options{
		Out: dir, Jobs: *jobs, Force: *force, Version: Version, Analyze: opts, Open: af.opener(),
		Reports: reportsFor(), Progress: batchProgress(stderr, *quiet),
	})
	if err != nil {
		return internal(err)
	}
	rows := sum.Rows
	for _, m := range missing {
		rows = append(rows, report.SummaryRow{Trace: m.Trace, File: filepath.Base(m.Path), Verdict: report.VerdictError, Reason: m.Reason, UmtraceVersion: Version})
	}
	report.SortSummaryRows(rows)

	base := filepath.Join(dir, summaryBase(sh))
	title := "umtrace batch summary"
	if !sh.All() {
		title += " (shard " + sh.String() + ")"
	}
	summaryOut, err := writeSummary(base, title, rows, format)
	if err != nil {
		return err
	}
	if !sh.All() {
		if err := writeShardManifest(base, in, opts, af.opener().Salvage); err != nil { // batch_merge.go
			return internal(err)
		}
	}
	nFailed := sum.Failed + len(missing)
	if !*quiet {
		fmt.Fprintf(stderr, "batch: %d analyzed, %d cached, %d failed; summary in %s.{md,html,json,csv,parquet}\n", sum.Analyzed, sum.Cached, nFailed, base)
	}
	if err := out.write(stdout, summaryOut); err != nil {
		return err
	}
	if nFailed > 0 {
		return badInput(fmt.Errorf("%d of %d inputs failed (listed in %s.md)", nFailed, len(paths)+len(missing), base))
	}
	return nil
}

// writeSummary writes the batch summary of rows (sorted) to
// base.{md,html,json,csv,parquet}, each file placed atomically, and
// returns it in format (md, html, json, csv or text) for standard output.
// A sharded batch and batch --merge (batch_merge.go) write it alike.
func writeSummary(base, title string, rows []report.SummaryRow, format string) ([]byte, error) {
	summary := report.Summary{Title: title, Rows: rows}
	files := map[string][]byte{}
	for _, f := range []string{"md", "html", "json", "csv", "parquet"} {
		var b bytes.Buffer
		if err := report.Write(&b, summary, f); err != nil {
			return nil, internal(fmt.Errorf("encode summary %s: %w", f, err))
		}
		files[f] = b.Bytes()
		if err := batch.WriteFileAtomic(base+"."+f, b.Bytes()); err != nil {
			return nil, internal(err)
		}
	}
	if format != "text" {
		return files[format], nil
	}
	var txt bytes.Buffer
	if err := report.Write(&txt, summary, "text"); err != nil {
		return nil, internal(err)
	}
	return txt.Bytes(), nil
}
