package ingest

// Column names of the sanitizer_finding table (compute-sanitizer and
// cuda-memcheck findings). Columns shared with trace tables (ColPC,
// ColAddress, ColSourceFile, ColSourceLine) keep their meaning.
const (
	ColSanLogFile      = "log_file"
	ColSanLogLine      = "log_line"
	ColSanFormat       = "format"
	ColSanTool         = "tool"
	ColSanSeverity     = "severity"
	ColSanKind         = "kind"
	ColSanMessage      = "message"
	ColSanKernel       = "kernel"
	ColSanKernelBase   = "kernel_base"
	ColSanThreadX      = "thread_idx_x"
	ColSanThreadY      = "thread_idx_y"
	ColSanThreadZ      = "thread_idx_z"
	ColSanBlockX       = "block_idx_x"
	ColSanBlockY       = "block_idx_y"
	ColSanBlockZ       = "block_idx_z"
	ColSanSize         = "access_size"
	ColSanSpace        = "memory_space"
	ColSanAccess       = "access"
	ColSanDetail       = "detail"
	ColSanHazards      = "hazards"
	ColSanRaceWith     = "race_with"
	ColSanAPIName      = "api_name"
	ColSanAPIError     = "api_error"
	ColSanAPIResult    = "api_result"
	ColSanLeakBytes    = "leak_bytes"
	ColSanAllocAddress = "alloc_address"
	ColSanAllocSize    = "alloc_size"
	ColSanHostFrames   = "host_frames"
	ColSanDeviceFrames = "device_frames"
)

// SanitizerFinding holds one row per record of a compute-sanitizer or
// cuda-memcheck log (text or XML). It is not a trace table, so it is not in
// Tables. Empty strings and 0 lines mean unknown; numeric columns are null
// when the log does not give the value.
var SanitizerFinding = newTable("sanitizer_finding",
	"compute-sanitizer / cuda-memcheck findings, one row per record, in log order",
	c(ColSanLogFile, String, "log file as named on the command line"),
	c(ColSanLogLine, Int64, "1-based line of the record's first line in the log (XML: line of <record>)"),
	c(ColSanFormat, String, "text or xml"),
	c(ColSanTool, String, "memcheck, racecheck, initcheck or synccheck"),
	c(ColSanSeverity, String, "error, warning or info"),
	c(ColSanKind, String, "invalid_access, hardware_exception, malloc_free_error, api_error, leak, race, hazard_limit, uninitialized_access, unused_memory, barrier_error, tool_message, other"),
	c(ColSanMessage, String, "the record's headline as printed (without the ========= prefix)"),
	c(ColSanKernel, String, "kernel (device function) as printed, demangled by the tool when it could; empty for host-side records"),
	c(ColSanKernelBase, String, "kernel base name: no return type, namespace, template arguments or parameters"),
	c(ColSourceFile, String, "source file of the faulting instruction (empty without -lineinfo)"),
	c(ColSourceLine, Int32, "source line (0 when unknown)"),
	cn(ColPC, Uint64, "device PC offset within the kernel"),
	cn(ColSanThreadX, Int32, "threadIdx.x of the faulting thread"),
	cn(ColSanThreadY, Int32, "threadIdx.y"),
	cn(ColSanThreadZ, Int32, "threadIdx.z"),
	cn(ColSanBlockX, Int32, "blockIdx.x of the faulting thread"),
	cn(ColSanBlockY, Int32, "blockIdx.y"),
	cn(ColSanBlockZ, Int32, "blockIdx.z"),
	cn(ColAddress, Uint64, "accessed, leaked or uninitialized address"),
	cn(ColSanSize, Int64, "access size, bytes"),
	c(ColSanSpace, String, "memory space: global, shared, local, generic, ... (empty when unknown)"),
	c(ColSanAccess, String, "read, write, atomic (racecheck: the first access of the pair)"),
	c(ColSanDetail, String, "what went wrong beyond the headline: out of bounds, misaligned, WAW hazard, Divergent thread(s) in warp, ..."),
	cn(ColSanHazards, Int64, "racecheck hazard count of the record (sum over its access pairs)"),
	c(ColSanRaceWith, String, "racecheck: the other accesses, one per line: \"write at KERNEL+0xPC FILE:LINE [N hazards]\""),
	c(ColSanAPIName, String, "CUDA API call that returned the error (api_error, host-API initcheck)"),
	c(ColSanAPIError, String, "CUDA error name, e.g. cudaErrorLaunchFailure"),
	cn(ColSanAPIResult, Int32, "CUDA error number, e.g. 719"),
	cn(ColSanLeakBytes, Int64, "leaked bytes (leak records)"),
	cn(ColSanAllocAddress, Uint64, "base of the nearest allocation (out-of-bounds records)"),
	cn(ColSanAllocSize, Int64, "size of the nearest allocation, bytes"),
	c(ColSanHostFrames, String, "saved host backtrace, one frame per line, innermost first"),
	c(ColSanDeviceFrames, String, "device backtrace (legacy cuda-memcheck Device Frame lines), one per line"),
)
