package main

import (
	"fmt"
	"io"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/opener"
	"github.com/umtrace/umtrace/ingest/sanitizer"
	"github.com/umtrace/umtrace/report"
)

func init() {
	register(command{
		name:    "analyze",
		summary: "analyze traces (one, or a job of several) for sync storms: text, markdown, JSON or HTML",
		usage:   "TRACE [flags]",
		about: "TRACE is an nsys SQLite export, or an .nsys-rep/.qdrep report (exported once with nsys " +
			"into a cache). The report has the verdict, storm episodes with evidence, sync latency " +
			"tables, unified-memory summary, per-step table and mitigations. Several traces (or a directory " +
			"or glob) are analyzed as the ranks of one job only when they are one: their recordings overlap " +
			"in time and each names a distinct rank, or each runs collectives; otherwise each is analyzed " +
			"alone with a note saying why (--job forces a job, --no-job never makes one). A file holding " +
			"several CUDA processes is one recording, analyzed as a job of its processes.",
		examples: []string{
			"umtrace analyze run.sqlite                      # terminal summary",
			"umtrace analyze run.sqlite -o incident.md       # markdown report (format from the extension)",
			"umtrace analyze run.nsys-rep -f json            # needs nsys to export the report once",
			"umtrace analyze run.sqlite --step-range train_step --merge-gap 200ms --fail-on-storm",
			"umtrace analyze run.sqlite --sanitizer memcheck.txt -o report.html",
			"umtrace analyze rank0.sqlite rank1.sqlite          # one job when the files say so",
			"umtrace analyze runs/ --no-job -o runs.md          # each trace alone",
		},
		run: cmdAnalyze,
	})
}

func cmdAnalyze(stdout, stderr io.Writer, args []string) error {
	fs := newFlags("analyze", stdout, stderr)
	out := outputFlags(fs, "report", "text", report.Formats...)
	failOnStorm := fs.Bool("fail-on-storm", false, "exit 1 when the verdict is storm")
	asJob := fs.Bool("job", false, "analyze several traces as the ranks of one job even without evidence that they are")
	noJob := fs.Bool("no-job", false, "analyze each trace (and each file of several processes) alone, never as a job")
	sanLogs := fs.StringArray("sanitizer", nil, "compute-sanitizer/cuda-memcheck log (text or XML) to report beside the trace; repeatable")
	af := addAnalysisFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageErr("want a trace (usage: umtrace analyze TRACE, or TRACE... for a job of many ranks)")
	}
	if *asJob && *noJob {
		return usageErr("--job and --no-job contradict each other")
	}
	jm := jobMode{force: *asJob, never: *noJob}
	if isJobArgs(fs.Args()) {
		opts, err := af.options()
		if err != nil {
			return err
		}
		return analyzeJob(stdout, fs.Args(), af.opener(), opts, out, jm, *failOnStorm)
	}
	path := fs.Arg(0)
	format, err := out.resolve(path)
	if err != nil {
		return err
	}
	opts, err := af.options()
	if err != nil {
		return err
	}
	for _, p := range *sanLogs {
		l, err := sanitizer.ParseFile(p)
		if err != nil {
			return badInput(err)
		}
		for _, w := range l.Warnings {
			fmt.Fprintln(stderr, w)
		}
		opts.Sanitizer = append(opts.Sanitizer, l)
	}
	// A file of several CUDA processes is a job: the same pass analyzes
	// each process too.
	opts.SplitProcesses = true
	t, err := af.opener().Analyze(path, opts)
	if err != nil {
		return err
	}
	t.Close()
	res := t.Result
	if len(res.Processes) > 1 && !jm.never {
		// One file, several CUDA processes: the ranks of a job, from
		// the same read.
		return writeJob(stdout, []*analyze.File{t.File}, out, format, *failOnStorm)
	}
	gen := func(w io.Writer) error { return report.Write(w, res, format) }
	if format == "text" {
		// The closing hint repeats the path as given, so it runs.
		gen = func(w io.Writer) error { return report.Render(w, report.TerminalDocFor(res, path), "text") }
	}
	done := analyze.Phase(opener.PhasesOut(), "write")
	err = out.stream(stdout, gen)
	done()
	if err != nil {
		return err
	}
	if *failOnStorm && res.Verdict == analyze.VerdictStorm {
		return failed(fmt.Errorf("%s: storm: %s", path, res.Reason))
	}
	return nil
}
