package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/spf13/pflag"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/gate"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/batch"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/exitcode"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/opener"
	"github.com/umtrace/umtrace/internal/outfile"
	"github.com/umtrace/umtrace/report"
)

func init() {
	register(command{
		name:    "gate",
		summary: "CI gate: check traces against fault-rate, migration, storm and sync limits",
		usage:   "TRACE... [flags]",
		about: "Checks each trace against absolute limits and, with --baseline, against a baseline " +
			"trace; writes a markdown summary (stdout or -o) and optionally JUnit XML. " +
			"A check the trace cannot decide (e.g. page faults not collected) is unknown and " +
			"fails unless --allow-unknown. " +
			"Thresholds: flags, or --config FILE (docs/gate.md); flags override the file.",
		examples: []string{
			"umtrace gate build/trace.sqlite",
			"umtrace gate build/trace.sqlite --max-fault-rate 120 --max-storm-share 5%",
			"umtrace gate build/trace.sqlite --baseline ci/main.sqlite --junit gate.xml -o gate.md",
		},
		run: cmdGate,
	})
}

func cmdGate(stdout, stderr io.Writer, args []string) error {
	fs := newFlags("gate", stdout, stderr)
	config := fs.String("config", "", "threshold file: JSON object or key=value lines (docs/gate.md); flags override it")
	help := map[string]string{
		"max-fault-rate":             "max UM page faults (GPU+CPU) per second (default 120; off disables)",
		"max-fault-latency-per-page": "max GPU page-fault latency per faulting page, e.g. 45us (default 45us)",
		"max-storm-share":            "max storm time / trace duration in percent, 0..100: 5 and 5% are 5 % (default 5%)",
		"max-sync-p99":               "max P99 of host-blocking calls, e.g. 20ms (default off)",
		"max-regression":             "with --baseline: max growth of each metric over the baseline in percent: 10 and 10% are 10 % (default 10%; off disables)",
	}
	vals := map[string]*string{}
	for _, k := range gate.Keys {
		vals[k] = fs.String(k, "", help[k])
	}
	for old, k := range gate.OldKeys {
		vals[old] = fs.String(old, "", "")
		_ = fs.MarkDeprecated(old, "use --"+k)
	}
	allowUnknown := fs.Bool("allow-unknown", false, "pass checks the trace cannot decide (e.g. faults not collected) instead of failing")
	baseline := fs.String("baseline", "", "baseline trace: also fail when a metric grows more than --max-regression over it")
	out := outputFlags(fs, "summary", "md", "md", "text", "html", "json")
	summary := fs.String("summary", "", "")
	_ = fs.MarkDeprecated("summary", "use -o/--output")
	junit := fs.String("junit", "", "write JUnit XML to `FILE`")
	af := addAnalysisFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageErr("want at least one trace (usage: umtrace gate TRACE... [flags])")
	}
	if *summary != "" {
		if fs.Changed("output") {
			return usageErr("give -o (or its old name --summary), not both")
		}
		*out.path = *summary
	}
	inputs := slices.Concat(fs.Args(), []string{*baseline, *config})
	format, err := out.resolve(inputs...)
	if err != nil {
		return err
	}
	if *junit != "" {
		if err := outfile.CheckInputs(*junit, inputs...); err != nil {
			return usageErr("--junit %v; refusing to overwrite it", err)
		}
	}
	opts, err := af.options()
	if err != nil {
		return err
	}
	th, err := gateThresholds(fs, vals, *config, baseline)
	if err != nil {
		return err
	}
	if th.MaxFaultRate < 0 && th.MaxFaultNsPerPage < 0 && th.MaxStormShare < 0 && th.MaxSyncP99Ns < 0 &&
		(*baseline == "" || th.MaxRegression < 0) {
		return usageErr("every limit is off and there is no baseline check: nothing to gate")
	}

	paths := fs.Args()
	o, hasBase, err := gateOutcome(af.opener(), paths, *baseline, opts, th, *allowUnknown)
	if err != nil {
		return err
	}

	var md bytes.Buffer
	baseID := ""
	if hasBase {
		baseID = report.BaseID(*baseline)
	}
	rep := report.Gate{Outcome: &o, Thresholds: th, Baseline: baseID}
	if err = report.Write(&md, rep, format); err != nil {
		return internal(err)
	}
	if err := out.write(stdout, md.Bytes()); err != nil {
		return err
	}
	if *junit != "" {
		var x bytes.Buffer
		if err := report.Write(&x, rep, "junit"); err != nil {
			return internal(err)
		}
		if err := outfile.Write(*junit, stdout, x.Bytes()); err != nil {
			return internal(err)
		}
	}
	return gateVerdict(&o, len(paths))
}

// gateThresholds is gate.Defaults, then the --config file's, then the
// flags given; *baseline is the config's baseline when no flag gave one.
func gateThresholds(fs *pflag.FlagSet, vals map[string]*string, config string, baseline *string) (gate.Thresholds, error) {
	th := gate.Defaults
	if config != "" {
		data, err := os.ReadFile(config)
		if err != nil {
			return th, usageErr("--config: %v", err)
		}
		b, err := gate.ParseConfig(data, &th)
		if err != nil {
			return th, usageErr("--config %s: %v", config, err)
		}
		if *baseline == "" {
			*baseline = b
		}
	}
	for _, k := range append(slices.Sorted(maps.Keys(gate.OldKeys)), gate.Keys...) {
		if fs.Changed(k) {
			if err := th.Set(k, *vals[k]); err != nil {
				return th, usageErr("%v", err)
			}
		}
	}
	return th, nil
}

// gateOutcome analyzes the baseline, when there is one, and each trace,
// through the opener, and evaluates the checks: a trace that is bad input
// becomes an error of the outcome, any other error ends the run.
func gateOutcome(op opener.Opener, paths []string, baseline string, opts analyze.Options, th gate.Thresholds, allowUnknown bool) (o gate.Outcome, hasBase bool, err error) {
	var base *gate.Metrics
	if baseline != "" {
		t, err := op.Analyze(baseline, opts)
		if err != nil {
			return o, false, fmt.Errorf("baseline: %w", err)
		}
		t.Close()
		m := gate.MetricsOf(t.Result)
		base = &m
	}
	ids := batch.TraceIDs(paths, nil)
	o = gate.Outcome{AllowUnknown: allowUnknown}
	for _, p := range paths {
		t, err := op.Analyze(p, opts)
		if err != nil {
			if exitcode.Of(err) != exitBadInput {
				return o, false, err
			}
			o.Errors = append(o.Errors, gate.Check{Trace: ids[p], Name: "analyze", Detail: oneLine(err.Error())})
			continue
		}
		t.Close()
		o.Checks = append(o.Checks, gate.Evaluate(ids[p], gate.MetricsOf(t.Result), th, base)...)
	}
	return o, base != nil, nil
}

// gateVerdict is the error that gives gate its exit code: bad input when a
// trace could not be analyzed, a failed check when one blocks (an unknown
// one unless AllowUnknown).
func gateVerdict(o *gate.Outcome, traces int) error {
	if len(o.Errors) > 0 {
		return badInput(fmt.Errorf("%d of %d traces could not be analyzed: %s", len(o.Errors), traces, o.Errors[0].Detail))
	}
	if n := o.Blocking(); n > 0 {
		if u := o.Unknown(); u > 0 && !o.AllowUnknown {
			if f := o.Failed(); f > 0 {
				return failed(fmt.Errorf("%d of %d checks failed and %d unknown (--allow-unknown accepts unknown ones)", f, len(o.Checks), u))
			}
			return failed(fmt.Errorf("%d of %d checks unknown: the traces cannot decide them (--allow-unknown accepts them)", u, len(o.Checks)))
		}
		return failed(fmt.Errorf("%d of %d checks failed", n, len(o.Checks)))
	}
	return nil
}
