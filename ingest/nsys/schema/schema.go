// Package schema declares the tables of Nsight Systems SQLite exports that
// umtrace reads (nsys 2020.5 to 2025.x; ../shared/docs/NSYS_SCHEMA.md):
// for each table its name, the columns read with the names older exports
// give them, the model columns (ingest's Arrow schemas) each one feeds,
// and the conversion and range check the reader applies on the way. The
// reader builds its queries from these declarations; synth (which writes
// exports) and redact (which rewrites them) take table and column names
// from here rather than spelling them again.
//
// A table's columns are numbered by constants declared with it (RuntimeStart,
// KernelGridX, ...): the reader's row fillers read the values of a row by
// those names, never by position. Text columns are numbered on their own
// (Table.Texts).
package schema

import "github.com/umtrace/umtrace/ingest"

// A Table is one export table the reader reads.
type Table struct {
	Name  string        // as nsys names it
	Alt   []string      // tables older exports hold the same rows in, in the order tried
	Model *ingest.Table // the ingest table it fills (nil: none, e.g. StringIds)
	Cols  []Column      // integer columns, by the table's column constants
	Texts []Column      // text columns, numbered on their own
}

// A Column is one column the reader selects.
type Column struct {
	Name string   // as nsys names it
	Alt  []string // names older exports give it, tried in order when Name is absent
	// Feeds are the model columns (ingest.Col*) filled from it.
	Feeds []string
	// Lazy columns are selected only when a scan asks for one of Feeds;
	// the others always are (they gate rows or feed other columns).
	Lazy bool
	// Always columns are selected by name without checking that the
	// table has them (an export without them is not one umtrace reads).
	Always bool
	Conv   Conv
	// Hi is the largest value the range check passes (from 0); a value
	// outside 0..Hi reads as Unknown. Zero: no check.
	Hi, Unknown int64
}

// A Conv is how the reader turns a column's value into its model column.
type Conv uint8

const (
	Int       Conv = iota // copied
	Time                  // ns; a row with an unusable start or end is left out
	GlobalTid             // (pid << 24 | tid) packed: pid and tid
	GlobalPid             // as GlobalTid, the pid alone
	ID                    // an id: outside 0..Hi is -1 (unknown)
	Enum                  // an enum: outside 0..Hi reads as Unknown
	Corr                  // a correlation id: 0 and NULL are null
	Address               // an address, as uint64
	Count                 // a count: NULL and bad values read as 1
	StringID              // a StringIds id: the string
	Text                  // text
)

// Enum ranges (NSYS_SCHEMA §3) and id bounds.
const (
	CopyKindHi     = 13 // ENUM_CUDA_MEMCPY_OPER 0..13, 0 unknown
	MigCauseHi     = 5  // ENUM_CUDA_UNIF_MEM_MIGRATION 0..5, 0 unknown
	MemKindHi      = 7  // ENUM_CUDA_MEM_KIND 0..7, 7 unknown
	MemKindUnknown = 7
	AccessTypeHi   = 4 // ENUM_CUDA_UNIF_MEM_ACCESS_TYPE 0..4, 0 unknown
	SyncTypeHi     = 4 // ENUM_CUPTI_SYNC_TYPE 0..4, 0 unknown
	MemOpHi        = 1 // ENUM_CUDA_DEV_MEM_EVENT_OPER 0 alloc, 1 free
	EventClassHi   = 1<<16 - 1
	EventTypeHi    = 1<<16 - 1
	DeviceIDHi     = 1<<16 - 1
	StreamIDHi     = 1<<32 - 1
	ContextIDHi    = 1<<32 - 1
)

// Names of the export tables read for metadata only.
const (
	MetaDataExport    = "META_DATA_EXPORT"
	ExportMetaData    = "EXPORT_META_DATA" // older name of META_DATA_EXPORT
	MetaDataCapture   = "META_DATA_CAPTURE"
	AnalysisDetails   = "ANALYSIS_DETAILS"
	SessionStartTime  = "TARGET_INFO_SESSION_START_TIME"
	SystemEnv         = "TARGET_INFO_SYSTEM_ENV"
	Processes         = "PROCESSES"
	DiagnosticEvent   = "DIAGNOSTIC_EVENT"
	CUDADevice        = "TARGET_INFO_CUDA_DEVICE"
	CUDAContextInfo   = "TARGET_INFO_CUDA_CONTEXT_INFO"
	CUDAStream        = "TARGET_INFO_CUDA_STREAM"
	nvprofStringTable = "StringTable"
	nvprofDriverTable = "CUPTI_ACTIVITY_KIND_DRIVER"
)

// NvprofTables are tables of nvprof exports, which are not nsys's.
var NvprofTables = []string{nvprofStringTable, nvprofDriverTable}

// Tables are the event tables, in the order the reader checks them.
var Tables = []*Table{Runtime, Kernel, Memcpy, Memset, Sync, GPUFault, CPUFault, NVTX, MemUsage}

// CUDATables are the tables whose rows mean the trace has CUDA activity.
var CUDATables = []*Table{Runtime, Kernel, Memcpy, Memset, Sync}

// ForModel returns the table an ingest table is read from (nil: none).
func ForModel(t *ingest.Table) *Table {
	for _, s := range append(Tables[:len(Tables):len(Tables)], ThreadNames, GPU) {
		if s.Model == t {
			return s
		}
	}
	return nil
}

// StringIDColumns returns the names of the columns the reader reads as
// StringIds ids (Conv StringID), in every table, each once, plus extra.
func StringIDColumns(extra ...string) map[string]bool {
	m := map[string]bool{}
	for _, t := range append(Tables[:len(Tables):len(Tables)], ThreadNames, GPU) {
		for _, c := range t.Cols {
			if c.Conv == StringID {
				m[c.Name] = true
				for _, a := range c.Alt {
					m[a] = true
				}
			}
		}
	}
	for _, e := range extra {
		m[e] = true
	}
	return m
}

// Names returns the tables' names.
func Names(ts ...*Table) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}
