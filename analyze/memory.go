package analyze

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
)

// Memory is GPU memory pressure from the memory-usage records (nsys
// --cuda-memory-usage=true): live bytes per device over time, the peak and
// where it lies relative to the storms, and the allocations that failed
// with cudaErrorMemoryAllocation together with what was live then.
type Memory struct {
	Devices  []DeviceMemory `json:"devices"`
	Failures []AllocFailure `json:"allocation_failures"`
	Note     string         `json:"note"`
}

// DeviceMemory is one device's live allocations.
type DeviceMemory struct {
	Device           int64      `json:"device"`
	TotalBytes       int64      `json:"total_bytes"` // the GPU's memory, 0 when the trace does not say
	Allocations      int        `json:"allocations"`
	Frees            int        `json:"frees"`
	PeakBytes        int64      `json:"peak_bytes"` // device + managed, at the peak
	PeakDeviceBytes  int64      `json:"peak_device_bytes"`
	PeakManagedBytes int64      `json:"peak_managed_bytes"`
	PeakAtNs         int64      `json:"peak_at_ns"`
	PeakVsStorm      string     `json:"peak_vs_storm"` // "during storm episode 1", "120.0 ms before storm episode 2", "no storm"
	PeakEpisode      int        `json:"peak_episode"`  // storm episode holding the peak, 0 for none
	Series           []MemPoint `json:"series"`        // live bytes at the end of each timeline bin, only bins where they changed
}

// MemPoint is the live memory at the end of one timeline bin.
type MemPoint struct {
	StartNs      int64 `json:"start_ns"`
	DeviceBytes  int64 `json:"device_bytes"`
	ManagedBytes int64 `json:"managed_bytes"`
}

// AllocFailure is an allocation call that returned cudaErrorMemoryAllocation
// (CUDA_ERROR_OUT_OF_MEMORY, both 2).
type AllocFailure struct {
	StartNs          int64  `json:"start_ns"`
	Pid              int64  `json:"pid"`
	API              string `json:"api"`
	Device           int64  `json:"device"` // -1 when unknown
	LiveDeviceBytes  int64  `json:"live_device_bytes"`
	LiveManagedBytes int64  `json:"live_managed_bytes"`
	TotalBytes       int64  `json:"total_bytes"`   // 0 when unknown
	ApparentFree     int64  `json:"apparent_free"` // total − live device bytes; -1 when the total is unknown
	Episode          int    `json:"storm_episode"` // storm episode it fell in, 0 for none
	Explanation      string `json:"explanation"`
}

// memKind classes: managed (4 Managed, 6 Managed Static) and device memory
// (everything else except host memory: 0 Pageable, 1 Pinned).
func managedKind(k int32) bool { return k == 4 || k == 6 }
func hostKind(k int32) bool    { return k == 0 || k == 1 }

type memLive struct{ dev, man int64 }

func (a devicer) memory(md *multiData) {
	if len(md.memEvents) == 0 && len(md.failures) == 0 {
		return
	}
	total := map[int64]int64{}
	for _, g := range a.gpus {
		total[g.ID] = g.TotalMemory
	}
	type liveKey struct {
		pid, dev int64
		addr     uint64
	}
	type block struct {
		bytes int64
		kind  int32
	}
	blocks := map[liveKey]block{}
	live := map[int64]*memLive{}
	devs := map[int64]*DeviceMemory{}
	var devIDs []int64
	get := func(d int64) (*memLive, *DeviceMemory) {
		if live[d] == nil {
			live[d] = &memLive{}
			devs[d] = &DeviceMemory{Device: d, TotalBytes: total[d], PeakAtNs: a.lo}
			devIDs = append(devIDs, d)
		}
		return live[d], devs[d]
	}
	bins := TimelineBins
	binNs := max((a.hi-a.lo+int64(bins)-1)/int64(bins), 1)
	series := map[int64][]MemPoint{}
	// Walk the events in time order; a failure sees what was live before it.
	fi := 0
	failLive := make([]map[int64]memLive, len(md.failures))
	snapshot := func() map[int64]memLive {
		m := make(map[int64]memLive, len(live))
		for d, l := range live {
			m[d] = *l
		}
		return m
	}
	// bin b's value is the live memory after the last event before its end.
	record := func(upTo int64) {
		for _, d := range devIDs {
			l := live[d]
			s := series[d]
			for len(s) < bins && a.lo+int64(len(s)+1)*binNs <= upTo {
				s = append(s, MemPoint{StartNs: a.lo + int64(len(s))*binNs, DeviceBytes: l.dev, ManagedBytes: l.man})
			}
			series[d] = s
		}
	}
	for _, ev := range md.memEvents {
		for fi < len(md.failures) && md.failures[fi].t < ev.t {
			failLive[fi] = snapshot()
			fi++
		}
		if hostKind(ev.kind) {
			continue
		}
		record(ev.t)
		l, dm := get(ev.dev)
		// Bins that ended before this device's first event are zero.
		if s := series[ev.dev]; len(s) == 0 {
			for i := 0; i < bins && a.lo+int64(i+1)*binNs <= ev.t; i++ {
				s = append(s, MemPoint{StartNs: a.lo + int64(i)*binNs})
			}
			series[ev.dev] = s
		}
		k := liveKey{ev.pid, ev.dev, ev.addr}
		switch ev.op {
		case 0:
			dm.Allocations++
			b := block{ev.bytes, ev.kind}
			if old, ok := blocks[k]; ok { // re-allocated without a recorded free
				l.sub(old.bytes, old.kind)
			}
			blocks[k] = b
			l.add(b.bytes, b.kind)
		case 1:
			dm.Frees++
			if old, ok := blocks[k]; ok {
				l.sub(old.bytes, old.kind)
				delete(blocks, k)
			}
		}
		if l.dev+l.man > dm.PeakBytes {
			dm.PeakBytes, dm.PeakDeviceBytes, dm.PeakManagedBytes, dm.PeakAtNs = l.dev+l.man, l.dev, l.man, ev.t
		}
	}
	for ; fi < len(md.failures); fi++ {
		failLive[fi] = snapshot()
	}
	record(a.hi + binNs)
	m := &Memory{Devices: []DeviceMemory{}, Failures: []AllocFailure{},
		Note: "live bytes from memory-usage records: allocations and frees of the traced processes only (the CUDA context, other processes and fragmentation are not seen); managed bytes count where they were allocated, not where they reside"}
	slices.Sort(devIDs)
	for _, d := range devIDs {
		dm := devs[d]
		for i, p := range series[d] {
			if i == 0 || p.DeviceBytes != dm.Series[len(dm.Series)-1].DeviceBytes || p.ManagedBytes != dm.Series[len(dm.Series)-1].ManagedBytes {
				dm.Series = append(dm.Series, p)
			}
		}
		dm.PeakVsStorm, dm.PeakEpisode = a.relToStorms(dm.PeakAtNs)
		m.Devices = append(m.Devices, *dm)
	}
	m.Failures = a.allocFailures(md, failLive, total)
	a.res.Memory = m
}

// allocFailures describes md's failed allocations, each with what was
// live on its device before it (failLive, by failure) and the device's
// total memory (total, by device).
func (a devicer) allocFailures(md *multiData, failLive []map[int64]memLive, total map[int64]int64) []AllocFailure {
	out := []AllocFailure{}
	for i, f := range md.failures {
		af := AllocFailure{StartNs: f.t, Pid: f.pid, API: f.api, Device: -1, ApparentFree: -1}
		af.Device = a.failureDevice(f.pid, md, failLive[i])
		if af.Device >= 0 {
			l := failLive[i][af.Device]
			af.LiveDeviceBytes, af.LiveManagedBytes = l.dev, l.man
			af.TotalBytes = total[af.Device]
			if af.TotalBytes > 0 {
				af.ApparentFree = af.TotalBytes - l.dev
			}
		}
		_, af.Episode = a.relToStorms(f.t)
		af.Explanation = failureText(af)
		out = append(out, af)
	}
	return out
}

func (l *memLive) add(b int64, k int32) {
	if managedKind(k) {
		l.man += b
	} else {
		l.dev += b
	}
}

func (l *memLive) sub(b int64, k int32) { l.add(-b, k) }

// failureDevice is the device a failed allocation of pid was for: the one
// device the pid allocated on, else the one device of the trace, else -1.
func (a devicer) failureDevice(pid int64, md *multiData, live map[int64]memLive) int64 {
	seen := map[int64]bool{}
	for _, ev := range md.memEvents {
		if ev.pid == pid && !hostKind(ev.kind) {
			seen[ev.dev] = true
		}
	}
	if len(seen) == 1 {
		for d := range seen {
			return d
		}
	}
	if len(a.gpus) == 1 {
		return a.gpus[0].ID
	}
	if len(live) == 1 {
		for d := range live {
			return d
		}
	}
	return -1
}

func failureText(f AllocFailure) string {
	if f.Device < 0 {
		return fmt.Sprintf("%s failed with cudaErrorMemoryAllocation; the device is unknown", f.API)
	}
	s := fmt.Sprintf("%s failed on GPU %d with %s device and %s managed memory live", f.API, f.Device, fmtBytes(f.LiveDeviceBytes), fmtBytes(f.LiveManagedBytes))
	if f.TotalBytes > 0 {
		s += fmt.Sprintf(" of %s (%s apparently free", fmtBytes(f.TotalBytes), fmtBytes(max(f.ApparentFree, 0)))
		if f.ApparentFree > f.TotalBytes/10 {
			s += ": the memory was taken by what the records do not show (other processes, the CUDA context, the caching allocator's reserve, fragmentation) or the request was larger than what was free"
		}
		s += ")"
	}
	return s
}

// relToStorms places t relative to the storm episodes.
func (a devicer) relToStorms(t int64) (string, int) {
	if len(a.res.Episodes) == 0 {
		return "no storm", 0
	}
	eps := a.res.Episodes
	i := sort.Search(len(eps), func(i int) bool { return eps[i].EndNs > t })
	if i < len(eps) && eps[i].StartNs <= t {
		return fmt.Sprintf("during storm episode %d", eps[i].Index), eps[i].Index
	}
	type cand struct {
		d    int64
		text string
	}
	var cs []cand
	if i < len(eps) {
		cs = append(cs, cand{eps[i].StartNs - t, fmt.Sprintf("%s before storm episode %d", fmtNs(eps[i].StartNs-t), eps[i].Index)})
	}
	if i > 0 {
		cs = append(cs, cand{t - eps[i-1].EndNs, fmt.Sprintf("%s after storm episode %d", fmtNs(t-eps[i-1].EndNs), eps[i-1].Index)})
	}
	slices.SortFunc(cs, func(x, y cand) int { return cmp.Compare(x.d, y.d) })
	return cs[0].text, 0
}
