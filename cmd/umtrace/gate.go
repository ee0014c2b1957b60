package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/gate"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/job"
	"github.com/umtrace/umtrace/report"
)

func init() {
	register(command{
		name:    "gate",
		summary: "CI gate: check traces against UM fault-rate, migration-latency, storm and sync thresholds; markdown and JUnit",
		usage:   gateUsage,
		run:     cmdGate,
	})
}

const gateUsage = "TRACE... [--config FILE] [--max-fault-rate N] [--max-migration-latency-per-page D] [--max-storm-share F] [--max-sync-p99 D] [--baseline TRACE --max-regression P] [--summary FILE] [--junit FILE]"

func cmdGate(stdout, stderr io.Writer, args []string) error {
	fs := newFlags("gate", stderr, gateUsage)
	config := fs.String("config", "", "threshold file: JSON object or key=value lines (docs/gate.md); flags override it")
	help := map[string]string{
		"max-fault-rate":                 "max UM page faults (GPU+CPU) per second (default 120; off disables)",
		"max-migration-latency-per-page": "max fault-driven migration time per 4 KiB page, e.g. 85us (default 85us)",
		"max-storm-share":                "max storm time / trace duration, e.g. 5% or 0.05 (default 5%)",
		"max-sync-p99":                   "max P99 of host-blocking calls, e.g. 20ms (default off)",
		"max-regression":                 "with --baseline: max growth of each metric over the baseline (default 10%)",
	}
	vals := map[string]*string{}
	for _, k := range gate.Keys {
		vals[k] = fs.String(k, "", help[k])
	}
	baseline := fs.String("baseline", "", "baseline trace: also fail when a metric grows more than --max-regression over it")
	summary := fs.String("summary", "", "write the markdown summary to FILE instead of stdout")
	junit := fs.String("junit", "", "write JUnit XML to FILE")
	opts := analyze.DefaultOptions()
	fs.StringVar(&opts.StepRange, "step-range", "", "NVTX range name that marks one training step (default: detect)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageErr("want at least one trace (usage: umtrace gate %s)", gateUsage)
	}
	th := gate.Defaults
	if *config != "" {
		data, err := os.ReadFile(*config)
		if err != nil {
			return usageErr("--config: %v", err)
		}
		b, err := gate.ParseConfig(data, &th)
		if err != nil {
			return usageErr("--config %s: %v", *config, err)
		}
		if *baseline == "" {
			*baseline = b
		}
	}
	for _, k := range gate.Keys {
		if fs.Changed(k) {
			if err := th.Set(k, *vals[k]); err != nil {
				return usageErr("--%v", err)
			}
		}
	}

	var base *gate.Metrics
	if *baseline != "" {
		res, err := analyzeFile(*baseline, opts)
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		m := gate.MetricsOf(res)
		base = &m
	}
	paths := fs.Args()
	ids := job.TraceIDs(paths, nil)
	var o gate.Outcome
	for _, p := range paths {
		res, err := analyzeFile(p, opts)
		if err != nil {
			var ee *exitError
			if errors.As(err, &ee) && ee.code != exitBadInput {
				return err
			}
			o.Errors = append(o.Errors, gate.Check{Trace: ids[p], Name: "analyze", Detail: oneLine(err.Error())})
			continue
		}
		o.Checks = append(o.Checks, gate.Evaluate(ids[p], gate.MetricsOf(res), th, base)...)
	}

	var md bytes.Buffer
	if err := o.WriteMarkdown(&md); err != nil {
		return internal(err)
	}
	fmt.Fprintf(&md, "Thresholds: %s", gate.FormatThresholds(th))
	if base != nil {
		fmt.Fprintf(&md, "; baseline %s", report.BaseID(*baseline))
	}
	md.WriteString(".\n")
	if *summary != "" {
		if err := job.WriteFileAtomic(*summary, md.Bytes()); err != nil {
			return internal(err)
		}
	} else if _, err := stdout.Write(md.Bytes()); err != nil {
		return internal(err)
	}
	if *junit != "" {
		var x bytes.Buffer
		if err := o.WriteJUnit(&x); err != nil {
			return internal(err)
		}
		if err := job.WriteFileAtomic(*junit, x.Bytes()); err != nil {
			return internal(err)
		}
	}
	if len(o.Errors) > 0 {
		return badInput(fmt.Errorf("%d of %d traces could not be analyzed: %s", len(o.Errors), len(paths), o.Errors[0].Detail))
	}
	if n := o.Failed(); n > 0 {
		return failed(fmt.Errorf("%d of %d checks failed", n, len(o.Checks)))
	}
	return nil
}
