package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/compare"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/job"
	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys"
)

func init() {
	register(command{
		name:    "diff",
		summary: "compare two traces (before/after a fix) with significance tests; markdown or JSON",
		usage:   "BEFORE.sqlite AFTER.sqlite [--format md|json] [-o FILE]",
		run:     cmdDiff,
	})
}

// diffSide analyzes one trace and collects its per-call sync samples.
func diffSide(path string, opts analyze.Options) (compare.Side, error) {
	r, err := nsys.Open(path, nsys.Options{})
	if err != nil {
		return compare.Side{}, badInput(err)
	}
	defer r.Close()
	res, err := analyze.Analyze(r, opts)
	if err != nil {
		if errors.Is(err, ingest.ErrNoCUDA) || errors.Is(err, nsys.ErrCorrupt) {
			return compare.Side{}, badInput(err)
		}
		return compare.Side{}, badInput(fmt.Errorf("%s: %w", path, err))
	}
	s, err := analyze.SyncSamples(r)
	if err != nil {
		return compare.Side{}, badInput(fmt.Errorf("%s: %w", path, err))
	}
	return compare.Side{Result: res, Sync: s}, nil
}

func cmdDiff(stdout, stderr io.Writer, args []string) error {
	const usage = "BEFORE.sqlite AFTER.sqlite [--format md|json] [-o FILE]"
	fs := newFlags("diff", stderr, usage)
	format := fs.StringP("format", "f", "md", "output format: md or json")
	out := fs.StringP("output", "o", "", "write to FILE instead of stdout")
	opts := analyze.DefaultOptions()
	fs.StringVar(&opts.StepRange, "step-range", "", "NVTX range name that marks one training step (default: detect)")
	setTh := thresholdFlags(fs, &opts.Thresholds)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	setTh()
	if fs.NArg() != 2 {
		return usageErr("want two traces, BEFORE and AFTER, got %d (usage: umtrace diff %s)", fs.NArg(), usage)
	}
	if *format != "md" && *format != "json" {
		return usageErr("unknown --format %q (want md or json)", *format)
	}
	before, err := diffSide(fs.Arg(0), opts)
	if err != nil {
		return err
	}
	after, err := diffSide(fs.Arg(1), opts)
	if err != nil {
		return err
	}
	d := compare.Compare(before, after)
	var buf bytes.Buffer
	if *format == "json" {
		err = d.WriteJSON(&buf)
	} else {
		err = d.WriteMarkdown(&buf)
	}
	if err != nil {
		return internal(err)
	}
	if *out != "" {
		if err := job.WriteFileAtomic(*out, buf.Bytes()); err != nil {
			return internal(err)
		}
		return nil
	}
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		return internal(err)
	}
	return nil
}
