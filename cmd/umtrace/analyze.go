package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys"
	"github.com/umtrace/umtrace/ingest/sanitizer"
	"github.com/umtrace/umtrace/report"
)

func init() {
	register(command{name: "analyze", summary: "analyze one nsys SQLite export and report sync storms", usage: "TRACE.sqlite [flags]", run: cmdAnalyze})
}

// thresholdFlags registers the storm detector's thresholds on fs.
func thresholdFlags(fs *pflag.FlagSet, th *analyze.Thresholds) func() {
	d := analyze.DefaultThresholds
	minStall := fs.Duration("min-stall", time.Duration(d.MinStallNs), "shortest host-blocking call that can be a UM stall")
	fs.Float64Var(&th.MinOverlap, "min-overlap", d.MinOverlap, "fraction of a call that must overlap fault-driven UM activity")
	fs.Float64Var(&th.Inflation, "inflation", d.Inflation, "a stall must last this many times its API's calm median")
	fs.IntVar(&th.MinCalmCalls, "min-calm-calls", d.MinCalmCalls, "calm calls needed before an API's median is used as baseline")
	mergeGap := fs.Duration("merge-gap", time.Duration(d.MergeGapNs), "stalls closer than this form one episode (0: 2× median step, or 50ms)")
	fs.IntVar(&th.MinEpisodeStalls, "min-episode-stalls", d.MinEpisodeStalls, "stalls an episode needs to be a storm")
	minBlocked := fs.Duration("min-episode-blocked", time.Duration(d.MinEpisodeBlockedNs), "stalled time an episode needs to be a storm")
	return func() {
		th.MinStallNs = int64(*minStall)
		th.MergeGapNs = int64(*mergeGap)
		th.MinEpisodeBlockedNs = int64(*minBlocked)
	}
}

func cmdAnalyze(stdout, stderr io.Writer, args []string) error {
	fs := newFlags("analyze", stderr, "TRACE.sqlite [flags]")
	format := fs.StringP("format", "f", "text", "output format: text, md, json or html")
	out := fs.StringP("output", "o", "", "write the report to FILE instead of stdout")
	opts := analyze.DefaultOptions()
	fs.StringVar(&opts.StepRange, "step-range", "", "NVTX range name that marks one training step (default: detect)")
	fs.IntVar(&opts.TopN, "top", opts.TopN, "rows in top-N tables")
	failOnStorm := fs.Bool("fail-on-storm", false, "exit 1 when the verdict is storm")
	sanLogs := fs.StringArray("sanitizer", nil, "compute-sanitizer/cuda-memcheck log (text or XML) to report beside the trace; repeatable")
	setTh := thresholdFlags(fs, &opts.Thresholds)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	setTh()
	if fs.NArg() != 1 {
		return usageErr("want exactly one trace, got %d (usage: umtrace analyze TRACE.sqlite)", fs.NArg())
	}
	if !slices.Contains(report.Formats, *format) {
		return usageErr("unknown --format %q (want %s)", *format, strings.Join(report.Formats, ", "))
	}
	path := fs.Arg(0)
	if *out != "" && sameFile(*out, path) {
		return usageErr("--output %s is the input trace; refusing to overwrite it", *out)
	}
	for _, p := range *sanLogs {
		l, err := sanitizer.ParseFile(p)
		if err != nil {
			return badInput(err)
		}
		for _, w := range l.Warnings {
			fmt.Fprintln(stderr, w)
		}
		opts.Sanitizer = append(opts.Sanitizer, sanitizerInput(l))
	}
	res, err := analyzeFile(path, opts)
	if err != nil {
		return err
	}
	if err := writeReport(stdout, *out, res, *format); err != nil {
		return err
	}
	if *failOnStorm && res.Verdict == analyze.VerdictStorm {
		return failed(fmt.Errorf("%s: storm: %s", path, res.Reason))
	}
	return nil
}

// analyzeFile opens and analyzes one trace, mapping bad input to exit 3.
func analyzeFile(path string, opts analyze.Options) (*analyze.Result, error) {
	r, err := nsys.Open(path, nsys.Options{})
	if err != nil {
		return nil, badInput(err)
	}
	defer r.Close()
	res, err := analyze.Analyze(r, opts)
	if err != nil {
		if errors.Is(err, ingest.ErrNoCUDA) || errors.Is(err, nsys.ErrCorrupt) {
			return nil, badInput(err)
		}
		return nil, badInput(fmt.Errorf("%s: %w", path, err))
	}
	return res, nil
}

// writeReport renders res to the file out (atomically) or to stdout.
func writeReport(stdout io.Writer, out string, res *analyze.Result, format string) error {
	if out == "" {
		if err := report.Generate(stdout, res, format); err != nil {
			return internal(err)
		}
		return nil
	}
	if st, err := os.Stat(out); err == nil && !st.Mode().IsRegular() {
		// A device or pipe (-o /dev/null, -o /dev/stdout): write to it;
		// renaming a temporary file over it would replace it.
		f, err := os.OpenFile(out, os.O_WRONLY, 0)
		if err != nil {
			return internal(fmt.Errorf("writing %s: %w", out, err))
		}
		if err := report.Generate(f, res, format); err != nil {
			f.Close()
			return internal(fmt.Errorf("writing %s: %w", out, err))
		}
		if err := f.Close(); err != nil {
			return internal(fmt.Errorf("writing %s: %w", out, err))
		}
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".umtrace-*")
	if err != nil {
		return internal(fmt.Errorf("writing %s: %w", out, err))
	}
	defer os.Remove(tmp.Name())
	if err := report.Generate(tmp, res, format); err != nil {
		tmp.Close()
		return internal(fmt.Errorf("writing %s: %w", out, err))
	}
	if err := tmp.Close(); err != nil {
		return internal(fmt.Errorf("writing %s: %w", out, err))
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return internal(fmt.Errorf("writing %s: %w", out, err))
	}
	return nil
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// sanitizerInput is what analyze needs of a parsed sanitizer log.
func sanitizerInput(l *sanitizer.Log) analyze.SanitizerInput {
	in := analyze.SanitizerInput{File: filepath.Base(l.Path), Tool: l.Tool, ToolErrors: -1, Warnings: len(l.Warnings),
		Findings: make([]analyze.SanitizerFinding, len(l.Findings))}
	if l.Summary.HasErrors {
		in.ToolErrors = l.Summary.Errors
	}
	for i := range l.Findings {
		f := &l.Findings[i]
		in.Findings[i] = analyze.SanitizerFinding{Tool: f.Tool, Severity: f.Severity, Kind: f.Kind, Kernel: f.Kernel,
			KernelBase: f.KernelBase, Location: f.Location(), Detail: f.Detail}
	}
	return in
}
