package analyze

// SyncKind says how a CUDA API call blocks the host.
type SyncKind string

const (
	// Explicit syncs exist to wait for the GPU.
	Explicit SyncKind = "explicit"
	// Implicit syncs wait for the GPU as a side effect (synchronous copies
	// and memsets, frees and allocations that synchronize the device).
	Implicit SyncKind = "implicit"
)

// SyncScope says which GPU work a host-blocking call waits for.
type SyncScope int8

const (
	ScopeDevice SyncScope = iota // all prior work of the process on the device
	ScopeStream                  // the stream named by its SYNCHRONIZATION record
	ScopeEvent                   // the event's stream (SYNCHRONIZATION record when present)
	ScopeCopy                    // its own copy/memset (and the legacy stream before it)
)

type syncClass struct {
	Kind  SyncKind
	Scope SyncScope
}

// HostBlocking is the classification table of host-blocking CUDA runtime and
// driver APIs, keyed by name with the _vNNNN suffix stripped. It is the one
// place that decides what counts as a sync; docs/method.md prints it.
var HostBlocking = map[string]syncClass{
	// Explicit synchronization.
	"cudaDeviceSynchronize": {Explicit, ScopeDevice},
	"cudaThreadSynchronize": {Explicit, ScopeDevice},
	"cudaStreamSynchronize": {Explicit, ScopeStream},
	"cudaEventSynchronize":  {Explicit, ScopeEvent},
	"cuCtxSynchronize":      {Explicit, ScopeDevice},
	"cuStreamSynchronize":   {Explicit, ScopeStream},
	"cuEventSynchronize":    {Explicit, ScopeEvent},

	// Synchronous copies: return only when the copy is done, after all
	// prior work on the legacy default stream.
	"cudaMemcpy":            {Implicit, ScopeCopy},
	"cudaMemcpy2D":          {Implicit, ScopeCopy},
	"cudaMemcpy3D":          {Implicit, ScopeCopy},
	"cudaMemcpyPeer":        {Implicit, ScopeCopy},
	"cudaMemcpyToSymbol":    {Implicit, ScopeCopy},
	"cudaMemcpyFromSymbol":  {Implicit, ScopeCopy},
	"cudaMemcpyToArray":     {Implicit, ScopeCopy},
	"cudaMemcpyFromArray":   {Implicit, ScopeCopy},
	"cudaMemcpy2DToArray":   {Implicit, ScopeCopy},
	"cudaMemcpy2DFromArray": {Implicit, ScopeCopy},
	"cuMemcpy":              {Implicit, ScopeCopy},
	"cuMemcpyHtoD":          {Implicit, ScopeCopy},
	"cuMemcpyDtoH":          {Implicit, ScopeCopy},
	"cuMemcpyDtoD":          {Implicit, ScopeCopy},
	"cuMemcpyHtoA":          {Implicit, ScopeCopy},
	"cuMemcpyAtoH":          {Implicit, ScopeCopy},
	"cuMemcpy2D":            {Implicit, ScopeCopy},
	"cuMemcpy2DUnaligned":   {Implicit, ScopeCopy},
	"cuMemcpy3D":            {Implicit, ScopeCopy},
	"cuMemcpyPeer":          {Implicit, ScopeCopy},
	"cudaMemset":            {Implicit, ScopeCopy},
	"cudaMemset2D":          {Implicit, ScopeCopy},
	"cudaMemset3D":          {Implicit, ScopeCopy},
	"cuMemsetD8":            {Implicit, ScopeCopy},
	"cuMemsetD16":           {Implicit, ScopeCopy},
	"cuMemsetD32":           {Implicit, ScopeCopy},
	"cuMemsetD2D8":          {Implicit, ScopeCopy},
	"cuMemsetD2D16":         {Implicit, ScopeCopy},
	"cuMemsetD2D32":         {Implicit, ScopeCopy},

	// Frees synchronize the device before releasing memory.
	"cudaFree":       {Implicit, ScopeDevice},
	"cudaFreeHost":   {Implicit, ScopeDevice},
	"cudaFreeArray":  {Implicit, ScopeDevice},
	"cuMemFree":      {Implicit, ScopeDevice},
	"cuMemFreeHost":  {Implicit, ScopeDevice},
	"cuArrayDestroy": {Implicit, ScopeDevice},

	// Allocations may synchronize (and map/populate pages).
	"cudaMalloc":          {Implicit, ScopeDevice},
	"cudaMallocManaged":   {Implicit, ScopeDevice},
	"cudaMallocHost":      {Implicit, ScopeDevice},
	"cudaHostAlloc":       {Implicit, ScopeDevice},
	"cudaMallocPitch":     {Implicit, ScopeDevice},
	"cudaMalloc3D":        {Implicit, ScopeDevice},
	"cudaMallocArray":     {Implicit, ScopeDevice},
	"cudaHostRegister":    {Implicit, ScopeDevice},
	"cudaHostUnregister":  {Implicit, ScopeDevice},
	"cuMemAlloc":          {Implicit, ScopeDevice},
	"cuMemAllocManaged":   {Implicit, ScopeDevice},
	"cuMemAllocHost":      {Implicit, ScopeDevice},
	"cuMemHostAlloc":      {Implicit, ScopeDevice},
	"cuMemAllocPitch":     {Implicit, ScopeDevice},
	"cuMemHostRegister":   {Implicit, ScopeDevice},
	"cuMemHostUnregister": {Implicit, ScopeDevice},
}

// managedAllocAPIs allocate unified memory.
var managedAllocAPIs = map[string]bool{"cudaMallocManaged": true, "cuMemAllocManaged": true}

// Migration causes (ENUM_CUDA_UNIF_MEM_MIGRATION).
const (
	CauseUnknown       = 0
	CauseUserPrefetch  = 1
	CauseCoherence     = 2 // page fault
	CauseSpeculative   = 3 // driver prefetch triggered by faults
	CauseEviction      = 4
	CauseAccessCounter = 5
	numCauses          = 6
)

// CauseNames names migration causes in reports.
var CauseNames = [numCauses]string{"unknown", "user_prefetch", "page_fault", "speculative_prefetch", "eviction", "access_counters"}

// DemandCause reports whether a cause name (as in MigrationAgg.Cause) is
// fault-driven; reports use it so the rule lives in one place.
func DemandCause(name string) bool {
	for c, n := range CauseNames {
		if n == name {
			return demand(int32(c))
		}
	}
	return false
}

// demand reports whether a migration cause is fault-driven (or driven by
// memory pressure) rather than requested by the program.
func demand(cause int32) bool {
	return cause == CauseCoherence || cause == CauseSpeculative || cause == CauseEviction
}

// maxCopyKind is the largest ENUM_CUDA_MEMCPY_OPER value (13, unified DtoD).
const maxCopyKind = 13

// Copy kinds (ENUM_CUDA_MEMCPY_OPER).
var copyKindNames = map[int32]string{
	0: "unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
	8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "HtoD", 12: "DtoH", 13: "DtoD",
}
