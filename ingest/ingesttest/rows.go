package ingesttest

import "github.com/umtrace/umtrace/ingest"

// The rows of a scenario, with the columns analysis reads; With adds
// others. Times are ns in the trace's clock.

// APICall is a CUDA runtime call of process pid, thread tid.
func APICall(pid, tid int64, name string, start, end int64) Row {
	return Row{ingest.ColPid: pid, ingest.ColTid: tid, ingest.ColName: name, ingest.ColRawName: name, ingest.ColStart: start, ingest.ColEnd: end}
}

// KernelRun is a kernel of process pid on device dev, stream stream.
func KernelRun(pid, dev, stream int64, name string, start, end int64) Row {
	return Row{ingest.ColPid: pid, ingest.ColDeviceID: dev, ingest.ColStreamID: stream, ingest.ColName: name, ingest.ColShortName: name, ingest.ColStart: start, ingest.ColEnd: end}
}

// Migration is a unified-memory host-to-device migration (copy kind 11)
// of bytes at addr, caused by a page fault (migration cause 2).
func Migration(pid, dev int64, start, end, bytes int64, addr uint64) Row {
	return Row{ingest.ColPid: pid, ingest.ColDeviceID: dev, ingest.ColStart: start, ingest.ColEnd: end, ingest.ColBytes: bytes,
		ingest.ColCopyKind: int32(11), ingest.ColMigCause: int32(2), ingest.ColVirtAddr: addr, ingest.ColCopyCount: int64(1)}
}

// GPUFaultGroup is a group of n GPU page faults (read access) at addr.
func GPUFaultGroup(pid, dev int64, start, end int64, addr uint64, n int64) Row {
	return Row{ingest.ColPid: pid, ingest.ColDeviceID: dev, ingest.ColStart: start, ingest.ColEnd: end, ingest.ColAddress: addr,
		ingest.ColNumFaults: n, ingest.ColAccessType: int32(1)}
}

// Range is an NVTX push/pop range (event type 59) of thread tid.
func Range(pid, tid int64, name string, start, end int64) Row {
	return Row{ingest.ColPid: pid, ingest.ColTid: tid, ingest.ColName: name, ingest.ColEventType: int32(59), ingest.ColStart: start, ingest.ColEnd: end}
}

// Call adds APICall(pid, tid, name, start, end) to the API table.
func (tr *Trace) Call(pid, tid int64, name string, start, end int64) *Trace {
	return tr.Add(ingest.API, APICall(pid, tid, name, start, end))
}

// Kernel adds KernelRun(pid, dev, stream, name, start, end).
func (tr *Trace) Kernel(pid, dev, stream int64, name string, start, end int64) *Trace {
	return tr.Add(ingest.Kernel, KernelRun(pid, dev, stream, name, start, end))
}

// Migrate adds Migration(pid, dev, start, end, bytes, addr).
func (tr *Trace) Migrate(pid, dev int64, start, end, bytes int64, addr uint64) *Trace {
	return tr.Add(ingest.Memcpy, Migration(pid, dev, start, end, bytes, addr))
}

// GPUFault adds GPUFaultGroup(pid, dev, start, end, addr, n).
func (tr *Trace) GPUFault(pid, dev int64, start, end int64, addr uint64, n int64) *Trace {
	return tr.Add(ingest.GPUFault, GPUFaultGroup(pid, dev, start, end, addr, n))
}

// NVTXRange adds Range(pid, tid, name, start, end).
func (tr *Trace) NVTXRange(pid, tid int64, name string, start, end int64) *Trace {
	return tr.Add(ingest.NVTX, Range(pid, tid, name, start, end))
}
