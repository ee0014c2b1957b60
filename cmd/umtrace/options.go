package main

import (
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/opener"
	"github.com/umtrace/umtrace/ingest/nsys"
)

// analysisFlags are the flags of every command that analyzes traces: the
// step range, the storm detector's thresholds, the top-N bound and where
// nsys is (for .nsys-rep inputs).
type analysisFlags struct {
	opts       analyze.Options
	nsys       *string
	salvage    *bool
	minStall   *time.Duration
	mergeGap   *time.Duration
	minBlocked *time.Duration
}

func addAnalysisFlags(fs *pflag.FlagSet) *analysisFlags {
	a := &analysisFlags{opts: analyze.DefaultOptions()}
	th, d := &a.opts.Thresholds, analyze.DefaultThresholds
	fs.StringVar(&a.opts.StepRange, "step-range", "", "NVTX range name that marks one training step (default: detect); "+
		"a name the trace lacks is an error")
	fs.IntVar(&a.opts.TopN, "top", a.opts.TopN, "rows in top-N tables; ≥ 1")
	a.minStall = fs.Duration("min-stall", time.Duration(d.MinStallNs), "shortest host-blocking call that can be a UM stall; ≥ 0")
	fs.Float64Var(&th.MinOverlap, "min-overlap", d.MinOverlap, "fraction of a call that must overlap fault-driven UM activity; 0..1")
	fs.Float64Var(&th.Inflation, "inflation", d.Inflation, "a stall must last this many times its API's calm median; ≥ 0")
	fs.IntVar(&th.MinCalmCalls, "min-calm-calls", d.MinCalmCalls, "calm calls needed before an API's median is used as baseline; ≥ 1")
	a.mergeGap = fs.Duration("merge-gap", time.Duration(d.MergeGapNs), "stalls closer than this form one episode; ≥ 0, 0: 2× median step, or 50ms")
	fs.IntVar(&th.MinEpisodeStalls, "min-episode-stalls", d.MinEpisodeStalls, "stalls an episode needs to be a storm; ≥ 1")
	a.minBlocked = fs.Duration("min-episode-blocked", time.Duration(d.MinEpisodeBlockedNs), "stalled time an episode needs to be a storm; ≥ 0")
	a.nsys = fs.String("nsys", "", "nsys binary for .nsys-rep/.qdrep inputs (default: $UMTRACE_NSYS, PATH, standard installs)")
	a.salvage = fs.Bool("salvage", false, "read a damaged trace around the damage umtrace detects (results marked partial) "+
		"instead of failing with exit 3")
	return a
}

// options checks the values after parsing (usage errors name the flag and
// its allowed range) and returns the analysis options.
func (a *analysisFlags) options() (analyze.Options, error) {
	th := &a.opts.Thresholds
	th.MinStallNs, th.MergeGapNs, th.MinEpisodeBlockedNs = int64(*a.minStall), int64(*a.mergeGap), int64(*a.minBlocked)
	checks := []struct {
		ok   bool
		flag string
		val  any
		want string
	}{
		{a.opts.TopN >= 1, "top", a.opts.TopN, "an integer ≥ 1"},
		{*a.minStall >= 0, "min-stall", *a.minStall, "a duration ≥ 0, e.g. 500us"},
		{th.MinOverlap >= 0 && th.MinOverlap <= 1, "min-overlap", th.MinOverlap, "a fraction in 0..1"},
		{th.Inflation >= 0, "inflation", th.Inflation, "a factor ≥ 0"},
		{th.MinCalmCalls >= 1, "min-calm-calls", th.MinCalmCalls, "an integer ≥ 1"},
		{*a.mergeGap >= 0, "merge-gap", *a.mergeGap, "a duration ≥ 0 (0: automatic)"},
		{th.MinEpisodeStalls >= 1, "min-episode-stalls", th.MinEpisodeStalls, "an integer ≥ 1"},
		{*a.minBlocked >= 0, "min-episode-blocked", *a.minBlocked, "a duration ≥ 0, e.g. 5ms"},
	}
	for _, c := range checks {
		if !c.ok {
			return a.opts, usageErr("--%s %v is out of range: want %s", c.flag, c.val, c.want)
		}
	}
	return a.opts, nil
}

// opener opens and analyzes traces with the flags' nsys setting.
func (a *analysisFlags) opener() opener.Opener {
	return opener.Opener{Nsys: *a.nsys, Salvage: *a.salvage, Read: readPathEnv()}
}

// readPathEnv is UMTRACE_READER, the reader's read path (nsys.ReadPath:
// "driver" reads through SQLite only, "pages" through the page reader with
// no fallback), read here once so that the reader reads no environment.
// nsys.Open rejects a value it does not know.
func readPathEnv() nsys.ReadPath { return nsys.ReadPath(os.Getenv("UMTRACE_READER")) }
