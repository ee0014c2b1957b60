package ingest

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
)

// Source is a trace that can be streamed table by table.
//
// Scan calls fn with successive record batches of t. A batch is valid only
// during the call: the Source releases it when fn returns, so a caller must
// copy anything it needs to retain (or Retain the batch). A table the trace
// does not have yields no batches and no error. Scan may be called
// concurrently for different tables.
type Source interface {
	Info() *TraceInfo
	Scan(t *Table, fn func(arrow.RecordBatch) error) error
}

// ColumnScanner is implemented by Sources that can skip columns: ScanColumns
// is Scan, except that columns not named in cols may be all null. Consumers
// that read few columns of wide tables use it to save the producer's work.
type ColumnScanner interface {
	ScanColumns(t *Table, cols []string, fn func(arrow.RecordBatch) error) error
}

// PreparedScanner is implemented by Sources that read a table's parts
// concurrently: ScanPrepared is ScanColumns, except that prep (when not
// nil) runs on each batch in the goroutine that read it, as soon as it is
// read (batches of several parts at once, in any order), and fn gets each
// batch with what prep returned for it, in storage order, from one
// goroutine at a time. A consumer's per-row work that needs no state
// shared across batches goes into prep, off the one goroutine that takes
// the batches in order.
type PreparedScanner interface {
	ScanPrepared(t *Table, cols []string, prep func(arrow.RecordBatch) any, fn func(arrow.RecordBatch, any) error) error
}

// RowEstimator is implemented by Sources that can tell cheaply about how
// many rows a table has (an upper bound is fine); consumers use it to size
// buffers once instead of growing them.
type RowEstimator interface {
	EstimateRows(t *Table) int64
}

// NameTable is implemented by Sources that keep their strings in a table of
// their own (nsys StringIds) and can give a name column as ids into it
// (ColNameID) instead of the strings: a consumer of millions of distinct
// 200-byte kernel names then holds an id per name, not the name, and
// resolves the few it prints. Equal strings have equal ids.
type NameTable interface {
	// NameIDs reports whether scans of t fill ColNameID for its ColName.
	NameIDs(t *Table) bool
	// Names returns the strings of ids (ColNameID values), in order.
	Names(ids []int64) ([]string, error)
	// NameFlags returns NameFlags of id's string without reading it.
	NameFlags(id int64) NameFlag
}

// Warner is implemented by Sources that replaced values they could not
// use (an enum value out of range, an id that does not resolve) or left
// rows out while scanning. Warnings lists them, one line per column, for
// the scans finished so far.
type Warner interface {
	Warnings() []string
}

// ErrNoCUDA is returned (wrapped) when a trace holds no CUDA activity at all.
var ErrNoCUDA = errors.New("no CUDA activity in this export")

// TraceInfo describes a trace: where it came from and what it can tell.
type TraceInfo struct {
	Path           string `json:"path"`
	Producer       string `json:"producer"`        // e.g. "nsys"
	ProductVersion string `json:"product_version"` // e.g. "2025.3.2.0"; empty when the export does not say
	SchemaVersion  string `json:"schema_version"`  // e.g. "3.20.3"; empty when the export does not say
	MetaTable      string `json:"meta_table"`      // META_DATA_EXPORT, EXPORT_META_DATA, or "" (pre-2022)
	Lazy           string `json:"lazy"`            // "true", "false", or "" when unknown

	// Tables maps each source table umtrace reads to whether it is present.
	Tables map[string]bool `json:"tables"`

	// Capture flags from META_DATA_CAPTURE; nil when the export does not record them.
	CollectCPUFaults *bool `json:"collect_cpu_faults,omitempty"`
	CollectGPUFaults *bool `json:"collect_gpu_faults,omitempty"`

	// Feature presence, detected from tables and columns.
	HasCPUFaultTable  bool      `json:"has_cpu_fault_table"`
	HasGPUFaultTable  bool      `json:"has_gpu_fault_table"`
	HasMigrationCause bool      `json:"has_migration_cause"`
	HasVirtualAddress bool      `json:"has_virtual_address"`
	HasNVTX           bool      `json:"has_nvtx"`
	HasCUDA           bool      `json:"has_cuda"`
	SpanStartNs       int64     `json:"span_start_ns"`
	SpanEndNs         int64     `json:"span_end_ns"`
	SessionStartUTCNs int64     `json:"session_start_utc_ns,omitempty"`
	GPUs              []GPUInfo `json:"gpus,omitempty"`
	Diagnostics       []string  `json:"diagnostics,omitempty"` // profiler warnings/errors from DIAGNOSTIC_EVENT

	// ProcessNames maps pid to name (the PROCESSES table); nil when absent.
	ProcessNames map[int64]string `json:"process_names,omitempty"`
	// LaunchEnv holds the rank-related environment variables (RANK,
	// LOCAL_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, WORLD_SIZE,
	// ...) of the process nsys launched (META_DATA_CAPTURE); nil when the
	// export does not record them.
	LaunchEnv map[string]string `json:"launch_env,omitempty"`
}

// GPUInfo is one GPU of the trace.
type GPUInfo struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	SMCount      int64  `json:"sm_count"`
	TotalMemory  int64  `json:"total_memory"`
	ComputeMajor int32  `json:"compute_major"`
	ComputeMinor int32  `json:"compute_minor"`
}
