// Package ingest owns umtrace's data model: the Arrow schemas and column
// names of every table an ingester produces, the TraceInfo that describes a
// trace, and the Source interface through which analysis reads a trace.
//
// It imports no SQLite driver and no ingester, so analyze and report can use
// it without linking cgo code.
package ingest

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// Column names shared by several tables. Times are int64 nanoseconds in the
// trace's own clock (nsys session time).
const (
	ColStart         = "start_ns"
	ColEnd           = "end_ns"
	ColPid           = "pid"
	ColTid           = "tid"
	ColCorrelationID = "correlation_id"
	ColDeviceID      = "device_id"
	ColContextID     = "context_id"
	ColStreamID      = "stream_id"
	ColName          = "name"
	ColRawName       = "raw_name"
	ColEventClass    = "event_class"
	ColReturnValue   = "return_value"
	ColShortName     = "short_name"
	ColNameID        = "name_id"
	ColGridX         = "grid_x"
	ColGridY         = "grid_y"
	ColGridZ         = "grid_z"
	ColBlockX        = "block_x"
	ColBlockY        = "block_y"
	ColBlockZ        = "block_z"
	ColBytes         = "bytes"
	ColCopyKind      = "copy_kind"
	ColSrcKind       = "src_kind"
	ColDstKind       = "dst_kind"
	ColMigCause      = "migration_cause"
	ColVirtAddr      = "virtual_address"
	ColCopyCount     = "copy_count"
	ColValue         = "value"
	ColMemKind       = "mem_kind"
	ColSyncType      = "sync_type"
	ColEventID       = "event_id"
	ColAddress       = "address"
	ColNumFaults     = "num_faults"
	ColAccessType    = "access_type"
	ColPC            = "pc"
	ColFunction      = "function"
	ColModule        = "module"
	ColSourceFile    = "source_file"
	ColSourceLine    = "source_line"
	ColEventType     = "event_type"
	ColDomainID      = "domain_id"
	ColOperation     = "operation"
	ColID            = "id"
	ColSMCount       = "sm_count"
	ColTotalMemory   = "total_memory"
	ColComputeMajor  = "compute_major"
	ColComputeMinor  = "compute_minor"
)

// Kind is the physical type of a column.
type Kind int

const (
	Int64  Kind = iota // arrow int64
	Int32              // arrow int32
	Uint64             // arrow uint64 (addresses, PCs)
	String             // dictionary<int32, utf8>; repeated names cost one index each
)

// Column describes one column of a Table.
type Column struct {
	Name     string
	Kind     Kind
	Nullable bool
	Doc      string
}

// Table is one Arrow table produced by an ingester.
type Table struct {
	Name    string
	Doc     string
	Columns []Column

	schema *arrow.Schema
	index  map[string]int
}

func newTable(name, doc string, cols ...Column) *Table {
	t := &Table{Name: name, Doc: doc, Columns: cols, index: make(map[string]int, len(cols))}
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		if _, dup := t.index[c.Name]; dup {
			panic("ingest: duplicate column " + c.Name + " in " + name)
		}
		t.index[c.Name] = i
		fields[i] = arrow.Field{Name: c.Name, Type: c.Kind.DataType(), Nullable: c.Nullable,
			Metadata: arrow.NewMetadata([]string{"doc"}, []string{c.Doc})}
	}
	md := arrow.NewMetadata([]string{"umtrace.table"}, []string{name})
	t.schema = arrow.NewSchema(fields, &md)
	return t
}

// Schema returns the table's Arrow schema.
func (t *Table) Schema() *arrow.Schema { return t.schema }

// Index returns the position of the named column. It panics on an unknown
// column: column names are compile-time constants, so that is a programming
// error.
func (t *Table) Index(col string) int {
	i, ok := t.index[col]
	if !ok {
		panic(fmt.Sprintf("ingest: table %s has no column %q", t.Name, col))
	}
	return i
}

// Has reports whether the table has the named column.
func (t *Table) Has(col string) bool { _, ok := t.index[col]; return ok }

// DataType returns the Arrow type used for k.
func (k Kind) DataType() arrow.DataType {
	switch k {
	case Int64:
		return arrow.PrimitiveTypes.Int64
	case Int32:
		return arrow.PrimitiveTypes.Int32
	case Uint64:
		return arrow.PrimitiveTypes.Uint64
	case String:
		return DictString
	}
	panic("ingest: unknown kind")
}

// DictString is the type of every string column.
var DictString = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

func c(name string, k Kind, doc string) Column { return Column{Name: name, Kind: k, Doc: doc} }
func cn(name string, k Kind, doc string) Column {
	return Column{Name: name, Kind: k, Nullable: true, Doc: doc}
}

var (
	colStart = c(ColStart, Int64, "start time, ns, trace clock")
	colEnd   = c(ColEnd, Int64, "end time, ns, trace clock")
	colPid   = c(ColPid, Int64, "process id, decoded from globalTid/globalPid")
	colTid   = c(ColTid, Int64, "thread id, decoded from globalTid")
	colCorr  = cn(ColCorrelationID, Int64, "CUPTI correlation id; unique only per process; null when none (e.g. UM migrations)")
	colDev   = c(ColDeviceID, Int64, "device id (TARGET_INFO_GPU.id)")
	colCtx   = c(ColContextID, Int64, "CUDA context id")
	colStrm  = c(ColStreamID, Int64, "CUDA stream id")
)

// The tables. Table names are stable: they name Parquet/Arrow files in exports.
var (
	API = newTable("api", "CUDA runtime and driver API calls (host side)",
		colStart, colEnd, colPid, colTid, colCorr,
		c(ColEventClass, Int32, "0 CUDA runtime, 1 CUDA driver"),
		c(ColName, String, "API name with the _vNNNN suffix stripped"),
		c(ColRawName, String, "API name as recorded"),
		c(ColReturnValue, Int32, "CUDA error code (0 = success)"),
	)
	Kernel = newTable("kernel", "CUDA kernel executions (GPU side)",
		colStart, colEnd, colPid, colDev, colCtx, colStrm, colCorr,
		c(ColName, String, "demangled kernel name"),
		c(ColShortName, String, "short kernel name"),
		cn(ColNameID, Int64, "the source's id of name in its string table (nsys StringIds): equal names, equal ids; null where the source has no such table"),
		c(ColGridX, Int32, "grid x"), c(ColGridY, Int32, "grid y"), c(ColGridZ, Int32, "grid z"),
		c(ColBlockX, Int32, "block x"), c(ColBlockY, Int32, "block y"), c(ColBlockZ, Int32, "block z"),
	)
	Memcpy = newTable("memcpy", "memory copies, including unified-memory migrations (copy_kind 11/12/13)",
		colStart, colEnd, colPid, colDev, colCtx, colStrm, colCorr,
		c(ColBytes, Int64, "bytes copied"),
		c(ColCopyKind, Int32, "ENUM_CUDA_MEMCPY_OPER: 1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP, 11/12/13 unified HtoD/DtoH/DtoD"),
		cn(ColSrcKind, Int32, "ENUM_CUDA_MEM_KIND of the source"),
		cn(ColDstKind, Int32, "ENUM_CUDA_MEM_KIND of the destination"),
		cn(ColMigCause, Int32, "ENUM_CUDA_UNIF_MEM_MIGRATION: 1 user prefetch, 2 coherence (page fault), 3 speculative prefetch, 4 eviction, 5 access counters; null for ordinary copies"),
		cn(ColVirtAddr, Uint64, "base virtual address of migrated pages (UM rows)"),
		c(ColCopyCount, Int64, "operations folded into the record (1 where the export has no copyCount)"),
	)
	Memset = newTable("memset", "memsets (GPU side)",
		colStart, colEnd, colPid, colDev, colCtx, colStrm, colCorr,
		c(ColBytes, Int64, "bytes set"),
		c(ColValue, Int64, "value"),
		cn(ColMemKind, Int32, "ENUM_CUDA_MEM_KIND; 1 pinned and 4 managed are synchronous"),
	)
	Sync = newTable("sync", "CUPTI synchronization records; classify by the API call with the same (pid, correlation_id)",
		colStart, colEnd, colPid, colDev, colCtx, colStrm, colCorr,
		c(ColSyncType, Int32, "raw sync type as exported (see NSYS_SCHEMA §2.5: numbering is unreliable)"),
		cn(ColEventID, Int64, "CUDA event id; null when not applicable"),
	)
	GPUFault = newTable("gpu_fault", "unified-memory GPU page-fault groups",
		colStart, colEnd, colPid, colDev,
		c(ColAddress, Uint64, "faulting page virtual address"),
		c(ColNumFaults, Int64, "page faults folded into this group"),
		c(ColAccessType, Int32, "ENUM_CUDA_UNIF_MEM_ACCESS_TYPE: 1 read, 2 write, 3 atomic, 4 prefetch"),
	)
	CPUFault = newTable("cpu_fault", "unified-memory CPU page faults (one row per fault)",
		colStart, colPid,
		c(ColAddress, Uint64, "faulting virtual address"),
		cn(ColPC, Uint64, "faulting CPU program counter"),
		c(ColFunction, String, "function containing the faulting instruction"),
		c(ColModule, String, "binary containing the faulting instruction"),
		c(ColSourceFile, String, "source file (empty when unknown)"),
		c(ColSourceLine, Int32, "source line (0 when unknown)"),
	)
	NVTX = newTable("nvtx", "NVTX ranges and marks",
		colStart, cn(ColEnd, Int64, "end time, ns; null for marks and unterminated ranges"),
		colPid, colTid,
		c(ColEventType, Int32, "ENUM_NSYS_EVENT_TYPE: 34 mark, 59 push/pop range, 60 start/end range"),
		c(ColName, String, "range text"),
		cn(ColDomainID, Int64, "NVTX domain id"),
	)
	MemUsage = newTable("mem_usage", "GPU memory allocation and free events (--cuda-memory-usage)",
		colStart, colPid, colDev,
		c(ColAddress, Uint64, "allocation base address"),
		c(ColBytes, Int64, "allocation size"),
		c(ColMemKind, Int32, "ENUM_CUDA_MEM_KIND: 2 device, 4 managed, ..."),
		c(ColOperation, Int32, "0 allocation, 1 free"),
		colCorr,
	)
	Thread = newTable("thread", "thread names",
		colPid, colTid, c(ColName, String, "thread name"),
	)
	GPU = newTable("gpu", "GPUs described in the trace",
		c(ColID, Int64, "device id as used by activity device_id"),
		c(ColName, String, "GPU name"),
		c(ColSMCount, Int64, "streaming multiprocessors"),
		c(ColTotalMemory, Int64, "total memory, bytes"),
		c(ColComputeMajor, Int32, "compute capability major"),
		c(ColComputeMinor, Int32, "compute capability minor"),
	)
)

// Tables lists every table in a fixed order.
var Tables = []*Table{API, Kernel, Memcpy, Memset, Sync, GPUFault, CPUFault, NVTX, MemUsage, Thread, GPU}

// TableByName returns the table with the given name, or nil.
func TableByName(name string) *Table {
	for _, t := range Tables {
		if t.Name == name {
			return t
		}
	}
	return nil
}
