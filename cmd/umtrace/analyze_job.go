package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/multirank"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/batch"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/opener"
	"github.com/umtrace/umtrace/report"
)

// Job mode of analyze: several traces (or a directory or glob of them), or
// one trace holding several CUDA processes, are the ranks of one job
// (analyze/multirank, docs/method.md "Jobs").

// isJobArgs reports whether analyze's arguments name a job rather than one
// trace: several arguments, a directory, or a glob.
func isJobArgs(args []string) bool {
	if len(args) > 1 {
		return true
	}
	if len(args) == 1 {
		// An existing name is literal (run[1].sqlite), a glob otherwise.
		if st, err := os.Stat(args[0]); err == nil {
			return st.IsDir()
		}
		return strings.ContainsAny(args[0], "*?[")
	}
	return false
}

// analyzeJob analyzes args as one job and writes the job report. Each
// file goes through the opener (opener.Opener.AnalyzeFiles), as a single
// trace does, so a bad option exits with the same code either way.
// jobMode is what the user said of job mode: force a job, or never make one.
type jobMode struct{ force, never bool }

func analyzeJob(stdout io.Writer, args []string, o opener.Opener, opts analyze.Options, out *output, jm jobMode, failOnStorm bool) error {
	paths, fails := batch.Expand(args)
	if len(fails) > 0 {
		return badInput(fmt.Errorf("%s", fails[0].Reason))
	}
	if len(paths) == 0 {
		return usageErr("no traces to analyze")
	}
	format, err := out.resolve(paths...)
	if err != nil {
		return err
	}
	opts.SplitProcesses = true
	files, err := o.AnalyzeFiles(paths, opts)
	if err != nil {
		return err
	}
	switch {
	case jm.never:
		return writeSeparate(stdout, files, "--no-job was given", out, format, failOnStorm)
	case !jm.force && len(files) > 1:
		if ev := multirank.SameJob(files); !ev.OneJob {
			return writeSeparate(stdout, files, ev.Reason, out, format, failOnStorm)
		}
	}
	return writeJob(stdout, files, out, format, failOnStorm)
}

// writeSeparate writes the report of files that are not one job: each
// file's whole analysis, under a note saying why.
func writeSeparate(stdout io.Writer, files []*analyze.File, why string, out *output, format string, failOnStorm bool) error {
	results := make([]*analyze.Result, len(files))
	for i, f := range files {
		results[i] = f.Whole
	}
	s := report.NewSeparate(why, results)
	done := analyze.Phase(opener.PhasesOut(), "write")
	err := out.stream(stdout, func(w io.Writer) error { return report.Write(w, s, format) })
	done()
	if err != nil {
		return err
	}
	if failOnStorm && s.Verdict == analyze.VerdictStorm {
		var storming []string
		for _, r := range results {
			if r.Verdict == analyze.VerdictStorm {
				storming = append(storming, r.Trace.File)
			}
		}
		return failed(fmt.Errorf("storm in %s", strings.Join(storming, ", ")))
	}
	return nil
}

// writeJob analyzes files (analyzed with SplitProcesses) as one job and
// writes its report.
func writeJob(stdout io.Writer, files []*analyze.File, out *output, format string, failOnStorm bool) error {
	done := analyze.Phase(opener.PhasesOut(), "job")
	jr, err := multirank.Analyze(files)
	done()
	if err != nil {
		return badInput(err)
	}
	done = analyze.Phase(opener.PhasesOut(), "write")
	err = out.stream(stdout, func(w io.Writer) error { return report.Write(w, jr, format) })
	done()
	if err != nil {
		return err
	}
	if failOnStorm && jr.Verdict == analyze.VerdictStorm {
		return failed(fmt.Errorf("job of %d ranks: storm: %s", len(jr.Ranks), jr.Reason))
	}
	return nil
}
