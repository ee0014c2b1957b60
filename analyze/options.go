package analyze

import (
	"io"

	"github.com/umtrace/umtrace/ingest/sanitizer"
)

// Options control an analysis. The zero value is not useful; start from
// DefaultOptions.
type Options struct {
	// StepRange names the NVTX range that marks one training step. Empty
	// means detect it: the repeated range (names compared with digit runs
	// replaced by N) whose instances do not overlap, preferring names with
	// step/iter/batch in them, then the largest total time.
	StepRange string
	// Thresholds of the storm detector.
	Thresholds Thresholds
	// Sanitizer holds parsed compute-sanitizer / cuda-memcheck logs to put
	// next to the trace (Result.Sanitizer), their findings grouped by
	// sanitizer.ByDetail.
	Sanitizer []*sanitizer.Log
	// TopN bounds the rows of "top" tables (kernels, address ranges, fault
	// sites) in the result.
	TopN int
	// SplitProcesses: when the trace holds several CUDA processes, the
	// same pass also analyzes each of them on its own and reads the
	// collectives a job needs (File.Processes, File.Collectives).
	SplitProcesses bool
	// SyncSamples: keep every host-blocking call's duration (File.Sync),
	// for diff's significance tests. Not part of the analysis's figures,
	// so not of its options' identity (json "-": batch's cache key).
	SyncSamples bool `json:"-"`
	// Phases, when set, receives a line per analysis phase: how long it
	// took, when it ended, CPU time, heap and peak RSS so far (the CLI
	// sets it to stderr under UMTRACE_PHASES).
	Phases io.Writer `json:"-"`
	// chunk, when above 0, is the fewest items a goroutine of a split
	// loop takes instead of minChunk and stepChunk (TestManyCores).
	chunk int
}

// Thresholds are the storm detector's parameters. Every field can be set
// from the command line; DefaultThresholds holds the defaults.
type Thresholds struct {
	// MinStallNs: a host-blocking call shorter than this is never a stall.
	MinStallNs int64 `json:"min_stall_ns"`
	// MinOverlap: fraction of a call's duration that must overlap
	// fault-driven unified-memory activity (GPU page-fault groups and
	// page-fault/speculative/eviction migrations of the same process) for
	// the call to count as a UM stall.
	MinOverlap float64 `json:"min_overlap"`
	// Inflation: when the API has at least MinCalmCalls calm calls (calls
	// without UM overlap), a stall must also last Inflation times their
	// median.
	Inflation    float64 `json:"inflation"`
	MinCalmCalls int     `json:"min_calm_calls"`
	// MergeGapNs: stalls closer than this join one episode. 0 means auto:
	// twice the median step time when steps are known, else 50 ms.
	MergeGapNs int64 `json:"merge_gap_ns"`
	// An episode is a storm when it has at least MinEpisodeStalls stalls
	// and at least MinEpisodeBlockedNs of stalled host time. Episodes
	// below that are reported as isolated stalls (e.g. first-touch warmup).
	MinEpisodeStalls    int   `json:"min_episode_stalls"`
	MinEpisodeBlockedNs int64 `json:"min_episode_blocked_ns"`
}

// DefaultThresholds are the storm detector's defaults (docs/method.md explains each).
var DefaultThresholds = Thresholds{
	MinStallNs:          500_000,
	MinOverlap:          0.3,
	Inflation:           1.8,
	MinCalmCalls:        3,
	MergeGapNs:          0,
	MinEpisodeStalls:    2,
	MinEpisodeBlockedNs: 5_000_000,
}

// DefaultMergeGapNs is the merge gap used when MergeGapNs is 0 and the
// trace has no steps.
const DefaultMergeGapNs = 50_000_000

// DefaultOptions returns the default options.
func DefaultOptions() Options {
	return Options{Thresholds: DefaultThresholds, TopN: 10}
}
