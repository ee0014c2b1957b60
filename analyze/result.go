package analyze

// SchemaVersion is the version of the JSON result format (docs/json.md).
// Bump it on any incompatible change.
const SchemaVersion = 2

// Verdicts.
const (
	VerdictStorm        = "storm"
	VerdictNoStorm      = "no_storm"
	VerdictInsufficient = "insufficient_data"
)

// Result is the outcome of analyzing one trace. Its JSON form,
// report.TraceDocument (these fields plus the core every analyze document
// has, docs/json.md), is umtrace's machine-readable report; field order is
// fixed and maps are avoided so the output is byte-identical for the same
// input.
type Result struct {
	SchemaVersion int              `json:"schema_version"`
	Trace         TraceMeta        `json:"trace"`
	Verdict       string           `json:"verdict"`
	Reason        string           `json:"verdict_reason"`
	Headline      Headline         `json:"headline"`
	Startup       []Startup        `json:"startup"`
	Episodes      []Episode        `json:"episodes"`
	Isolated      []Episode        `json:"isolated_stalls"`
	SyncAPIs      []APIStats       `json:"sync_apis"`
	SyncByKernel  []Group          `json:"sync_by_kernel"`
	SyncByThread  []Group          `json:"sync_by_thread"`
	SyncByStream  []Group          `json:"sync_by_stream"`
	APIs          []APIStats       `json:"apis"`
	Kernels       []Kernel         `json:"kernels"`
	UnifiedMemory UM               `json:"unified_memory"`
	Steps         Steps            `json:"steps"`
	Timeline      Timeline         `json:"timeline"`
	Charts        Charts           `json:"charts"` // charts.go
	Mitigations   []Mitigation     `json:"mitigations"`
	Sanitizer     *SanitizerReport `json:"sanitizer,omitempty"`
	Devices       []Device         `json:"devices"`          // per GPU (devices.go)
	Processes     []Process        `json:"processes"`        // per process
	Memory        *Memory          `json:"memory,omitempty"` // GPU memory pressure; only with memory-usage records or failed allocations
	Thresholds    Thresholds       `json:"thresholds"`
	// Partial: the trace is damaged and was read around the damage
	// (--salvage); the warnings say where.
	Partial  bool     `json:"partial,omitempty"`
	Warnings []string `json:"warnings"`
}

// TraceMeta describes the analyzed trace.
type TraceMeta struct {
	File           string   `json:"file"` // base name: reports do not depend on where the file lies
	Producer       string   `json:"producer"`
	ProductVersion string   `json:"product_version"`
	SchemaVersion  string   `json:"export_schema_version"`
	StartNs        int64    `json:"start_ns"`
	EndNs          int64    `json:"end_ns"`
	DurationNs     int64    `json:"duration_ns"`
	GPUs           []string `json:"gpus"`
	Processes      int      `json:"processes"`
	Threads        int      `json:"threads"`
}

// Startup is a process's first CUDA runtime call when it is host-blocking
// (a cudaMalloc, cudaMallocManaged or cudaFree that creates the CUDA
// context, often 100-200 ms). It is kept out of the headline, the sync
// tables by kernel, thread and stream, stall detection, the time axis,
// step blocked time and diff statistics; the per-API tables include it.
type Startup struct {
	Pid        int64  `json:"pid"`
	Tid        int64  `json:"tid"`
	API        string `json:"api"`
	StartNs    int64  `json:"start_ns"`
	DurationNs int64  `json:"duration_ns"`
}

// Headline holds the numbers a reader needs first. Its host-blocking
// figures leave out CUDA start-up (Result.Startup).
type Headline struct {
	StormTimeNs    int64   `json:"storm_time_ns"`
	StormShare     float64 `json:"storm_share"`
	StormExcessNs  int64   `json:"storm_excess_ns"`
	BlockedNs      int64   `json:"blocked_ns"`
	BlockedShare   float64 `json:"blocked_share"`
	HostBlocking   int     `json:"host_blocking_calls"`
	ImplicitSyncs  int     `json:"implicit_syncs"`
	ExplicitSyncs  int     `json:"explicit_syncs"`
	SyncP50Ns      float64 `json:"sync_p50_ns"`
	SyncP99Ns      float64 `json:"sync_p99_ns"`
	GPUFaults      int64   `json:"gpu_faults"`
	CPUFaults      int64   `json:"cpu_faults"`
	FaultsPerSec   float64 `json:"faults_per_sec"`
	MigratedBytes  int64   `json:"migrated_bytes"`
	DemandMigBytes int64   `json:"demand_migrated_bytes"`
	StepP50Ns      float64 `json:"step_p50_ns"`
	StepP99Ns      float64 `json:"step_p99_ns"`
}

// APIStats summarizes the calls of one API.
type APIStats struct {
	Name string   `json:"name"`
	Kind SyncKind `json:"kind,omitempty"` // explicit|implicit for host-blocking APIs
	Dist
}

// Group is a distribution of host-blocking time for one key (a kernel, a
// thread, a stream).
type Group struct {
	Key string `json:"key"`
	Dist
}

// Kernel summarizes one kernel name.
type Kernel struct {
	Name string `json:"name"`
	Dist
}

// Episode is a time-localized storm (or an isolated stall) with its evidence.
type Episode struct {
	Index          int            `json:"index"`
	StartNs        int64          `json:"start_ns"`
	EndNs          int64          `json:"end_ns"`
	DurationNs     int64          `json:"duration_ns"`
	Stalls         int            `json:"stalls"`
	StalledNs      int64          `json:"stalled_ns"`
	Syncs          int            `json:"syncs"`
	BlockedNs      int64          `json:"blocked_ns"`
	ExcessNs       int64          `json:"excess_ns"`
	BaselineNote   string         `json:"baseline_note"`
	StallAPIs      []NameCount    `json:"stall_apis"`
	GPUFaults      int64          `json:"gpu_faults"`
	GPUFaultGroups int64          `json:"gpu_fault_groups"`
	CPUFaults      int64          `json:"cpu_faults"`
	Migrations     []MigrationAgg `json:"migrations"`
	Kernels        []KernelSlow   `json:"kernels"`
	FirstStep      int            `json:"first_step"` // -1 when no steps
	LastStep       int            `json:"last_step"`
	CPUFaultSites  []NameCount    `json:"cpu_fault_sites"`
	Pid            int64          `json:"pid"`    // the process that stalled most in the window
	Device         int64          `json:"device"` // its device with the most GPU faults in the window (else its main device; -1 when unknown)
}

// NameCount is a name with a count (and time, where it applies).
type NameCount struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
	Ns    int64  `json:"ns,omitempty"`
}

// KernelSlow compares a kernel inside an episode with its calm runs.
type KernelSlow struct {
	Name         string  `json:"name"`
	Count        int     `json:"count"`
	MedianNs     float64 `json:"median_ns"`
	CalmMedianNs float64 `json:"calm_median_ns"` // 0 when the kernel never ran outside episodes
	Slowdown     float64 `json:"slowdown"`       // 0 when unknown
}

// MigrationAgg aggregates UM migrations of one direction and cause.
type MigrationAgg struct {
	Direction string `json:"direction"`
	Cause     string `json:"cause"`
	Count     int64  `json:"count"`
	Bytes     int64  `json:"bytes"`
	TimeNs    int64  `json:"time_ns"`
}

// UM summarizes unified-memory activity over the whole trace.
type UM struct {
	ManagedAllocs       int            `json:"managed_allocations"`
	ManagedBytes        int64          `json:"managed_bytes"`
	Migrations          []MigrationAgg `json:"migrations"`
	MigratedBytes       int64          `json:"migrated_bytes"`
	GPUFaultGroups      int64          `json:"gpu_fault_groups"`
	GPUFaults           int64          `json:"gpu_faults"`
	CPUFaults           int64          `json:"cpu_faults"`
	GPUFaultsPerSec     float64        `json:"gpu_faults_per_sec"`
	CPUFaultsPerSec     float64        `json:"cpu_faults_per_sec"`
	MigratedBytesPerSec float64        `json:"migrated_bytes_per_sec"`
	FaultTables         bool           `json:"fault_tables"`
	// GPUFaultNs is the summed duration (end - start) of the GPU
	// page-fault groups: the time from a group's first fault to its
	// resolution.
	GPUFaultNs int64 `json:"gpu_fault_ns"`
	// GPUFaultCollection and CPUFaultCollection say whether the trace
	// can tell zero faults from faults not recorded: "on" (the capture
	// settings say the faults were collected, or fault rows are present),
	// "off" (the settings say they were not, and there are no rows), or
	// "unknown" (the export records no capture settings and has no rows).
	GPUFaultCollection string      `json:"gpu_fault_collection"`
	CPUFaultCollection string      `json:"cpu_fault_collection"`
	TopRanges          []AddrRange `json:"top_ranges"`
	CPUFaultSites      []NameCount `json:"cpu_fault_sites"`
}

// AddrRange is a managed allocation (or, without allocation records, a
// 2 MiB-aligned block) with the UM activity that hit it.
type AddrRange struct {
	Start         string `json:"start"` // hex
	Bytes         int64  `json:"bytes"`
	Label         string `json:"label"`
	GPUFaults     int64  `json:"gpu_faults"`
	CPUFaults     int64  `json:"cpu_faults"`
	MigratedBytes int64  `json:"migrated_bytes"`
	Migrations    int64  `json:"migrations"`
}

// Steps describes the training steps found in NVTX ranges.
type Steps struct {
	Range         string  `json:"range"`      // "" when no steps
	Source        string  `json:"source"`     // "detected", "--step-range", or the reason there are none and what to record
	Confidence    string  `json:"confidence"` // "high", "medium", "low", "given" (--step-range); "" without steps
	Evidence      string  `json:"evidence"`   // how the steps were found: the range, what its name says, how much time its ranges tile
	Count         int     `json:"count"`      // every step, the warm-up included
	WarmupSteps   int     `json:"warmup_steps"`
	Duration      Dist    `json:"duration"`      // of the steps after the warm-up; percentiles by nearest rank (a step that happened)
	BlockedShare  float64 `json:"blocked_share"` // total blocked / total step time
	FaultsPerStep float64 `json:"faults_per_step"`
	MaxFaults     int64   `json:"max_faults"`
	Rows          []Step  `json:"rows"`
}

// Step is one training step.
type Step struct {
	Index         int     `json:"index"`
	Name          string  `json:"name"`
	StartNs       int64   `json:"start_ns"`
	DurationNs    int64   `json:"duration_ns"`
	BlockedNs     int64   `json:"blocked_ns"`
	BlockedShare  float64 `json:"blocked_share"`
	GPUFaults     int64   `json:"gpu_faults"`
	CPUFaults     int64   `json:"cpu_faults"`
	MigratedBytes int64   `json:"migrated_bytes"`
	Episode       int     `json:"episode"` // index+1 of the storm episode it lies in, 0 for none
	Warmup        bool    `json:"warmup"`  // the first step, far slower than the rest: kept out of Steps.Duration, charts' scales and diff
}

// Mitigation is advice tied to evidence found in the trace.
type Mitigation struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Evidence string `json:"evidence"`
	Action   string `json:"action"`
}

// TimelineBins is the number of equal time bins in Result.Timeline.
const TimelineBins = 60

// Timeline puts the trace on a time axis: TimelineBins equal bins from the
// trace start, each with the host-blocked time, UM stalls, page faults and
// fault-driven migration that fell in it.
type Timeline struct {
	StartNs int64         `json:"start_ns"`
	BinNs   int64         `json:"bin_ns"`
	Bins    []TimelineBin `json:"bins"`
	// Lanes splits Bins by process (same bin edges; Storm marks the
	// process's own episodes), in pid order, when the trace holds several
	// processes; by GPU, in device order, when one process has several
	// GPUs (Storm marks the device's episodes; a last lane with Device
	// HostLane holds the CPU faults and the host-blocking calls of no known
	// device, when there are any). The lanes add up to Bins.
	Lanes []TimelineLane `json:"lanes,omitempty"`
}

// TimelineLane is one process's or one GPU's share of the timeline.
type TimelineLane struct {
	Pid int64 `json:"pid"`
	// Device is the GPU of a per-device lane (HostLane for the host
	// lane); nil on a per-process lane.
	Device *int64        `json:"device,omitempty"`
	Bins   []TimelineBin `json:"bins"`
}

// TimelineBin is one bin of the timeline. BlockedNs sums host-blocking
// calls clipped to the bin (calls on different threads add up).
type TimelineBin struct {
	StartNs     int64 `json:"start_ns"`
	BlockedNs   int64 `json:"blocked_ns"`
	Stalls      int   `json:"stalls"`
	GPUFaults   int64 `json:"gpu_faults"`
	CPUFaults   int64 `json:"cpu_faults"`
	DemandBytes int64 `json:"demand_migrated_bytes"`
	Storm       bool  `json:"storm"`
}
