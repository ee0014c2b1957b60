package synth

import (
	"path/filepath"
	"strings"
)

// Truth is the ground truth of a generated trace, written beside it as
// JSON (see TruthPath). All times are in the trace clock (ns, the same
// clock as the export's start/end columns).
type Truth struct {
	// Generator names the producer and format version of this file.
	Generator string `json:"generator"`
	Seed      uint64 `json:"seed"`
	Config    Config `json:"config"`
	// Verdict is what an analyzer should conclude: "storm" when at least
	// one episode was planted, else "no_storm".
	Verdict string `json:"verdict"`
	// TraceStartNs and TraceEndNs bound every event (ANALYSIS_DETAILS).
	TraceStartNs int64 `json:"trace_start_ns"`
	TraceEndNs   int64 `json:"trace_end_ns"`
	// MedianStepNs is the median duration of a normal step.
	MedianStepNs int64 `json:"median_step_ns"`
	// Episodes are the planted storms, in time order.
	Episodes []Span `json:"episodes"`
	// Decoys are planted look-alikes that must not be flagged, in time order.
	Decoys []Span `json:"decoys"`
	// Rows counts the rows of every table in the file, by table name.
	Rows map[string]int64 `json:"rows"`
	// TotalRows is the sum of Rows.
	TotalRows int64 `json:"total_rows"`
}

// Span is one planted block of consecutive steps.
type Span struct {
	// Kind is "storm" for an episode, or the decoy kind: "long_kernel",
	// "prefetch_burst" or "sync_burst".
	Kind string `json:"kind"`
	// FirstStep and LastStep are step indexes (the N of "train_step N").
	FirstStep int `json:"first_step"`
	LastStep  int `json:"last_step"`
	// StartNs is the start of FirstStep's NVTX range, EndNs the end of
	// LastStep's.
	StartNs int64 `json:"start_ns"`
	EndNs   int64 `json:"end_ns"`
	// StartWindowNs and EndWindowNs are the edges allowed to a detector
	// that is "within one step": from the start of step FirstStep-1 to the
	// start of FirstStep+1, and from the end of LastStep-1 to the end of
	// LastStep+1.
	StartWindowNs [2]int64 `json:"start_window_ns"`
	EndWindowNs   [2]int64 `json:"end_window_ns"`
	// Slowdown is the kernel slowdown factor of a storm.
	Slowdown float64 `json:"slowdown,omitempty"`
	// GPUFaults (sum of numberOfPageFaults), CPUFaults and migrated bytes
	// planted in this span.
	GPUFaults int64 `json:"gpu_faults,omitempty"`
	CPUFaults int64 `json:"cpu_faults,omitempty"`
	HtoDBytes int64 `json:"htod_bytes,omitempty"`
	DtoHBytes int64 `json:"dtoh_bytes,omitempty"`
	// Syncs is the number of cudaStreamSynchronize calls in the span.
	Syncs int64 `json:"syncs"`
}

// TruthPath is where Generate writes the ground truth of the trace at
// path: the path without its extension, plus ".truth.json".
func TruthPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".truth.json"
}
