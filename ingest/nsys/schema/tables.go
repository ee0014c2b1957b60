package schema

import "github.com/umtrace/umtrace/ingest"

// The tables' column numbers. Each table's Cols is indexed by them (the
// composite literals below name them), so a column's number and its
// declaration cannot drift apart.

// CUPTI_ACTIVITY_KIND_RUNTIME: CUDA runtime and driver API calls.
const (
	RuntimeStart = iota
	RuntimeEnd
	RuntimeGlobalTid
	RuntimeCorrelationID
	RuntimeEventClass
	RuntimeNameID
	RuntimeReturnValue
)

var Runtime = &Table{Name: "CUPTI_ACTIVITY_KIND_RUNTIME", Model: ingest.API, Cols: []Column{
	RuntimeStart:         {Name: "start", Feeds: []string{ingest.ColStart}, Always: true, Conv: Time},
	RuntimeEnd:           {Name: "end", Feeds: []string{ingest.ColEnd}, Always: true, Conv: Time},
	RuntimeGlobalTid:     {Name: "globalTid", Feeds: []string{ingest.ColPid, ingest.ColTid}, Conv: GlobalTid},
	RuntimeCorrelationID: {Name: "correlationId", Feeds: []string{ingest.ColCorrelationID}, Lazy: true, Conv: Corr},
	// NULL or out of range: the class is read from the API's name.
	RuntimeEventClass:  {Name: "eventClass", Feeds: []string{ingest.ColEventClass}, Lazy: true, Conv: Enum, Hi: EventClassHi},
	RuntimeNameID:      {Name: "nameId", Feeds: []string{ingest.ColName, ingest.ColRawName, ingest.ColEventClass}, Conv: StringID},
	RuntimeReturnValue: {Name: "returnValue", Feeds: []string{ingest.ColReturnValue}, Lazy: true},
}}

// The columns GPU activity tables (kernels, memcpy, memset, syncs) begin
// with, in this order.
const (
	ActStart = iota
	ActEnd
	ActGlobalPid
	ActDeviceID
	ActContextID
	ActStreamID
	ActCorrelationID
	nAct
)

// gpuActivity returns the columns GPU activity tables begin with; lazy
// says which of device, context and correlation ids are lazy.
func gpuActivity(lazyDev, lazyCtx, lazyCorr bool) []Column {
	return []Column{
		ActStart:         {Name: "start", Feeds: []string{ingest.ColStart}, Always: true, Conv: Time},
		ActEnd:           {Name: "end", Feeds: []string{ingest.ColEnd}, Always: true, Conv: Time},
		ActGlobalPid:     {Name: "globalPid", Feeds: []string{ingest.ColPid}, Conv: GlobalPid},
		ActDeviceID:      {Name: "deviceId", Feeds: []string{ingest.ColDeviceID}, Lazy: lazyDev, Conv: ID, Hi: DeviceIDHi, Unknown: -1},
		ActContextID:     {Name: "contextId", Feeds: []string{ingest.ColContextID}, Lazy: lazyCtx, Conv: ID, Hi: ContextIDHi, Unknown: -1},
		ActStreamID:      {Name: "streamId", Feeds: []string{ingest.ColStreamID}, Conv: ID, Hi: StreamIDHi, Unknown: -1},
		ActCorrelationID: {Name: "correlationId", Feeds: []string{ingest.ColCorrelationID}, Lazy: lazyCorr, Conv: Corr},
	}
}

// CUPTI_ACTIVITY_KIND_KERNEL (after the GPU activity columns).
const (
	KernelName = nAct + iota // demangledName, else shortName
	KernelShortName
	KernelGridX
	KernelGridY
	KernelGridZ
	KernelBlockX
	KernelBlockY
	KernelBlockZ
)

var Kernel = &Table{Name: "CUPTI_ACTIVITY_KIND_KERNEL", Model: ingest.Kernel, Cols: append(gpuActivity(true, true, true),
	Column{Name: "demangledName", Alt: []string{"shortName"}, Feeds: []string{ingest.ColName, ingest.ColNameID}, Lazy: true, Conv: StringID},
	Column{Name: "shortName", Feeds: []string{ingest.ColShortName}, Lazy: true, Conv: StringID},
	Column{Name: "gridX", Feeds: []string{ingest.ColGridX}, Lazy: true},
	Column{Name: "gridY", Feeds: []string{ingest.ColGridY}, Lazy: true},
	Column{Name: "gridZ", Feeds: []string{ingest.ColGridZ}, Lazy: true},
	Column{Name: "blockX", Feeds: []string{ingest.ColBlockX}, Lazy: true},
	Column{Name: "blockY", Feeds: []string{ingest.ColBlockY}, Lazy: true},
	Column{Name: "blockZ", Feeds: []string{ingest.ColBlockZ}, Lazy: true},
)}

// CUPTI_ACTIVITY_KIND_MEMCPY: explicit copies and UM migrations.
const (
	MemcpyBytes = nAct + iota
	MemcpyCopyKind
	MemcpySrcKind
	MemcpyDstKind
	MemcpyMigrationCause // read for UM copy kinds (11..13) only
	MemcpyVirtualAddress // 0 is null
	MemcpyCopyCount
)

var Memcpy = &Table{Name: "CUPTI_ACTIVITY_KIND_MEMCPY", Model: ingest.Memcpy, Cols: append(gpuActivity(true, true, false),
	Column{Name: "bytes", Feeds: []string{ingest.ColBytes}},
	Column{Name: "copyKind", Feeds: []string{ingest.ColCopyKind}, Conv: Enum, Hi: CopyKindHi},
	Column{Name: "srcKind", Feeds: []string{ingest.ColSrcKind}, Lazy: true, Conv: Enum, Hi: MemKindHi, Unknown: MemKindUnknown},
	Column{Name: "dstKind", Feeds: []string{ingest.ColDstKind}, Lazy: true, Conv: Enum, Hi: MemKindHi, Unknown: MemKindUnknown},
	Column{Name: "migrationCause", Feeds: []string{ingest.ColMigCause}, Conv: Enum, Hi: MigCauseHi},
	Column{Name: "virtualAddress", Feeds: []string{ingest.ColVirtAddr}, Conv: Address},
	Column{Name: "copyCount", Feeds: []string{ingest.ColCopyCount}, Lazy: true, Conv: Count},
)}

// CUPTI_ACTIVITY_KIND_MEMSET.
const (
	MemsetBytes = nAct + iota
	MemsetValue
	MemsetMemKind
)

var Memset = &Table{Name: "CUPTI_ACTIVITY_KIND_MEMSET", Model: ingest.Memset, Cols: append(gpuActivity(false, false, false),
	Column{Name: "bytes", Feeds: []string{ingest.ColBytes}},
	Column{Name: "value", Feeds: []string{ingest.ColValue}},
	Column{Name: "memKind", Feeds: []string{ingest.ColMemKind}, Conv: Enum, Hi: MemKindHi, Unknown: MemKindUnknown},
)}

// CUPTI_ACTIVITY_KIND_SYNCHRONIZATION.
const (
	// The sync type of exports before schema 3.17.0, non-NULL only there
	// (then it wins over SyncType).
	SyncDeprecatedSyncType = nAct + iota
	SyncSyncType
	SyncEventID // 0xFFFFFFFF and -1 are null
)

var Sync = &Table{Name: "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", Model: ingest.Sync, Cols: append(gpuActivity(false, false, false),
	Column{Name: "deprecatedSyncType", Feeds: []string{ingest.ColSyncType}, Conv: Enum, Hi: SyncTypeHi},
	Column{Name: "syncType", Feeds: []string{ingest.ColSyncType}, Conv: Enum, Hi: SyncTypeHi},
	Column{Name: "eventId", Feeds: []string{ingest.ColEventID}},
)}

// CUDA_UM_GPU_PAGE_FAULT_EVENTS.
const (
	GPUFaultStart = iota
	GPUFaultEnd   // start where the table has no end
	GPUFaultGlobalPid
	GPUFaultDeviceID
	GPUFaultAddress
	GPUFaultNumFaults
	GPUFaultAccessType
)

var GPUFault = &Table{Name: "CUDA_UM_GPU_PAGE_FAULT_EVENTS", Model: ingest.GPUFault, Cols: []Column{
	GPUFaultStart:      {Name: "start", Feeds: []string{ingest.ColStart}, Always: true, Conv: Time},
	GPUFaultEnd:        {Name: "end", Alt: []string{"start"}, Feeds: []string{ingest.ColEnd}, Conv: Time},
	GPUFaultGlobalPid:  {Name: "globalPid", Feeds: []string{ingest.ColPid}, Conv: GlobalPid},
	GPUFaultDeviceID:   {Name: "deviceId", Feeds: []string{ingest.ColDeviceID}, Conv: ID, Hi: DeviceIDHi, Unknown: -1},
	GPUFaultAddress:    {Name: "address", Feeds: []string{ingest.ColAddress}, Conv: Address},
	GPUFaultNumFaults:  {Name: "numberOfPageFaults", Feeds: []string{ingest.ColNumFaults}, Conv: Count},
	GPUFaultAccessType: {Name: "faultAccessType", Feeds: []string{ingest.ColAccessType}, Conv: Enum, Hi: AccessTypeHi},
}}

// CUDA_UM_CPU_PAGE_FAULT_EVENTS.
const (
	CPUFaultStart = iota
	CPUFaultGlobalPid
	CPUFaultAddress
	CPUFaultPC
	CPUFaultFunction // StringIds ids, from here to CPUFaultSourceFile
	CPUFaultModule
	CPUFaultSourceFile
	CPUFaultSourceLine
)

var CPUFault = &Table{Name: "CUDA_UM_CPU_PAGE_FAULT_EVENTS", Model: ingest.CPUFault, Cols: []Column{
	CPUFaultStart:      {Name: "start", Feeds: []string{ingest.ColStart}, Always: true, Conv: Time},
	CPUFaultGlobalPid:  {Name: "globalPid", Feeds: []string{ingest.ColPid}, Conv: GlobalPid},
	CPUFaultAddress:    {Name: "address", Feeds: []string{ingest.ColAddress}, Conv: Address},
	CPUFaultPC:         {Name: "originalFaultPc", Feeds: []string{ingest.ColPC}, Conv: Address},
	CPUFaultFunction:   {Name: "CpuInstruction", Feeds: []string{ingest.ColFunction}, Conv: StringID},
	CPUFaultModule:     {Name: "module", Feeds: []string{ingest.ColModule}, Conv: StringID},
	CPUFaultSourceFile: {Name: "sourceFile", Feeds: []string{ingest.ColSourceFile}, Conv: StringID},
	CPUFaultSourceLine: {Name: "sourceLine", Feeds: []string{ingest.ColSourceLine}},
}}

// NVTX_EVENTS.
const (
	NVTXStart = iota
	NVTXEnd   // NULL for marks
	NVTXGlobalTid
	NVTXEventType
	NVTXTextID
	NVTXDomainID
)

// NVTX_EVENTS's text columns.
const (
	NVTXText = iota // the name, where it is not a StringIds id (NVTXTextID)
)

var NVTX = &Table{Name: "NVTX_EVENTS", Model: ingest.NVTX, Cols: []Column{
	NVTXStart:     {Name: "start", Feeds: []string{ingest.ColStart}, Always: true, Conv: Time},
	NVTXEnd:       {Name: "end", Feeds: []string{ingest.ColEnd}, Conv: Time},
	NVTXGlobalTid: {Name: "globalTid", Feeds: []string{ingest.ColPid, ingest.ColTid}, Conv: GlobalTid},
	NVTXEventType: {Name: "eventType", Feeds: []string{ingest.ColEventType}, Conv: Enum, Hi: EventTypeHi, Unknown: -1},
	NVTXTextID:    {Name: "textId", Feeds: []string{ingest.ColName}, Conv: StringID},
	NVTXDomainID:  {Name: "domainId", Feeds: []string{ingest.ColDomainID}},
}, Texts: []Column{
	NVTXText: {Name: "text", Feeds: []string{ingest.ColName}, Conv: Text},
}}

// CUDA_GPU_MEMORY_USAGE_EVENTS.
const (
	MemUsageStart = iota
	MemUsageGlobalPid
	MemUsageDeviceID
	MemUsageAddress
	MemUsageBytes
	MemUsageMemKind
	MemUsageOperation
	MemUsageCorrelationID
)

var MemUsage = &Table{Name: "CUDA_GPU_MEMORY_USAGE_EVENTS", Model: ingest.MemUsage, Cols: []Column{
	MemUsageStart:         {Name: "start", Feeds: []string{ingest.ColStart}, Always: true, Conv: Time},
	MemUsageGlobalPid:     {Name: "globalPid", Feeds: []string{ingest.ColPid}, Conv: GlobalPid},
	MemUsageDeviceID:      {Name: "deviceId", Feeds: []string{ingest.ColDeviceID}, Conv: ID, Hi: DeviceIDHi, Unknown: -1},
	MemUsageAddress:       {Name: "address", Feeds: []string{ingest.ColAddress}, Conv: Address},
	MemUsageBytes:         {Name: "bytes", Feeds: []string{ingest.ColBytes}},
	MemUsageMemKind:       {Name: "memKind", Feeds: []string{ingest.ColMemKind}, Conv: Enum, Hi: MemKindHi, Unknown: MemKindUnknown},
	MemUsageOperation:     {Name: "memoryOperationType", Feeds: []string{ingest.ColOperation}, Conv: Enum, Hi: MemOpHi, Unknown: -1},
	MemUsageCorrelationID: {Name: "correlationId", Feeds: []string{ingest.ColCorrelationID}, Conv: Corr},
}}

// ThreadNames.
const (
	ThreadGlobalTid = iota
	ThreadNameID
)

var ThreadNames = &Table{Name: "ThreadNames", Model: ingest.Thread, Cols: []Column{
	ThreadGlobalTid: {Name: "globalTid", Feeds: []string{ingest.ColPid, ingest.ColTid}, Conv: GlobalTid},
	ThreadNameID:    {Name: "nameId", Feeds: []string{ingest.ColName}, Conv: StringID},
}}

// TARGET_INFO_GPU (with an id column from 2021.3), else the older
// TARGET_INFO_CUDA_GPU, else the early TARGET_INFO_GPU (deviceId, name).
const (
	GPUID = iota
	GPUSMCount
	GPUTotalMemory
	GPUComputeMajor
	GPUComputeMinor
)

// TARGET_INFO_GPU's text columns.
const (
	GPUName = iota
)

var GPU = &Table{Name: "TARGET_INFO_GPU", Alt: []string{"TARGET_INFO_CUDA_GPU"}, Model: ingest.GPU, Cols: []Column{
	GPUID:           {Name: "id", Alt: []string{"deviceId"}, Feeds: []string{ingest.ColID}, Conv: ID, Hi: DeviceIDHi, Unknown: -1},
	GPUSMCount:      {Name: "smCount", Alt: []string{"numMultiprocessors"}, Feeds: []string{ingest.ColSMCount}},
	GPUTotalMemory:  {Name: "totalMemory", Alt: []string{"globalMemorySize"}, Feeds: []string{ingest.ColTotalMemory}},
	GPUComputeMajor: {Name: "computeMajor", Alt: []string{"computeCapabilityMajor"}, Feeds: []string{ingest.ColComputeMajor}},
	GPUComputeMinor: {Name: "computeMinor", Alt: []string{"computeCapabilityMinor"}, Feeds: []string{ingest.ColComputeMinor}},
}, Texts: []Column{
	GPUName: {Name: "name", Feeds: []string{ingest.ColName}, Conv: Text},
}}

// StringIds: every string of the export, by id.
var StringIds = &Table{Name: "StringIds", Cols: []Column{
	{Name: "id", Conv: Int},
}, Texts: []Column{
	{Name: "value", Conv: Text},
}}
