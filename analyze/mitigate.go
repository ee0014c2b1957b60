package analyze

import "fmt"

// mitigations ties advice to the evidence found.
func (a summarizer) mitigations() {
	r := &a.res
	r.Mitigations = []Mitigation{}
	// The bytes migrated on demand each way, from umSummary's aggregates.
	var htodDemand, dtohDemand int64
	for key, x := range a.migs.m {
		if !demand(key[1]) {
			continue
		}
		switch key[0] {
		case 11:
			htodDemand += x.Bytes
		case 12:
			dtohDemand += x.Bytes
		}
	}
	u := r.UnifiedMemory
	add := func(id, title, ev, act string) {
		r.Mitigations = append(r.Mitigations, Mitigation{ID: id, Title: title, Evidence: ev, Action: act})
	}
	if htodDemand > 0 || u.GPUFaults > 0 {
		add("prefetch-to-gpu", "Prefetch managed buffers to the GPU before the kernels that use them",
			fmt.Sprintf("%d GPU page faults and %s migrated host-to-device on demand", u.GPUFaults, fmtBytes(htodDemand)),
			"cudaMemPrefetchAsync(ptr, bytes, device, stream) on the kernel's stream before launch (CUDA 13: pass a cudaMemLocation)")
	}
	if dtohDemand > 0 || u.CPUFaults > 0 {
		add("keep-host-off-managed", "Keep host code off managed pages inside the step, or prefetch them to the host first",
			fmt.Sprintf("%d CPU page faults and %s migrated device-to-host on demand", u.CPUFaults, fmtBytes(dtohDemand)),
			"read results from a pinned host copy made with cudaMemcpyAsync, or cudaMemPrefetchAsync to cudaCpuDeviceId before host access")
	}
	if htodDemand > 0 && dtohDemand > 0 {
		add("mem-advise", "Stop the ping-pong with memory advice",
			"the same run migrates pages both ways on demand",
			"cudaMemAdvise(ptr, bytes, cudaMemAdviseSetPreferredLocation, gpu) plus cudaMemAdviseSetAccessedBy for the CPU, so host reads map instead of migrating")
	}
	if len(r.Episodes) > 0 || htodDemand > 0 {
		ev := fmt.Sprintf("%s migrated host-to-device on demand", fmtBytes(htodDemand))
		if len(r.Episodes) > 0 {
			ev = "the storm's host-blocking calls stalled on " + stormCause(r.Episodes, u.FaultTables || u.GPUFaults+u.CPUFaults > 0)
		}
		add("explicit-allocation", "Use explicit device allocation where the access pattern is known", ev,
			"cudaMalloc plus cudaMemcpyAsync from pinned memory, or a stream-ordered pool (cudaMallocAsync/cudaFreeAsync)")
	}
	for _, s := range r.SyncAPIs {
		switch s.Name {
		case "cudaFree", "cuMemFree":
			if per := a.perStep(s.Count); s.Count >= 10 {
				add("no-per-step-free", "Avoid cudaFree inside the step loop",
					fmt.Sprintf("%d %s calls (%s), each an implicit device-wide sync, %s in total", s.Count, s.Name, per, fmtNs(s.Total)),
					"reuse buffers, use a caching allocator, or cudaFreeAsync with a memory pool")
			}
		case "cudaMallocManaged", "cuMemAllocManaged":
			if s.Count >= 10 {
				ev := fmt.Sprintf("%d %s calls, %s in total", s.Count, s.Name, fmtNs(s.Total))
				if frees := syncCount(r.SyncAPIs, "cudaFree", "cuMemFree"); frees >= 10 {
					ev += fmt.Sprintf(", and %d frees: an allocator that hands out fresh managed memory every time", frees)
					if u.GPUFaults > 0 {
						ev += fmt.Sprintf(", whose pages fault on first touch (%d GPU page faults)", u.GPUFaults)
					}
				}
				add("hoist-managed-alloc", "Allocate managed memory once, or through a caching allocator",
					ev, "allocate at start-up and reuse; a framework allocator around cudaMallocManaged should cache and reuse blocks "+
						"(as PyTorch's caching allocator does), or use cudaMallocAsync pools")
			}
		case "cudaMemcpy", "cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpy":
			if s.Total > 0 && float64(s.Total) > 0.05*float64(a.hi-a.lo) {
				add("async-copies", "Replace synchronous copies with cudaMemcpyAsync from pinned memory",
					fmt.Sprintf("%d synchronous %s calls block the host for %s", s.Count, s.Name, fmtNs(s.Total)),
					"cudaMallocHost/cudaHostAlloc for host buffers, cudaMemcpyAsync on a stream, and one sync per step")
			}
		}
	}
	rankMitigations(r.Mitigations, r.Episodes, u.GPUFaults, u.CPUFaults)
}

// syncCount is the number of calls of the named APIs in apis.
func syncCount(apis []APIStats, names ...string) int {
	n := 0
	for _, s := range apis {
		for _, name := range names {
			if s.Name == name {
				n += s.Count
			}
		}
	}
	return n
}

// rankMitigations puts first the mitigation that addresses the API the
// storm's calls stalled in longest (cudaFree: no frees in the loop;
// cudaMallocManaged: a caching allocator; a synchronous copy: async
// copies; a synchronization: prefetch to the side that faulted more), the
// rest in their order.
func rankMitigations(ms []Mitigation, eps []Episode, gpuFaults, cpuFaults int64) {
	stalled := map[string]int64{}
	for _, e := range eps {
		for _, s := range e.StallAPIs {
			stalled[s.Name] += s.Ns
		}
	}
	top, most := "", int64(0)
	for name, ns := range stalled {
		if ns > most || (ns == most && name < top) {
			top, most = name, ns
		}
	}
	if top == "" {
		return
	}
	want := "prefetch-to-gpu"
	if cpuFaults > gpuFaults {
		want = "keep-host-off-managed"
	}
	switch top {
	case "cudaFree", "cuMemFree", "cuMemFree_v2":
		want = "no-per-step-free"
	case "cudaMallocManaged", "cuMemAllocManaged":
		want = "hoist-managed-alloc"
	case "cudaMemcpy", "cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpy", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2":
		want = "async-copies"
	}
	for i, m := range ms {
		if m.ID == want {
			copy(ms[1:i+1], ms[:i])
			ms[0] = m
			return
		}
	}
}

func (a summarizer) perStep(n int) string {
	if len(a.steps) == 0 {
		return "no steps known"
	}
	return fmt.Sprintf("%.1f per step", float64(n)/float64(len(a.steps)))
}

func fmtBytes(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

// FormatBytes formats a byte count for humans (used by reports).
func FormatBytes(b int64) string { return fmtBytes(b) }
