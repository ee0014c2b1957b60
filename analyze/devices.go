package analyze

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/umtrace/umtrace/ingest"

	"github.com/umtrace/umtrace/analyze/internal/cache"
	"github.com/umtrace/umtrace/analyze/internal/intern"
	"github.com/umtrace/umtrace/analyze/internal/par"
	"github.com/umtrace/umtrace/analyze/internal/radix"
)

// Per-device and per-process figures: Result.Devices and Result.Processes,
// and each episode's pid and device, are filled for every trace (one row
// each for a single-process, single-GPU trace); the text, markdown and HTML
// reports show the tables only when there are several of either.

// Device is one GPU's share of the trace. Counts equal GROUP BY deviceId
// over the export's kernel, memcpy and GPU-fault tables.
type Device struct {
	ID             int64          `json:"id"`
	Name           string         `json:"name"`
	Pids           []int64        `json:"pids"` // processes with work on the device
	Kernels        int64          `json:"kernels"`
	KernelNs       int64          `json:"kernel_ns"`
	NCCLKernels    int64          `json:"nccl_kernels"` // included in Kernels
	NCCLNs         int64          `json:"nccl_ns"`      // included in KernelNs
	GPUFaultGroups int64          `json:"gpu_fault_groups"`
	GPUFaults      int64          `json:"gpu_faults"`
	Migrations     []MigrationAgg `json:"migrations"` // UM migrations by direction and cause
	DemandBytes    int64          `json:"demand_migrated_bytes"`
	PrefetchBytes  int64          `json:"prefetch_bytes"`
	CopyBytes      []NameCount    `json:"copy_bytes"` // ordinary copies by direction (Count = bytes), incl. device-to-device and peer
	PeerBytes      int64          `json:"peer_bytes"` // device-to-device and peer bytes (copy kinds 8, 10, 13)
	StormNs        int64          `json:"storm_ns"`   // storm episodes attributed to the device
	PeakBytes      int64          `json:"peak_bytes"` // peak live allocated bytes (-1: no memory-usage records)
}

// Process is one process's share of the trace.
type Process struct {
	Pid           int64   `json:"pid"`
	Name          string  `json:"name"`
	Rank          int     `json:"rank"`        // -1 when unknown
	RankSource    string  `json:"rank_source"` // env RANK, nvtx, process name, or ""
	Devices       []int64 `json:"devices"`
	HostBlockedNs int64   `json:"host_blocked_ns"` // sum of its host-blocking calls
	SyncCalls     int     `json:"sync_calls"`
	SyncP50Ns     float64 `json:"sync_p50_ns"`
	SyncP95Ns     float64 `json:"sync_p95_ns"`
	SyncP99Ns     float64 `json:"sync_p99_ns"`
	StormNs       int64   `json:"storm_ns"`
	Episodes      int     `json:"episodes"`
	GPUFaults     int64   `json:"gpu_faults"`
	CPUFaults     int64   `json:"cpu_faults"`
	NCCLKernels   int64   `json:"nccl_kernels"`
	NCCLNs        int64   `json:"nccl_ns"` // GPU time in NCCL kernels: collective waits, not compute
}

// IsNCCLKernel reports whether a kernel is an NCCL collective
// (ncclKernel_*, ncclDevKernel_*; demangled names may carry a namespace or
// a return type).
func IsNCCLKernel(name string) bool { return ingest.IsNCCLKernel(name) }

// IsNCCLRange reports whether an NVTX range marks an NCCL collective
// (PyTorch's "nccl:all_reduce", NCCL's own "ncclAllReduce").
func IsNCCLRange(name string) bool {
	return len(name) >= len(ncclRangePrefix) && strings.EqualFold(name[:len(ncclRangePrefix)], ncclRangePrefix)
}

// ncclRangePrefix begins an NCCL range's name, in any case: IsNCCLRange
// reads no more of a name than this.
const ncclRangePrefix = "nccl"

var rankPat = regexp.MustCompile(`(?i)(?:^|[^a-z_])rank[ _:=#-]*([0-9]+)`)

// RankFromEnv returns the global rank named by launcher variables, or -1.
func RankFromEnv(env map[string]string) (int, string) {
	for _, k := range []string{"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_LOCAL_RANK", "SLURM_LOCALID"} {
		if v, ok := env[k]; ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
				return n, "env " + k
			}
		}
	}
	return -1, ""
}

// RankFromText returns the rank a text names ("rank 3", "RANK=3",
// "[rank:3]"), or -1.
func RankFromText(s string) int {
	if !mayHaveRank(s) {
		return -1
	}
	m := rankPat.FindStringSubmatch(s)
	if m == nil {
		return -1
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return n
}

// mayHaveRank is a fast test that rankPat cannot match s: it needs "rank"
// in any case (its (?i) also folds 'k' to the Kelvin sign U+212A, left to
// the regexp). Hundreds of thousands of long distinct NVTX names took
// seconds through the regexp alone.
func mayHaveRank(s string) bool {
	for i := 0; i+4 <= len(s); i++ {
		if s[i]|0x20 == 'r' && s[i+1]|0x20 == 'a' && s[i+2]|0x20 == 'n' && (s[i+3]|0x20 == 'k' || s[i+3] == 0xe2) {
			return true
		}
	}
	return false
}

// devKey is one (pid, device) pair.
type devKey struct{ pid, dev int64 }

// devAcc accumulates one device's figures.
type devAcc struct {
	d    Device
	pids map[int64]bool
	mig  *migAgg
	copy map[string]int64
}

// multiData is what the per-device pass read: the taps fill one per
// process (procs), and finish puts them together for the whole trace.
type multiData struct {
	devs      map[int64]*devAcc
	pidDev    map[devKey]int64 // kernel time per (pid, device)
	pidNCCL   map[int64][2]int64
	memEvents []memEvent
	failures  []failedAlloc
	procs     map[int64]*multiData
	nccl      []Collective // a process's NCCL kernels (a job's collectives)
	mu        sync.Mutex   // the taps of different tables run concurrently
	// procDev's cache: rows of one device come in runs.
	lastID  int64
	lastDev *devAcc
}

func newMultiAcc() *multiData {
	return &multiData{devs: map[int64]*devAcc{}, pidDev: map[devKey]int64{}, pidNCCL: map[int64][2]int64{}}
}

// proc returns process p's figures.
func (md *multiData) proc(p int64) *multiData {
	x := md.procs[p]
	if x == nil {
		x = newMultiAcc()
		md.procs[p] = x
	}
	return x
}

func (md *multiData) dev(id int64) *devAcc {
	d := md.devs[id]
	if d == nil {
		d = &devAcc{d: Device{ID: id, PeakBytes: -1}, pids: map[int64]bool{}, mig: newMigAgg(), copy: map[string]int64{}}
		md.devs[id] = d
	}
	return d
}

// procDev returns device id's figures in process p's (md).
func (md *multiData) procDev(p, id int64) *devAcc {
	if md.lastDev != nil && md.lastID == id {
		return md.lastDev
	}
	d := md.devs[id]
	if d == nil {
		d = md.dev(id)
		d.pids[p] = true
	}
	md.lastID, md.lastDev = id, d
	return d
}

// merge adds x's figures to md's.
func (md *multiData) merge(x *multiData) {
	for id, s := range x.devs {
		d := md.dev(id)
		a, b := &d.d, &s.d
		a.Kernels += b.Kernels
		a.KernelNs += b.KernelNs
		a.NCCLKernels += b.NCCLKernels
		a.NCCLNs += b.NCCLNs
		a.GPUFaultGroups += b.GPUFaultGroups
		a.GPUFaults += b.GPUFaults
		a.DemandBytes += b.DemandBytes
		a.PrefetchBytes += b.PrefetchBytes
		a.PeerBytes += b.PeerBytes
		for p := range s.pids {
			d.pids[p] = true
		}
		for k, m := range s.mig.m {
			y := d.mig.m[k]
			if y == nil {
				y = &MigrationAgg{Direction: m.Direction, Cause: m.Cause}
				d.mig.m[k] = y
			}
			y.Count += m.Count
			y.Bytes += m.Bytes
			y.TimeNs += m.TimeNs
		}
		for k, v := range s.copy {
			d.copy[k] += v
		}
	}
	for k, v := range x.pidDev {
		md.pidDev[k] += v
	}
	for p, v := range x.pidNCCL {
		y := md.pidNCCL[p]
		md.pidNCCL[p] = [2]int64{y[0] + v[0], y[1] + v[1]}
	}
	md.memEvents = append(md.memEvents, x.memEvents...)
	md.failures = append(md.failures, x.failures...)
}

type memEvent struct {
	t, pid, dev, bytes int64
	addr               uint64
	kind, op           int32
}

type failedAlloc struct {
	t, pid int64
	api    string
}

// scanTable reads cols of t (all of them when src cannot skip columns).
func scanTable(src ingest.Source, t *ingest.Table, cols []string, fn func(arrow.RecordBatch)) error {
	f := func(r arrow.RecordBatch) error { fn(r); return nil }
	if cs, ok := src.(ingest.ColumnScanner); ok {
		return cs.ScanColumns(t, cols, f)
	}
	return src.Scan(t, f)
}

// allocAPIs return cudaErrorMemoryAllocation (2) / CUDA_ERROR_OUT_OF_MEMORY (2) when out of memory.
func isAllocAPI(name string) bool {
	return strings.HasPrefix(name, "cudaMalloc") || strings.HasPrefix(name, "cuMemAlloc") || strings.HasPrefix(name, "cuMemCreate") ||
		name == "cudaMallocAsync" || strings.HasPrefix(name, "cudaMemPoolCreate")
}

// newMultiData returns the accumulators of what the per-device, per-process
// and memory figures need, as taps on collect's one pass over the tables
// (each batch is read once for everything; the figures are used only when
// the trace has more than one device or process). finish completes them.
func newMultiData(names *intern.Names) (*multiData, map[*ingest.Table]tap) {
	md := newMultiAcc()
	md.procs = map[int64]*multiData{}
	// Each process's figures, through a cache of the last processes: the
	// rows of several processes interleave (shuffled exports), and a map
	// lookup per row cost more than the row.
	var recent cache.Recent[multiData]
	proc := func(p int64) *multiData {
		m := recent.Get(p)
		if m == nil {
			m = md.proc(p)
			recent.Put(p, m)
		}
		return m
	}
	taps := map[*ingest.Table]tap{}
	add := func(t *ingest.Table, cols []string, fn func(arrow.RecordBatch)) {
		taps[t] = tap{cols: cols, fn: func(r arrow.RecordBatch) {
			md.mu.Lock()
			defer md.mu.Unlock()
			fn(r)
		}}
	}
	kcols := []string{ingest.ColStart, ingest.ColEnd, ingest.ColPid, ingest.ColDeviceID, ingest.ColName}
	if names != nil {
		kcols = idCols(kcols)
	}
	add(ingest.Kernel, kcols, kernelTap(names, proc))
	if names != nil {
		// Kernel names as ids: the per-row counting where the batches
		// are read (kernelPrep), the commit under md's lock.
		kt := taps[ingest.Kernel]
		kt.fn, kt.prep = nil, kernelPrep(names, proc, &md.mu)
		taps[ingest.Kernel] = kt
	}
	// The copies' sums where the batches are read (memcpyPrep), added up
	// under md's lock.
	taps[ingest.Memcpy] = tap{cols: []string{ingest.ColStart, ingest.ColEnd, ingest.ColPid, ingest.ColDeviceID, ingest.ColBytes, ingest.ColCopyKind, ingest.ColMigCause},
		prep: memcpyPrep(proc, &md.mu)}
	add(ingest.GPUFault, []string{ingest.ColPid, ingest.ColDeviceID, ingest.ColNumFaults}, gpuFaultTap(proc))
	add(ingest.MemUsage, []string{ingest.ColStart, ingest.ColPid, ingest.ColDeviceID, ingest.ColAddress, ingest.ColBytes, ingest.ColMemKind, ingest.ColOperation}, memUsageTap(proc))
	add(ingest.API, []string{ingest.ColStart, ingest.ColPid, ingest.ColName, ingest.ColReturnValue}, failedAllocTap(proc))
	return md, taps
}

// kernelTap counts kernels per process and device and keeps the NCCL
// kernels, a job's collectives (names: kernel names as ids, nil when the
// batches carry the names).
func kernelTap(names *intern.Names, proc func(int64) *multiData) func(arrow.RecordBatch) {
	t := ingest.Kernel
	nccl := cache.NewDict(func(v string, _ bool) bool { return IsNCCLKernel(v) })
	// NCCL kernels' short names, one string per name (not a copy per
	// kernel; a cache of strings by dictionary entry would be 16 bytes
	// for each of the millions of entries a shared dictionary has).
	shortOf := map[string]string{}
	shortBySID := map[int64]string{}
	return func(r arrow.RecordBatch) {
		st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
		pid, dv := ingest.I64(r, t, ingest.ColPid), ingest.I64(r, t, ingest.ColDeviceID)
		var strs ingest.Strings
		var ids *array.Int64
		if names != nil {
			ids = ingest.I64(r, t, ingest.ColNameID)
		} else {
			strs = ingest.Str(r, t, ingest.ColName)
			nccl.Batch(strs)
		}
		for i := 0; i < int(r.NumRows()); i++ {
			p, dur := pid.Value(i), en.Value(i)-st.Value(i)
			m := proc(p)
			d := m.procDev(p, dv.Value(i))
			d.d.Kernels++
			d.d.KernelNs += dur
			var short string
			if ids != nil {
				if ids.IsNull(i) || !names.NCCL(ids.Value(i)) {
					continue
				}
				sid := ids.Value(i)
				s, ok := shortBySID[sid]
				if !ok {
					s = ncclShort(names.Get(sid))
					shortBySID[sid] = s
				}
				short = s
			} else {
				if is, _ := nccl.Get(strs, i); !is {
					continue
				}
				n := strs.Value(i)
				s, ok := shortOf[n]
				if !ok {
					s = ncclShort(n)
					shortOf[strings.Clone(n)] = s
				}
				short = s
			}
			d.d.NCCLKernels++
			d.d.NCCLNs += dur
			x := m.pidNCCL[p]
			m.pidNCCL[p] = [2]int64{x[0] + 1, x[1] + dur}
			m.nccl = append(m.nccl, Collective{short, st.Value(i), en.Value(i)})
		}
	}
}

// kernelPrep is kernelTap for kernel names as ids, its per-row work done
// on the goroutine that read the batch (ingest.PreparedScanner): each
// process and device's kernels and their time, and the NCCL kernels in
// row order; the commit adds them to the figures under mu, in storage
// order, as kernelTap does row by row (TestKernelPrep).
func kernelPrep(names *intern.Names, proc func(int64) *multiData, mu *sync.Mutex) func(arrow.RecordBatch) func() {
	t := ingest.Kernel
	shortBySID := map[int64]string{} // the commits' only
	type devCount struct{ pid, dev, n, ns int64 }
	type ncclRow struct{ pid, dev, sid, start, end int64 }
	return func(r arrow.RecordBatch) func() {
		st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
		pid, dv := ingest.I64(r, t, ingest.ColPid), ingest.I64(r, t, ingest.ColDeviceID)
		ids := ingest.I64(r, t, ingest.ColNameID)
		var counts []devCount
		var nccl []ncclRow
		j := -1
		for i := 0; i < int(r.NumRows()); i++ {
			p, d, s, e := pid.Value(i), dv.Value(i), st.Value(i), en.Value(i)
			if j < 0 || counts[j].pid != p || counts[j].dev != d {
				j = findOrAdd(&counts, func(c *devCount) bool { return c.pid == p && c.dev == d }, devCount{pid: p, dev: d})
			}
			counts[j].n++
			counts[j].ns += e - s
			if !ids.IsNull(i) && names.NCCL(ids.Value(i)) {
				nccl = append(nccl, ncclRow{p, d, ids.Value(i), s, e})
			}
		}
		return func() {
			mu.Lock()
			defer mu.Unlock()
			for _, c := range counts {
				d := proc(c.pid).procDev(c.pid, c.dev)
				d.d.Kernels += c.n
				d.d.KernelNs += c.ns
			}
			for _, k := range nccl {
				m := proc(k.pid)
				d := m.procDev(k.pid, k.dev)
				short, ok := shortBySID[k.sid]
				if !ok {
					short = ncclShort(names.Get(k.sid))
					shortBySID[k.sid] = short
				}
				dur := k.end - k.start
				d.d.NCCLKernels++
				d.d.NCCLNs += dur
				x := m.pidNCCL[k.pid]
				m.pidNCCL[k.pid] = [2]int64{x[0] + 1, x[1] + dur}
				m.nccl = append(m.nccl, Collective{short, k.start, k.end})
			}
		}
	}
}

// memcpyPrep is the memcpy table's per-device tap, its per-row work done
// on the goroutine that read the batch: per process and device, the peer,
// prefetched and demand-migrated bytes, the migrations by kind and cause
// and the copies by kind, summed in the batch (integer sums: the same whatever the order
// they are added in); the commit adds them to the figures under mu
// (TestMemcpyPrep).
func memcpyPrep(proc func(int64) *multiData, mu *sync.Mutex) func(arrow.RecordBatch) func() {
	t := ingest.Memcpy
	type migSum struct {
		kind, cause     int8
		n, bytes, nanos int64
	}
	type copySum struct {
		kind  int32
		bytes int64
	}
	type devSum struct {
		pid, dev               int64
		peer, prefetch, demand int64
		migs                   []migSum
		copies                 []copySum
	}
	return func(r arrow.RecordBatch) func() {
		st, en := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColEnd)
		pid, dv := ingest.I64(r, t, ingest.ColPid), ingest.I64(r, t, ingest.ColDeviceID)
		by, ck, mc := ingest.I64(r, t, ingest.ColBytes), ingest.I32(r, t, ingest.ColCopyKind), ingest.I32(r, t, ingest.ColMigCause)
		var sums []devSum
		j := -1
		for i := 0; i < int(r.NumRows()); i++ {
			p, d := pid.Value(i), dv.Value(i)
			if j < 0 || sums[j].pid != p || sums[j].dev != d {
				j = findOrAdd(&sums, func(s *devSum) bool { return s.pid == p && s.dev == d }, devSum{pid: p, dev: d})
			}
			s := &sums[j]
			kind, b := ck.Value(i), by.Value(i)
			if kind == 8 || kind == 10 || kind == 13 {
				s.peer += b
			}
			cause := int32(-1)
			if !mc.IsNull(i) {
				cause = mc.Value(i)
			}
			if kind >= 11 && kind <= 13 || cause >= 0 {
				k, c := int8(kind), int8(cause)
				x := &s.migs[findOrAdd(&s.migs, func(x *migSum) bool { return x.kind == k && x.cause == c }, migSum{kind: k, cause: c})]
				x.n++
				x.bytes += b
				x.nanos += en.Value(i) - st.Value(i)
				switch {
				case cause == 1:
					s.prefetch += b
				case demand(cause):
					s.demand += b
				}
				continue
			}
			s.copies[findOrAdd(&s.copies, func(x *copySum) bool { return x.kind == kind }, copySum{kind: kind})].bytes += b
		}
		return func() {
			mu.Lock()
			defer mu.Unlock()
			for _, s := range sums {
				d := proc(s.pid).procDev(s.pid, s.dev)
				d.d.PeerBytes += s.peer
				d.d.PrefetchBytes += s.prefetch
				d.d.DemandBytes += s.demand
				for _, m := range s.migs {
					x := d.mig.entry(m.kind, m.cause, copyKindName)
					x.Count += m.n
					x.Bytes += m.bytes
					x.TimeNs += m.nanos
				}
				for _, c := range s.copies {
					d.copy[copyKindName(c.kind)] += c.bytes
				}
			}
		}
	}
}

// gpuFaultTap counts GPU page-fault groups and faults per process and
// device.
func gpuFaultTap(proc func(int64) *multiData) func(arrow.RecordBatch) {
	t3 := ingest.GPUFault
	return func(r arrow.RecordBatch) {
		pid := ingest.I64(r, t3, ingest.ColPid)
		dv, nf := ingest.I64(r, t3, ingest.ColDeviceID), ingest.I64(r, t3, ingest.ColNumFaults)
		for i := 0; i < int(r.NumRows()); i++ {
			d := proc(pid.Value(i)).procDev(pid.Value(i), dv.Value(i))
			d.d.GPUFaultGroups++
			d.d.GPUFaults += nf.Value(i)
		}
	}
}

// memUsageTap keeps the memory events, per process.
func memUsageTap(proc func(int64) *multiData) func(arrow.RecordBatch) {
	t4 := ingest.MemUsage
	return func(r arrow.RecordBatch) {
		st, pid := ingest.I64(r, t4, ingest.ColStart), ingest.I64(r, t4, ingest.ColPid)
		addr := ingest.U64(r, t4, ingest.ColAddress)
		dv, by := ingest.I64(r, t4, ingest.ColDeviceID), ingest.I64(r, t4, ingest.ColBytes)
		kind, op := ingest.I32(r, t4, ingest.ColMemKind), ingest.I32(r, t4, ingest.ColOperation)
		for i := 0; i < int(r.NumRows()); i++ {
			m := proc(pid.Value(i))
			m.memEvents = append(m.memEvents, memEvent{st.Value(i), pid.Value(i), dv.Value(i), by.Value(i), addr.Value(i), kind.Value(i), op.Value(i)})
		}
	}
}

// failedAllocTap keeps the allocation calls that ran out of memory, per
// process.
func failedAllocTap(proc func(int64) *multiData) func(arrow.RecordBatch) {
	t5 := ingest.API
	return func(r arrow.RecordBatch) {
		rv := ingest.I32(r, t5, ingest.ColReturnValue)
		var names ingest.Strings
		var alloc []bool
		for i := 0; i < int(r.NumRows()); i++ {
			if rv.Value(i) != 2 {
				continue
			}
			if alloc == nil {
				names = ingest.Str(r, t5, ingest.ColName)
				alloc = make([]bool, names.DictLen())
				for k := range alloc {
					alloc[k] = isAllocAPI(names.DictValue(k))
				}
			}
			if k := names.Key(i); k >= 0 && alloc[k] {
				m := proc(ingest.I64(r, t5, ingest.ColPid).Value(i))
				m.failures = append(m.failures, failedAlloc{ingest.I64(r, t5, ingest.ColStart).Value(i), ingest.I64(r, t5, ingest.ColPid).Value(i), strings.Clone(names.Value(i))})
			}
		}
	}
}

// finish puts the processes' figures together and sorts what the taps
// collected.
func (md *multiData) finish() {
	for _, p := range slices.Sorted(maps.Keys(md.procs)) {
		x := md.procs[p]
		// A process's figures hold its rows only: a device's kernels
		// there are the process's.
		for id, d := range x.devs {
			if d.d.Kernels > 0 {
				x.pidDev[devKey{p, id}] += d.d.KernelNs
			}
		}
		x.lastDev = nil
		x.sort()
		md.merge(x)
	}
	md.sort()
}

func (md *multiData) sort() {
	slices.SortFunc(md.memEvents, func(x, y memEvent) int {
		// Frees before allocations at the same instant: the peak is not
		// inflated by a buffer replaced in place.
		return cmp.Or(cmp.Compare(x.t, y.t), cmp.Compare(y.op, x.op), cmp.Compare(x.pid, y.pid), cmp.Compare(x.dev, y.dev), cmp.Compare(x.addr, y.addr), cmp.Compare(x.bytes, y.bytes), cmp.Compare(x.kind, y.kind))
	})
	slices.SortFunc(md.failures, func(x, y failedAlloc) int {
		return cmp.Or(cmp.Compare(x.t, y.t), cmp.Compare(x.pid, y.pid), cmp.Compare(x.api, y.api))
	})
}

// readGPUs reads the GPU table (a few rows).
func readGPUs(src ingest.Source) ([]ingest.GPUInfo, error) {
	var out []ingest.GPUInfo
	t := ingest.GPU
	err := scanTable(src, t, []string{ingest.ColID, ingest.ColName, ingest.ColTotalMemory}, func(r arrow.RecordBatch) {
		id, names, mem := ingest.I64(r, t, ingest.ColID), ingest.Str(r, t, ingest.ColName), ingest.I64(r, t, ingest.ColTotalMemory)
		for i := 0; i < int(r.NumRows()); i++ {
			out = append(out, ingest.GPUInfo{ID: id.Value(i), Name: strings.Clone(names.Value(i)), TotalMemory: mem.Value(i)})
		}
	})
	slices.SortFunc(out, func(x, y ingest.GPUInfo) int { return cmp.Compare(x.ID, y.ID) })
	// Some exports list a GPU once per process: keep one row per id.
	out = slices.CompactFunc(out, func(x, y ingest.GPUInfo) bool { return x.ID == y.ID })
	return out, err
}

// addExact adds one migration of a kind and cause with bytes and
// duration that need not fit the collector's 32-bit fields.
func (g *migAgg) addExact(kind, cause int8, bytes, dur int64) {
	x := g.entry(kind, cause, copyKindName)
	x.Count++
	x.Bytes += bytes
	x.TimeNs += dur
}

func copyKindName(k int32) string {
	if n, ok := copyKindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind_%d", k)
}

// multiFigures fills Devices, Processes, the episodes' pid and device, and
// Memory. It runs after the verdict (it needs the storm episodes).
func (a devicer) multiFigures() {
	gpus, err := readGPUs(a.src)
	if err != nil {
		a.multiErr = err
		return
	}
	a.gpus = gpus
	md := a.c.multi
	a.memory(md)
	mainDev, devsOf := mainDevices(md)
	stormPid, stormDev := a.episodeOwners(a.procs, mainDev) // procs: procSums, a phase before
	a.res.Devices = a.devices(md, stormDev)
	a.res.Processes = a.processes(a.procs, devsOf, stormPid, md.pidNCCL)
}

// procAcc is one process's host-blocking calls (their count, total time
// and latency quantiles) and faults.
type procAcc struct {
	durs          []float64 // while procFigures sums
	calls         int
	total         int64
	p50, p95, p99 float64
	gf, cf        int64
}

// procSums sets the processes' figures (procFigures). They need only the
// sorted records, so they are summed beside the episodes, not in the
// serial tail of the analysis (multiFigures): 20-30 ms of sorting the
// calls' durations on the 12M synth traces.
func (a devicer) procSums() { a.procs = procFigures(a.c) }

// procFigures sums each process's host-blocking calls and faults; every
// process with threads or kernel time has an entry.
func procFigures(c *collector) map[int64]*procAcc {
	procs := map[int64]*procAcc{}
	get := func(p int64) *procAcc {
		x := procs[p]
		if x == nil {
			x = &procAcc{}
			procs[p] = x
		}
		return x
	}
	for k := range c.threads {
		get(k.pid)
	}
	for i := range c.calls {
		cl := &c.calls[i]
		x := get(cl.pid)
		x.durs = append(x.durs, float64(cl.dur()))
		x.total += cl.dur()
	}
	for _, f := range c.gfaults {
		get(int64(f.pid)).gf += int64(f.n)
	}
	for _, f := range c.cfaults {
		get(int64(f.pid)).cf++
	}
	for k := range c.multi.pidDev {
		get(k.pid)
	}
	for _, x := range procs {
		if x.calls = len(x.durs); x.calls > 0 {
			radix.Floats(x.durs, nil)
			x.p50, x.p95, x.p99 = round1(quantileF(x.durs, 0.5)), round1(quantileF(x.durs, 0.95)), round1(quantileF(x.durs, 0.99))
		}
		x.durs = nil
	}
	return procs
}

// mainDevices returns each process's main device (most kernel time, then
// most faults) and its devices.
func mainDevices(md *multiData) (mainDev map[int64]int64, devsOf map[int64][]int64) {
	mainDev, devsOf = map[int64]int64{}, map[int64][]int64{}
	for k, ns := range md.pidDev {
		devsOf[k.pid] = append(devsOf[k.pid], k.dev)
		if cur, ok := mainDev[k.pid]; !ok || ns > md.pidDev[devKey{k.pid, cur}] || (ns == md.pidDev[devKey{k.pid, cur}] && k.dev < cur) {
			mainDev[k.pid] = k.dev
		}
	}
	for id, d := range md.devs {
		for p := range d.pids {
			if !slices.Contains(devsOf[p], id) {
				devsOf[p] = append(devsOf[p], id)
			}
			if _, ok := mainDev[p]; !ok {
				mainDev[p] = id
			}
		}
	}
	return mainDev, devsOf
}

// episodeOwners sets every episode's pid and device (episodeOwner) and
// returns the storm episodes' time and count per process and time per
// device.
func (a devicer) episodeOwners(procs map[int64]*procAcc, mainDev map[int64]int64) (stormPid map[int64][2]int64, stormDev map[int64]int64) {
	stormPid = map[int64][2]int64{} // ns, count
	stormDev = map[int64]int64{}
	// Each episode's owner on its own goroutine (each walks its calls and
	// faults: 3 ms of one goroutine in the analysis' serial tail on 16
	// cores), then the sums in order.
	for _, list := range []*[]Episode{&a.res.Episodes, &a.res.Isolated} {
		es := *list
		par.Chunks(len(es), 1, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				e := &es[i]
				e.Pid, e.Device = episodeOwner(a.c, e, len(procs) == 1, procs, mainDev)
			}
		})
		if list == &a.res.Episodes {
			for i := range es {
				e := &es[i]
				x := stormPid[e.Pid]
				stormPid[e.Pid] = [2]int64{x[0] + e.DurationNs, x[1] + 1}
				stormDev[e.Device] += e.DurationNs
			}
		}
	}
	return stormPid, stormDev
}

// episodeOwner returns the pid with the most stalled time in e's window
// (the only process when there is one and none stalled), and the device
// with the most GPU faults of that pid in it (else the pid's main device).
func episodeOwner(c *collector, e *Episode, oneProc bool, procs map[int64]*procAcc, mainDev map[int64]int64) (int64, int64) {
	stalled := map[int64]int64{}
	for i := sort.Search(len(c.calls), func(i int) bool { return c.calls[i].start >= e.StartNs }); i < len(c.calls) && c.calls[i].start < e.EndNs; i++ {
		if c.calls[i].stall {
			stalled[c.calls[i].pid] += c.calls[i].dur()
		}
	}
	best, bestNs := int64(-1), int64(-1)
	for p, ns := range stalled {
		if ns > bestNs || (ns == bestNs && p < best) {
			best, bestNs = p, ns
		}
	}
	if best < 0 && oneProc {
		for p := range procs {
			best = p
		}
	}
	faults := map[int64]int64{}
	gf := c.gfaults // sorted by start (sortInputs)
	for i := sort.Search(len(gf), func(i int) bool { return gf[i].start >= e.StartNs }); i < len(gf) && gf[i].start < e.EndNs; i++ {
		if int64(gf[i].pid) == best {
			faults[int64(gf[i].dev)] += int64(gf[i].n)
		}
	}
	dv, dn := int64(-1), int64(0)
	for d, n := range faults {
		if n > dn || (n == dn && d < dv) {
			dv, dn = d, n
		}
	}
	if dv < 0 {
		if m, ok := mainDev[best]; ok {
			dv = m
		}
	}
	return best, dv
}

// devices lists every listed GPU and every device with activity, with its
// storm time (stormDev) and memory peak (Result.Memory).
func (a devicer) devices(md *multiData, stormDev map[int64]int64) []Device {
	names := map[int64]string{}
	for _, g := range a.gpus {
		names[g.ID] = g.Name
		if md.devs[g.ID] == nil {
			md.devs[g.ID] = &devAcc{d: Device{ID: g.ID, PeakBytes: -1}, pids: map[int64]bool{}, mig: newMigAgg(), copy: map[string]int64{}}
		}
	}
	peaks := map[int64]int64{}
	if a.res.Memory != nil {
		for _, m := range a.res.Memory.Devices {
			peaks[m.Device] = m.PeakBytes
		}
	}
	out := []Device{}
	for id, acc := range md.devs {
		d := acc.d
		d.Name = names[id]
		for p := range acc.pids {
			d.Pids = append(d.Pids, p)
		}
		slices.Sort(d.Pids)
		if d.Pids == nil {
			d.Pids = []int64{}
		}
		d.Migrations = acc.mig.list()
		for k, b := range acc.copy {
			d.CopyBytes = append(d.CopyBytes, NameCount{Name: k, Count: b})
		}
		slices.SortFunc(d.CopyBytes, func(x, y NameCount) int { return cmp.Compare(x.Name, y.Name) })
		if d.CopyBytes == nil {
			d.CopyBytes = []NameCount{}
		}
		d.StormNs = stormDev[id]
		if p, ok := peaks[id]; ok {
			d.PeakBytes = p
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y Device) int { return cmp.Compare(x.ID, y.ID) })
	return out
}

// nvtxRanks returns the rank named by each process's first NVTX range
// that names one. The rank a name names was found when the name was first
// seen (nvtxMeta; a regexp per range took minutes on 2.5M ranges).
func nvtxRanks(c *collector) map[int64]int {
	nvtxRank := map[int64]int{}
	for i := range c.ranges {
		r := &c.ranges[i]
		pid := c.rangePid(r)
		if _, ok := nvtxRank[pid]; !ok {
			n := -1 // a null name names no rank
			if id := c.rangeNameID(r); id >= 0 {
				n = c.nvtxMeta[id].rank // RankFromText of the name
			}
			if n >= 0 {
				nvtxRank[pid] = n
			}
		}
	}
	return nvtxRank
}

// processes lists the processes (procs) with their rank, devices, sync
// latency, storm time and NCCL kernels.
func (a devicer) processes(procs map[int64]*procAcc, devsOf map[int64][]int64, stormPid map[int64][2]int64, pidNCCL map[int64][2]int64) []Process {
	nvtxRank := nvtxRanks(a.c)
	envRank, envSrc := RankFromEnv(a.info.LaunchEnv)
	out := []Process{}
	for p, x := range procs {
		pr := Process{Pid: p, Name: a.info.ProcessNames[p], Rank: -1, HostBlockedNs: x.total, SyncCalls: x.calls, GPUFaults: x.gf, CPUFaults: x.cf,
			SyncP50Ns: x.p50, SyncP95Ns: x.p95, SyncP99Ns: x.p99}
		switch {
		case envRank >= 0 && len(procs) == 1:
			pr.Rank, pr.RankSource = envRank, envSrc
		case nvtxRank[p] > 0 || hasKey(nvtxRank, p):
			pr.Rank, pr.RankSource = nvtxRank[p], "nvtx"
		case RankFromText(pr.Name) >= 0:
			pr.Rank, pr.RankSource = RankFromText(pr.Name), "process name"
		}
		pr.Devices = slices.Clone(devsOf[p])
		slices.Sort(pr.Devices)
		if pr.Devices == nil {
			pr.Devices = []int64{}
		}
		s := stormPid[p]
		pr.StormNs, pr.Episodes = s[0], int(s[1])
		n := pidNCCL[p]
		pr.NCCLKernels, pr.NCCLNs = n[0], n[1]
		out = append(out, pr)
	}
	slices.SortFunc(out, func(x, y Process) int { return cmp.Compare(x.Pid, y.Pid) })
	return out
}

func hasKey[K comparable, V any](m map[K]V, k K) bool { _, ok := m[k]; return ok }
