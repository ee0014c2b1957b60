package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/umtrace/umtrace/internal/outfile"
	"github.com/umtrace/umtrace/synth"
)

func init() {
	register(command{
		name:    "synth",
		summary: "write a synthetic nsys export with planted UM storms, decoys and a ground-truth JSON",
		usage:   "OUT.sqlite [flags] | -o OUT.sqlite [flags]",
		about: "A training-like run in the nsys 2025.3 schema with planted storm episodes and decoys, " +
			"plus OUT.truth.json with the ground truth; deterministic per seed (docs/synth.md).",
		examples: []string{
			"umtrace synth /tmp/small.sqlite",
			"umtrace synth /tmp/big.sqlite --rows 12000000 --episodes 3 --seed 7",
		},
		run: cmdSynth,
	})
}

func cmdSynth(stdout, stderr io.Writer, args []string) error {
	flags := newFlags("synth", stdout, stderr)
	d := synth.DefaultConfig
	// A job (--ranks N, N > 1) starts from the job's per-rank defaults
	// (one episode, no decoys), so that a short job is not refused for the
	// single trace's three episodes and decoys.
	if n, err := strconv.Atoi(preArg(args, "ranks")); err == nil && n > 1 {
		d = synth.DefaultJobConfig().Rank
	}
	// A --shape preset changes the defaults; flags given with it override
	// the preset's values.
	shape := preArg(args, "shape")
	if shape != "" {
		var err error
		if d, err = synth.WithShape(d, shape); err != nil {
			return usageErr("%v", err)
		}
	}
	cfg := d
	flags.String("shape", shape, fmt.Sprintf("preset trace shape: one of %v (docs/synth.md); other flags override it", synth.Shapes))
	sh := &cfg.Shape
	flags.IntVar(&sh.Processes, "processes", d.Shape.Processes, "processes (steps round-robin; correlation ids overlap)")
	flags.IntVar(&sh.Allocations, "allocations", d.Shape.Allocations, "managed allocations, sizes log-uniform in --alloc-min..--alloc-max (0: one 8 GiB pool)")
	flags.Int64Var(&sh.AllocMinBytes, "alloc-min", max(d.Shape.AllocMinBytes, 64<<10), "smallest allocation, bytes")
	flags.Int64Var(&sh.AllocMaxBytes, "alloc-max", max(d.Shape.AllocMaxBytes, 256<<20), "largest allocation, bytes")
	flags.BoolVar(&sh.RandomPages, "random-pages", d.Shape.RandomPages, "faults and migrations touch random pages of random allocations")
	flags.Int64Var(&sh.PageBytes, "page-bytes", max(d.Shape.PageBytes, 4096), "page size of random touches: 4096 or 65536")
	flags.BoolVar(&sh.NoAllocRecords, "no-alloc-records", d.Shape.NoAllocRecords, "no memory-usage rows (nsys without --cuda-memory-usage)")
	flags.BoolVar(&sh.Shuffle, "shuffle", d.Shape.Shuffle, "write rows in random order (windows of 65536 rows) instead of start order")
	flags.IntVar(&sh.KernelNames, "kernel-names", d.Shape.KernelNames, "distinct kernel names, 200+ byte C++ templates (0: the 8 of the catalog)")
	flags.IntVar(&sh.NVTXPerKernel, "nvtx-per-kernel", d.Shape.NVTXPerKernel, "NVTX ranges around each kernel launch")
	flags.IntVar(&sh.NVTXNames, "nvtx-names", max(d.Shape.NVTXNames, 1000), "distinct names of those NVTX ranges")
	flags.BoolVar(&sh.DeviceSync, "device-sync", d.Shape.DeviceSync, "end each step with cudaDeviceSynchronize (no SYNCHRONIZATION row)")
	flags.Uint64Var(&cfg.Seed, "seed", d.Seed, "random seed; the same seed and flags give the same trace")
	flags.IntVar(&cfg.Steps, "steps", d.Steps, "training steps (NVTX ranges train_step N)")
	rows := flags.Int64("rows", 0, "choose --steps to give about this many rows (overrides --steps)")
	flags.IntVar(&cfg.KernelsPerStep, "kernels-per-step", d.KernelsPerStep, "kernel launches per step")
	flags.IntVar(&cfg.Streams, "streams", d.Streams, "CUDA streams the kernels run on")
	flags.IntVar(&cfg.Threads, "threads", d.Threads, "host threads launching kernels")
	kernelUs := flags.Float64("kernel-us", float64(d.KernelNs)/1e3, "median kernel duration outside storms, in µs")
	flags.IntVar(&cfg.MemcpyEvery, "memcpy-every", d.MemcpyEvery, "a synchronous cudaMemcpy pair every N steps (0: none)")
	flags.IntVar(&cfg.FreeEvery, "free-every", d.FreeEvery, "a cudaFree every N steps (0: none)")
	flags.IntVar(&cfg.Episodes, "episodes", d.Episodes, "storm episodes to plant")
	flags.IntVar(&cfg.EpisodeSteps, "episode-steps", d.EpisodeSteps, "steps per storm episode")
	flags.Float64Var(&cfg.SlowdownMin, "slowdown-min", d.SlowdownMin, "least kernel slowdown in a storm")
	flags.Float64Var(&cfg.SlowdownMax, "slowdown-max", d.SlowdownMax, "greatest kernel slowdown in a storm")
	flags.IntVar(&cfg.FaultGroupsPerKernel, "fault-groups", d.FaultGroupsPerKernel, "GPU page-fault groups per kernel in a storm step")
	flags.IntVar(&cfg.CPUFaultsPerStep, "cpu-faults", d.CPUFaultsPerStep, "CPU page faults per storm step")
	decoys := flags.Int("decoys", -1, "decoy blocks of each kind (sets the three counts below)")
	flags.IntVar(&cfg.LongKernelDecoys, "long-kernel-decoys", d.LongKernelDecoys, "decoy blocks with long kernels and no UM activity")
	flags.IntVar(&cfg.PrefetchDecoys, "prefetch-decoys", d.PrefetchDecoys, "decoy blocks with cudaMemPrefetchAsync bursts")
	flags.IntVar(&cfg.SyncBurstDecoys, "sync-burst-decoys", d.SyncBurstDecoys, "decoy blocks with bursts of short syncs")
	flags.IntVar(&cfg.DecoySteps, "decoy-steps", d.DecoySteps, "steps per decoy block")
	flags.IntVar(&cfg.SyncBurstSize, "sync-burst-size", d.SyncBurstSize, "short syncs per sync-burst step")
	ranks := flags.Int("ranks", 1, "ranks of a multi-rank job: OUT is then a directory of rank files (rankN.sqlite) with job.truth.json; storms go on --storm-rank")
	stormRank := flags.Int("storm-rank", 3, "with --ranks: the rank that carries the storm episodes")
	oneFile := flags.Bool("one-file", false, "with --ranks: one trace OUT holding every rank's process (one GPU each, one clock), truth in OUT.truth.json")
	output := outputArg(flags, "trace")
	force := flags.Bool("force", false, "replace OUT and its .truth.json if they exist")
	quiet := flags.BoolP("quiet", "q", false, "print nothing on success")
	if err := parseFlags(flags, args); err != nil {
		return err
	}
	rest, out, err := output()
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageErr("want one output path, got %d arguments", flags.NArg())
	}
	if sh.Allocations == 0 {
		sh.AllocMinBytes, sh.AllocMaxBytes = 0, 0
	}
	if !sh.RandomPages {
		sh.PageBytes = 0
	}
	if sh.NVTXPerKernel == 0 {
		sh.NVTXNames = 0
	}
	cfg.KernelNs = int64(*kernelUs * 1e3)
	cfg.Overwrite = *force
	if *decoys >= 0 {
		cfg.LongKernelDecoys, cfg.PrefetchDecoys, cfg.SyncBurstDecoys = *decoys, *decoys, *decoys
	}
	if flags.Changed("rows") {
		if *rows < 1 {
			return usageErr("--rows must be positive, got %d", *rows)
		}
		if flags.Changed("steps") {
			return usageErr("give --rows or --steps, not both")
		}
		cfg = cfg.StepsForRows(*rows)
	}
	if err := cfg.Validate(); err != nil {
		return usageErr("%v", err)
	}
	if *ranks > 1 {
		jc := synth.DefaultJobConfig()
		jc.Ranks, jc.StormRank, jc.Rank = *ranks, min(*stormRank, *ranks-1), cfg
		return synthJob(stdout, out, jc, *oneFile, *force, *quiet)
	}
	return synthOne(stdout, out, cfg, *force, *quiet)
}

// synthJob writes the job jc: a directory of rank files at out, or with
// oneFile one trace holding every rank's process.
func synthJob(stdout io.Writer, out string, jc synth.JobConfig, oneFile, force, quiet bool) error {
	if oneFile {
		if err := synthPlace(out, force, stdout, func(tmp string) error {
			_, err := synth.GenerateJobFile(tmp, jc)
			return err
		}); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return usageErr("%v (pass --force to replace it)", err)
			}
			return internal(fmt.Errorf("generating job %s: %w", out, err))
		}
		if !quiet {
			fmt.Fprintf(stdout, "%s: %d ranks in one file (storm on rank %d), truth %s\n", out, jc.Ranks, jc.StormRank, synth.TruthPath(out))
		}
		return nil
	}
	if _, err := synth.GenerateJob(out, jc); err != nil {
		return internal(fmt.Errorf("generating job %s: %w", out, err))
	}
	if !quiet {
		fmt.Fprintf(stdout, "%s: %d ranks (storm on rank %d), truth %s\n", out, jc.Ranks, jc.StormRank, synth.JobTruthPath(out))
	}
	return nil
}

// synthOne writes one trace and its ground truth at out.
func synthOne(stdout io.Writer, out string, cfg synth.Config, force, quiet bool) error {
	start := time.Now()
	var truth *synth.Truth
	err := synthPlace(out, force, stdout, func(tmp string) error {
		var err error
		truth, err = synth.Generate(tmp, cfg)
		return err
	})
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return usageErr("%v (pass --force to replace it)", err)
		}
		return internal(fmt.Errorf("generating %s: %w", out, err))
	}
	took := time.Since(start)
	if quiet {
		return nil
	}
	var size int64
	if fi, err := os.Stat(out); err == nil {
		size = fi.Size()
	}
	fmt.Fprintf(stdout, "wrote %s: %d steps, %d rows, %.1f MB in %.2fs (%.0f rows/s)\n",
		out, cfg.Steps, truth.TotalRows, float64(size)/1e6, took.Seconds(), float64(truth.TotalRows)/took.Seconds())
	fmt.Fprintf(stdout, "ground truth: %s (verdict %s, %d episodes, %d decoys)\n",
		synth.TruthPath(out), truth.Verdict, len(truth.Episodes), len(truth.Decoys))
	return nil
}

// synthPlace runs gen on a path in a private scratch directory
// (outfile.TempDir: removed on SIGINT/SIGTERM) and puts the trace it
// wrote and its .truth.json in place through outfile: OUT may be a new
// name, a regular file (with force), a symlink (its target is replaced),
// a FIFO or a device. An existing regular OUT or truth file without
// force is an error wrapping fs.ErrExist.
func synthPlace(out string, force bool, stdout io.Writer, gen func(tmp string) error) error {
	if out == outfile.Stdout {
		return usageErr("synth writes OUT and OUT.truth.json: give OUT as a file name, not -")
	}
	if !force {
		for _, p := range []string{out, synth.TruthPath(out)} {
			if st, err := os.Stat(p); err == nil && !outfile.Through(p) && !st.IsDir() {
				return fmt.Errorf("%w: %s", fs.ErrExist, p)
			}
		}
	}
	if err := outfile.Check(out); err != nil {
		return usageErr("%v", err)
	}
	scratch, remove, err := outfile.TempDir(out)
	if err != nil {
		return err
	}
	defer remove()
	tmp := filepath.Join(scratch, filepath.Base(out)) // the truth names the trace by its base name
	if err := gen(tmp); err != nil {
		return err
	}
	if err := outfile.Place(tmp, out, stdout); err != nil {
		return err
	}
	return outfile.Place(synth.TruthPath(tmp), synth.TruthPath(out), stdout)
}

// preArg returns the value of --NAME in args ("" when absent), read
// before the other flags so that it can set their defaults.
func preArg(args []string, name string) string {
	for i, a := range args {
		switch {
		case a == "--":
			return ""
		case a == "--"+name && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "--"+name+"="):
			return strings.TrimPrefix(a, "--"+name+"=")
		}
	}
	return ""
}
