package analyze

import (
	"cmp"
	"slices"
	"strings"
)

// The first CUDA runtime call of a process creates its CUDA context: on
// the H200 traces it is a cudaMalloc or cudaMallocManaged of 140-180 ms
// where the same call otherwise takes microseconds. Counted as a sync it
// alone sets the P99 of a short run and a sixth of its blocked time, so
// when it is host-blocking it is reported as start-up (Result.Startup)
// and left out of everything built from host-blocking calls: the
// headline, the sync tables by kernel, thread and stream, stall
// detection, the time axis and step blocked time, and File.Sync (what
// diff tests). The per-API tables (Result.APIs, Result.SyncAPIs) still
// count it, so that they equal nsys's cuda_api_sum.

// isRuntimeAPI reports whether name is a CUDA runtime API (the driver's
// cu* calls, such as cuModuleGetLoadingMode, come first and create no
// context).
func isRuntimeAPI(name string) bool { return strings.HasPrefix(name, "cuda") }

// splitStartup moves each process's start-up call out of c.calls into
// a.res.Startup.
func (a *analysis) splitStartup() {
	c := a.c
	a.res.Startup = []Startup{}
	drop := map[call]bool{}
	for _, f := range c.firstRT {
		if _, ok := HostBlocking[c.apiNames.At(f.api)]; !ok {
			continue
		}
		drop[*f] = true
		a.res.Startup = append(a.res.Startup, Startup{Pid: f.pid, Tid: f.tid, API: c.apiNames.At(f.api), StartNs: f.start, DurationNs: f.dur()})
	}
	slices.SortFunc(a.res.Startup, func(x, y Startup) int { return cmp.Or(cmp.Compare(x.StartNs, y.StartNs), cmp.Compare(x.Pid, y.Pid)) })
	if len(drop) == 0 {
		return
	}
	out := c.calls[:0]
	for _, cl := range c.calls {
		k := call{start: cl.start, end: cl.end, pid: cl.pid, tid: cl.tid, api: cl.api}
		if drop[k] {
			delete(drop, k) // only one call per process
			continue
		}
		out = append(out, cl)
	}
	c.calls = out
}
