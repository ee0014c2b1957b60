package analyze

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/umtrace/umtrace/ingest"
)

// File is the analysis of one trace file, from one read of it: everything
// umtrace's commands take from a file. Nothing of it is left in the
// Result: a job (analyze/multirank) reads Processes and Collectives, diff
// reads Sync.
type File struct {
	// Name is the file's base name, as reports show it.
	Name string
	// Info describes the trace (the Source's Info).
	Info *ingest.TraceInfo
	// Whole is the analysis of the whole file.
	Whole *Result
	// Pids lists the file's CUDA processes (API calls or kernels),
	// sorted; filled with Options.SplitProcesses.
	Pids []int64
	// Processes holds each process's own analysis, by Pids, when the file
	// has several and Options.SplitProcesses is set; nil otherwise.
	Processes []*Result
	// Collectives is what a job needs of each process; filled with
	// Options.SplitProcesses.
	Collectives *Collectives
	// Sync holds the durations (ns) of every host-blocking call (APIs in
	// HostBlocking), keyed by API name and sorted ascending, each
	// process's CUDA start-up call (Result.Startup) left out: Result holds
	// only their summaries, diff tests the samples. Filled with
	// Options.SyncSamples.
	Sync map[string][]int64
}

// Collective is one collective call of a process (an NCCL kernel or an
// NVTX collective range), in the trace's clock.
type Collective struct {
	Name           string
	StartNs, EndNs int64
}

// Collectives is what a job needs of a file's processes, read in the
// file's one pass; every map is by pid.
type Collectives struct {
	// Kernels are the NCCL kernels (short names), in table order.
	Kernels map[int64][]Collective
	// Ranges are the NVTX collective ranges (IsCollectiveRange), in table
	// order.
	Ranges map[int64][]Collective
	// NVTXRanks is the rank each process's NVTX rows name, when one does.
	NVTXRanks map[int64]NVTXRank
	// KernelNs is the kernel time per device.
	KernelNs map[int64]map[int64]int64
}

// NVTXRank is the rank a process's NVTX rows name: that of the first row
// (in table order, marks included) whose text names one.
type NVTXRank struct {
	Rank int
	Row  int64
}

// AnalyzeFile reads src once and returns its analysis with what
// opts asks for beyond the Result: with SplitProcesses, each CUDA
// process's own analysis (when there are several) and the collectives a
// job needs; with SyncSamples, the host-blocking calls' durations. It
// returns an error wrapping ingest.ErrNoCUDA when the trace holds no CUDA
// activity.
func AnalyzeFile(src ingest.Source, opts Options) (*File, error) {
	c, err := collectCUDA(src, opts.Phases)
	if err != nil {
		return nil, err
	}
	info := src.Info()
	f := &File{Name: filepath.Base(info.Path), Info: info}
	if opts.SplitProcesses {
		f.Pids = c.cudaPids()
		f.Collectives = collectivesOf(c)
		if len(f.Pids) > 1 {
			if f.Processes, err = analyzeProcesses(c, src, f.Pids, opts); err != nil {
				return nil, err
			}
		}
	}
	out, err := analyzeCollected(c, src, opts)
	if err != nil {
		return nil, err
	}
	f.Whole, f.Sync = out.res, out.sync
	if opts.SplitProcesses {
		// The analysis is done with the records: only the NVTX ranges
		// are kept (c goes) while the collective ones are copied out of
		// them.
		rv := rangeView{c.ranges, c.rangeKeys, c.longEnds, c.rangePids}
		meta, names := c.nvtxMeta, c.nvtxNames
		c = nil
		f.Collectives.addRanges(rv, meta, names)
	}
	return f, nil
}

// analyzeProcesses analyzes each process of c on its own (as Analyze of
// ProcessSource would), from the records c holds, procsAtOnce at a time. They go
// before the whole file's analysis, which consumes the records theirs are
// copied from; each hands that analysis its merged GPU work
// (collector.takeWork), its calls' annotations (written into the file's
// calls, annotate) and its fault-driven activity (procUnion), which the
// whole analysis would compute again.
func analyzeProcesses(c *collector, src ingest.Source, pids []int64, opts Options) ([]*Result, error) {
	// Sorted once here, the records each process's are filtered from
	// come to its analysis in order.
	done := phase(opts.Phases, "sort")
	c.sortRecords()
	c.ords = c.markProcs(pids)
	done()
	results := make([]*Result, len(pids))
	errs := make([]error, len(pids))
	// The whole file's per-API tables need only its API samples, whose
	// blocks the processes' copies read and never change: they are made
	// beside the processes' analyses (alone at the end they kept one core
	// busy and the other idle).
	whole := &analysis{c: c, opts: Options{SyncSamples: opts.SyncSamples}}
	apiDone := make(chan struct{})
	go func() {
		defer close(apiDone)
		done := phase(opts.Phases, "apiStats")
		whole.apiStats()
		done()
	}()
	c.sortedWork = map[streamKey][]gpuWork{}
	c.procUnion = map[int64][]span{}
	lined := make([]bool, len(pids))
	popts := opts
	popts.SyncSamples = false // the file's samples are the whole analysis's
	parallelN(len(pids), make(chan struct{}, procsAtOnce()), func(k int) {
		pid := pids[k]
		done := phase(opts.Phases, "split")
		pc := c.process(pid)
		pc.whole = c // its analysis hands its merged work, calls and union back (analyzeCollected)
		done()
		out, err := analyzeCollected(pc, ProcessSource(src, pid), popts)
		if err != nil {
			errs[k] = err
			return
		}
		results[k] = out.res
		lined[k] = c.annotate(k, pid, out.calls)
		c.splitMu.Lock()
		defer c.splitMu.Unlock()
		if u, ok := out.union[pid]; ok {
			c.procUnion[pid] = u
		}
	})
	<-apiDone
	c.ords = nil
	if c.annotated = !slices.Contains(lined, false); !c.annotated {
		for i := range c.calls {
			cl := &c.calls[i]
			cl.overlap, cl.stream, cl.waited = 0, 0, gpuWork{}
		}
	}
	for k, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("process %d: %w", pids[k], err)
		}
	}
	c.apiTables = &apiTables{whole.res.APIs, whole.res.SyncAPIs, whole.sync}
	return results, nil
}

// procsAtOnce is how many processes' analyses run at a time. Each holds a
// copy of its process's records and runs its own phases in parallel.
// With fewer than four cores, one: on two, one at a time peaks 20 MiB
// lower (address-diverse 12M, 323 against 303 MiB) for 5-8% more wall
// time (2.82 against 3.05 s median of 7): docs/performance.md, "Fifth
// session". Else one per four cores, at most four: on 16 cores four at
// once took address-diverse 12M from 0.66 to 0.63 s (median of 3) for
// 10-20 MiB more ("Tenth session"; in the fifth, with phases less
// parallel inside, four at once had finished no sooner than two).
func procsAtOnce() int {
	if fewCores() {
		return 1
	}
	return min(4, runtime.GOMAXPROCS(0)/4)
}

// parallelN runs fn(0..n-1), at most cap(sem) at a time.
func parallelN(n int, sem chan struct{}, fn func(i int)) {
	done := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		go func() {
			sem <- struct{}{}
			fn(i)
			<-sem
			done <- struct{}{}
		}()
	}
	for i := 0; i < n; i++ {
		<-done
	}
}

// pidRank is a process's NVTXRank while collecting; rank is -1 until a
// row names one.
type pidRank struct {
	rank int
	row  int64
}

func newPidRank() *pidRank { return &pidRank{rank: -1} }

// nvtxMeta is what a job needs of an NVTX name, looked at once per name
// (collector.nvtxMeta, by name id).
type nvtxMeta struct {
	rank int  // RankFromText
	coll bool // IsCollectiveRange
}

// collectivesOf takes c's collectives but the NVTX ranges (before the
// analysis consumes c).
func collectivesOf(c *collector) *Collectives {
	cs := &Collectives{Kernels: map[int64][]Collective{}, Ranges: map[int64][]Collective{}, NVTXRanks: map[int64]NVTXRank{},
		KernelNs: map[int64]map[int64]int64{}}
	for k, ns := range c.multi.pidDev {
		m := cs.KernelNs[k.pid]
		if m == nil {
			m = map[int64]int64{}
			cs.KernelNs[k.pid] = m
		}
		m[k.dev] += ns
	}
	for p, m := range c.multi.procs {
		if len(m.nccl) > 0 {
			cs.Kernels[p] = m.nccl
		}
	}
	for p, r := range c.nvtxRanks.m {
		if r.rank >= 0 {
			cs.NVTXRanks[p] = NVTXRank{r.rank, r.row}
		}
	}
	return cs
}

// addRanges adds the NVTX collective ranges of a collector's
// ranges (named by names, described by meta), per process. It runs after
// the whole-file analysis, which leaves the ranges as collected (in table
// order): they are not held twice while it runs (millions of
// "nccl:all_reduce" ranges in some traces).
func (cs *Collectives) addRanges(rv rangeView, meta []nvtxMeta, names *rangeNameTable) {
	ranges, keys, pids := rv.ranges, rv.keys, rv.pids
	is := func(r *rangeRec) bool { id := keys[r.key].nameID; return id >= 0 && meta[id].coll }
	// Counted first: lists of their exact size.
	n := map[int64]int{}
	for i := range ranges {
		if is(&ranges[i]) {
			n[pids[keys[ranges[i].key].proc]]++
		}
	}
	for p, k := range n {
		cs.Ranges[p] = make([]Collective, 0, k)
	}
	built := map[int32]string{} // each name built once
	for i := range ranges {
		if r := &ranges[i]; is(r) {
			k := keys[r.key]
			p := pids[k.proc]
			name, ok := built[k.nameID]
			if !ok {
				name = names.name(k.nameID)
				built[k.nameID] = name
			}
			cs.Ranges[p] = append(cs.Ranges[p], Collective{name, r.start, rangeEnd(r, rv.longEnds)})
		}
	}
}

// IsCollectiveRange reports whether an NVTX range is a collective:
// NCCL's and PyTorch's ("nccl:all_reduce", "ncclAllReduce"), and ranges
// named for a collective or a barrier.
func IsCollectiveRange(name string) bool {
	if IsNCCLRange(name) {
		return true
	}
	// One scan, any ASCII case: this runs on every distinct NVTX name.
	for i := 0; i < len(name); i++ {
		var words []string
		switch name[i] | 0x20 {
		case 'a':
			words = collectiveA
		case 'b':
			words = collectiveB
		case 'r':
			words = collectiveR
		default:
			continue
		}
		for _, w := range words {
			if hasPrefixFold(name[i:], w) {
				return true
			}
		}
	}
	return false
}

// The words that make an NVTX range a collective, by first letter.
var (
	collectiveA = []string{"all_reduce", "allreduce", "all_gather", "allgather", "alltoall", "all_to_all"}
	collectiveB = []string{"broadcast", "barrier"}
	collectiveR = []string{"reduce_scatter", "reducescatter"}
)

// hasPrefixFold reports whether s starts with w (lower-case ASCII) in any
// ASCII case.
func hasPrefixFold(s, w string) bool {
	if len(s) < len(w) {
		return false
	}
	for j := 0; j < len(w); j++ {
		c := s[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[j] {
			return false
		}
	}
	return true
}

// ncclShort shortens "ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)" to
// its name without arguments.
func ncclShort(s string) string {
	if i := strings.IndexByte(s, '('); i > 0 {
		s = s[:i]
	}
	if i := strings.LastIndex(s, " "); i >= 0 {
		s = s[i+1:]
	}
	return strings.Clone(s)
}
