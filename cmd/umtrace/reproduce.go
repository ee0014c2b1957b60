package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/opener"
	"github.com/umtrace/umtrace/internal/nsysbin"
	"github.com/umtrace/umtrace/reproducer"
)

func init() {
	register(command{
		name:    "reproduce",
		summary: "run a unified-memory scenario on the GPU (under nsys when found), or --validate all",
		usage:   "--scenario NAME [flags] | --scenario MULTI --ranks N [flags] | --validate [flags] | --list",
		about: "Needs an NVIDIA GPU (libcuda.so.1 and NVRTC are loaded at run time); without one every " +
			"scenario exits 3. Under nsys the " +
			"run is recorded with UM page-fault tracing and exported to SQLite in --out-dir. " +
			"--validate runs every single-process scenario under nsys, analyzes each trace and checks the verdict " +
			"(exit 1 on a mismatch). Multi-rank scenarios (MULTI: " + strings.Join(multiNames(), ", ") +
			") run N ranks as processes that meet every step, one trace per rank or one for the job, " +
			"and take --ranks N (default 2), --storm-rank R (default 1), --exchange nccl|host|auto, " +
			"--size, --steps, --device, --nsys, --no-nsys and --out-dir: " +
			"umtrace reproduce --scenario multi-process --help lists them.",
		examples: []string{
			"umtrace reproduce --list",
			"umtrace reproduce --scenario managed --size 64 --steps 8 --out-dir runs",
			"umtrace reproduce --scenario race --sanitizer racecheck",
			"umtrace reproduce --scenario multi-process --ranks 4 --storm-rank 2 --out-dir runs",
			"umtrace reproduce --validate --size 32 --steps 6 --out-dir runs",
		},
		run: cmdReproduce,
	})
}

// Defaults for --validate: small enough that the traces can be committed.
const (
	validateSizeMB = 64
	validateSteps  = 8
)

func cmdReproduce(stdout, stderr io.Writer, args []string) error {
	if isMultiReproduce(args) {
		return cmdReproduceMulti(stdout, stderr, args)
	}
	fs := newFlags("reproduce", stdout, stderr)
	scenario := fs.String("scenario", "", "scenario to run: "+strings.Join(reproducer.Names(), ", ")+
		"; multi-rank (with --ranks N): "+strings.Join(multiNames(), ", "))
	size := fs.Int("size", 0, fmt.Sprintf("buffer size in MB (default %d; %d with --validate; capped at a quarter of free GPU memory)", reproducer.DefaultSizeMB, validateSizeMB))
	steps := fs.Int("steps", 0, fmt.Sprintf("number of timed steps (default %d; %d with --validate)", reproducer.DefaultSteps, validateSteps))
	outDir := outDirFlag(fs, "umtrace-reproduce", "`DIR` for traces, step timings and sanitizer logs")
	nsysPath := fs.String("nsys", "", "nsys binary (default: nsys on PATH or a standard install location)")
	noNsys := fs.Bool("no-nsys", false, "run directly even when nsys is found")
	sanitizer := fs.String("sanitizer", "", "run the scenario under compute-sanitizer with this tool: racecheck or memcheck")
	validate := fs.Bool("validate", false, "run every scenario under nsys, analyze each trace and compare the verdict with the expected one")
	list := fs.Bool("list", false, "list the scenarios")
	device := fs.Int("device", 0, "CUDA device ordinal")
	child := fs.Bool("child", false, "internal: run the scenario in this process and save its step timings")
	_ = fs.MarkHidden("child")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected arguments %q", fs.Args())
	}
	dir, err := outDir()
	if err != nil {
		return err
	}
	out := &dir
	if *list {
		for _, s := range append(slices.Clone(reproducer.Scenarios), reproducer.OtherScenarios...) {
			fmt.Fprintf(stdout, "%-13s %-8s %s\n", s.Name, reproducer.ExpectedLabel(s.Storm), s.Description)
		}
		for _, s := range reproducer.MultiScenarios {
			fmt.Fprintf(stdout, "%-13s %-8s %s (--ranks N)\n", s.Name, reproducer.ExpectedLabel(s.Managed), s.Description)
		}
		return nil
	}
	if *size < 0 || *size > reproducer.MaxSizeMB {
		return usageErr("--size %d out of range 1..%d", *size, reproducer.MaxSizeMB)
	}
	if *steps < 0 || *steps > 10000 {
		return usageErr("--steps %d out of range 1..10000", *steps)
	}
	if *sanitizer != "" && *sanitizer != "racecheck" && *sanitizer != "memcheck" {
		return usageErr("--sanitizer must be racecheck or memcheck, not %q", *sanitizer)
	}
	if *validate {
		if *scenario != "" || *sanitizer != "" {
			return usageErr("--validate runs every scenario; drop --scenario and --sanitizer")
		}
		if *size == 0 {
			*size = validateSizeMB
		}
		if *steps == 0 {
			*steps = validateSteps
		}
		return reproduceValidate(stdout, stderr, *out, *nsysPath, *size, *steps, *device)
	}
	if *scenario == "" {
		return usageErr("--scenario is required (one of %s), or --validate or --list", strings.Join(reproducer.Names(), ", "))
	}
	if _, ok := reproducer.Lookup(*scenario); !ok {
		return usageErr("unknown scenario %q (one of %s)", *scenario, strings.Join(reproducer.Names(), ", "))
	}
	// No device is an environment problem (exit 3), found here before
	// nsys or compute-sanitizer start a child that would fail later.
	if err := reproducer.Available(); err != nil {
		return badInput(err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return internal(fmt.Errorf("output directory: %w", err))
	}
	if *child {
		// The child runs under nsys or compute-sanitizer and must leave
		// through libc's exit so that their atexit handlers flush.
		err := reproduceHere(stdout, *scenario, *size, *steps, *out, *device, true)
		if err != nil {
			fmt.Fprintf(stderr, "umtrace reproduce: %s\n", oneLine(err.Error()))
			reproducer.Exit(exitFail)
		}
		reproducer.Exit(exitOK)
	}
	if *sanitizer != "" {
		exe, err := os.Executable()
		if err != nil {
			return internal(err)
		}
		rep, err := reproducer.Sanitize("", *sanitizer, exe, childArgs(*scenario, *size, *steps, *out, *device), *out, *scenario, stderr)
		if err != nil {
			return failed(err)
		}
		fmt.Fprintf(stdout, "compute-sanitizer %s on %s: %s\ntext log: %s\nXML log:  %s\n", *sanitizer, *scenario, rep.Summary, rep.Text, rep.XML)
		return nil
	}
	nsys := ""
	if !*noNsys {
		p, err := nsysbin.Find(*nsysPath)
		if err != nil {
			return usageErr("%v", err)
		}
		nsys = p
	}
	if nsys == "" {
		return reproduceHere(stdout, *scenario, *size, *steps, *out, *device, false)
	}
	trace, res, err := recordScenario(stderr, nsys, *scenario, *size, *steps, *out, *device)
	if err != nil {
		return failed(err)
	}
	printResult(stdout, res)
	fmt.Fprintf(stdout, "trace: %s\n", trace)
	return nil
}

// multiNames lists the multi-rank scenarios.
func multiNames() []string {
	var names []string
	for _, s := range reproducer.MultiScenarios {
		names = append(names, s.Name)
	}
	return names
}

func childArgs(scenario string, size, steps int, out string, device int) []string {
	return []string{"reproduce", "--child", "--scenario", scenario, "--size", strconv.Itoa(size),
		"--steps", strconv.Itoa(steps), "--out-dir", out, "--device", strconv.Itoa(device)}
}

// reproduceHere runs the scenario in this process.
func reproduceHere(stdout io.Writer, scenario string, size, steps int, out string, device int, quiet bool) error {
	res, err := reproducer.Run(reproducer.Options{Scenario: scenario, SizeMB: size, Steps: steps, Device: device, Log: stdout})
	if err != nil {
		if errors.Is(err, reproducer.ErrNoGPU) {
			return badInput(err)
		}
		return failed(err)
	}
	if err := reproducer.WriteResult(out, res); err != nil {
		return internal(fmt.Errorf("save step timings: %w", err))
	}
	if !quiet {
		printResult(stdout, res)
	}
	return nil
}

func printResult(w io.Writer, r *reproducer.Result) {
	fmt.Fprintf(w, "%s: %d MB, %d steps on %s: step P50 %.2f ms (CUDA events); per step:", r.Scenario, r.SizeMB, r.Steps, r.Device.Name, r.P50())
	for _, ms := range r.StepMs {
		fmt.Fprintf(w, " %.2f", ms)
	}
	fmt.Fprintln(w)
}

// recordScenario re-executes this binary under nsys for one scenario and
// returns the exported SQLite trace and the child's timings.
func recordScenario(log io.Writer, nsys, scenario string, size, steps int, out string, device int) (string, *reproducer.Result, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return "", nil, err
	}
	_ = os.Remove(reproducer.StepsFile(absOut, scenario))
	trace, err := reproducer.Record(nsys, exe, childArgs(scenario, size, steps, absOut, device), absOut, scenario, log)
	if err != nil {
		return "", nil, err
	}
	res, err := reproducer.ReadResult(absOut, scenario)
	if err != nil {
		return "", nil, fmt.Errorf("scenario %s under nsys left no step timings (did it fail?): %w", scenario, err)
	}
	return trace, res, nil
}

func reproduceValidate(stdout, stderr io.Writer, out, nsysFlag string, size, steps, device int) error {
	// No device first: exit 3 like every scenario, whether nsys is there
	// or not.
	if err := reproducer.Available(); err != nil {
		return badInput(err)
	}
	nsys, err := nsysbin.Find(nsysFlag)
	if err != nil {
		return usageErr("%v", err)
	}
	if nsys == "" {
		return usageErr("--validate needs nsys: put it on PATH or pass --nsys")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return internal(fmt.Errorf("output directory: %w", err))
	}
	var rows []reproducer.Row
	for _, sc := range reproducer.Scenarios {
		row := reproducer.Row{Scenario: sc.Name, Expected: sc.Storm}
		trace, res, err := recordScenario(stderr, nsys, sc.Name, size, steps, out, device)
		if err != nil {
			row.Err = oneLine(err.Error())
			rows = append(rows, row)
			continue
		}
		row.Trace, row.StepP50 = trace, res.P50()
		row.Pass, row.Analysis, err = checkTrace(trace, sc.Storm)
		if err != nil {
			row.Err = oneLine(err.Error())
		}
		rows = append(rows, row)
	}
	reproducer.WriteTable(stdout, rows)
	var bad []string
	for _, r := range rows {
		if !r.Pass {
			bad = append(bad, r.Scenario)
		}
	}
	if len(bad) > 0 {
		return failed(fmt.Errorf("verdict mismatch or error for %s", strings.Join(bad, ", ")))
	}
	return nil
}

// checkTrace analyzes trace through the opener, as analyze does, and
// compares its verdict with the expected one.
func checkTrace(trace string, storm bool) (bool, *reproducer.Analysis, error) {
	t, err := opener.Opener{}.Analyze(trace, analyze.DefaultOptions())
	if err != nil {
		return false, nil, err
	}
	t.Close()
	a := reproducer.AnalysisOf(t.Result)
	return a.Storm == storm, a, nil
}
