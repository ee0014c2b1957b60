package analyze

import (
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/ingest"
)

// HostLane is TimelineLane.Device of a per-device timeline's host lane:
// the CPU faults and the host-blocking calls whose device is not known.
const HostLane = -1

// deviceLanes splits the timeline by GPU when a trace of one process has
// several GPUs (listed in the export or with activity): one lane per
// device, in id order, with its GPU faults and fault-driven migrations
// (the rows' deviceId) and the host-blocking calls that waited on it (the
// synced stream's device, from the kernels', copies' and memsets'
// streamId/deviceId; a call with no stream, such as cudaDeviceSynchronize,
// goes to the process's only device with work when it has one). CPU faults
// and the calls left over belong to the process, not a device: they make
// a last lane, Device HostLane, present only when it holds something. The
// lanes add up to Timeline.Bins. It runs after multiFigures (it needs the
// devices and the episodes' device); it reads the kernel, memcpy and memset
// tables a second time, which only such traces pay.
func (a timeliner) deviceLanes() {
	tl := &a.res.Timeline
	if len(tl.Lanes) > 0 || tl.BinNs <= 0 || len(a.res.Devices) < 2 || a.multiErr != nil {
		return
	}
	pids := map[int64]bool{}
	for k := range a.c.threads {
		pids[k.pid] = true
	}
	if len(pids) != 1 {
		return
	}
	pid := slices.Collect(maps.Keys(pids))[0]
	lane := map[int64]int{}
	for _, d := range a.res.Devices {
		lane[d.ID] = len(tl.Lanes)
		dev := d.ID
		tl.Lanes = append(tl.Lanes, TimelineLane{Pid: pid, Device: &dev, Bins: a.newBins()})
	}
	host := a.newBins()
	bin := func(t int64) int {
		return min(max(int((t-a.lo)/tl.BinNs), 0), TimelineBins-1)
	}
	binsOf := func(dev int64) []TimelineBin {
		if i, ok := lane[dev]; ok {
			return tl.Lanes[i].Bins
		}
		return host
	}

	// Streams to devices; a stream seen on two devices is left unknown.
	const twoDevices = -2
	streamDev := map[int64]int64{}
	see := func(stream, dev int64) {
		if d, ok := streamDev[stream]; !ok {
			streamDev[stream] = dev
		} else if d != dev {
			streamDev[stream] = twoDevices
		}
	}
	work := func(t *ingest.Table) func(arrow.RecordBatch) {
		return func(r arrow.RecordBatch) {
			strm, dv := ingest.I64(r, t, ingest.ColStreamID), ingest.I64(r, t, ingest.ColDeviceID)
			for i := 0; i < int(r.NumRows()); i++ {
				see(strm.Value(i), dv.Value(i))
			}
		}
	}
	for _, t := range []*ingest.Table{ingest.Kernel, ingest.Memset} {
		if err := scanTable(a.src, t, []string{ingest.ColStreamID, ingest.ColDeviceID}, work(t)); err != nil {
			a.multiErr = err
			return
		}
	}
	// Memcpy: ordinary copies map streams, UM migrations (copy kinds
	// 11-13, as collect reads them) add their bytes to their device.
	t := ingest.Memcpy
	err := scanTable(a.src, t, []string{ingest.ColStart, ingest.ColStreamID, ingest.ColDeviceID, ingest.ColBytes, ingest.ColCopyKind, ingest.ColMigCause}, func(r arrow.RecordBatch) {
		st, strm, dv := ingest.I64(r, t, ingest.ColStart), ingest.I64(r, t, ingest.ColStreamID), ingest.I64(r, t, ingest.ColDeviceID)
		by, kind, cause := ingest.I64(r, t, ingest.ColBytes), ingest.I32(r, t, ingest.ColCopyKind), ingest.I32(r, t, ingest.ColMigCause)
		for i := 0; i < int(r.NumRows()); i++ {
			if kd := kind.Value(i); kd < 11 || kd > 13 {
				see(strm.Value(i), dv.Value(i))
				continue
			}
			cv := int32(-1)
			if !cause.IsNull(i) {
				cv = 0
				if v := cause.Value(i); v >= 0 && v < numCauses {
					cv = v
				}
			}
			if demand(cv) {
				// The collector's 32-bit byte count, so that the lanes
				// add up to the trace's bins.
				binsOf(dv.Value(i))[bin(st.Value(i))].DemandBytes += min(max(by.Value(i), 0), maxDur)
			}
		}
	})
	if err != nil {
		a.multiErr = err
		return
	}
	// The process's devices with work: the only one takes the calls that
	// synced no known stream.
	active := map[int64]bool{}
	for _, d := range streamDev {
		if d >= 0 {
			active[d] = true
		}
	}
	only := int64(HostLane)
	if len(active) == 1 {
		for d := range active {
			only = d
		}
	}
	c := a.c
	for i := range c.calls {
		cl := &c.calls[i]
		dev := only
		if cl.stream >= 0 {
			if d, ok := streamDev[cl.stream]; ok && d >= 0 {
				dev = d
			}
		}
		bins := binsOf(dev)
		if cl.stall {
			bins[bin(cl.start)].Stalls++
		}
		for b := bin(cl.start); b <= bin(cl.end); b++ {
			lo, hi := max(cl.start, bins[b].StartNs), min(cl.end, bins[b].StartNs+tl.BinNs)
			if hi > lo {
				bins[b].BlockedNs += hi - lo
			}
		}
	}
	for _, f := range c.gfaults {
		binsOf(f.dev)[bin(f.start)].GPUFaults += f.n
	}
	for _, f := range c.cfaults {
		host[bin(f.t)].CPUFaults++
	}
	for _, e := range a.res.Episodes {
		bins := binsOf(e.Device)
		for b := bin(e.StartNs); b <= bin(e.EndNs-1); b++ {
			bins[b].Storm = true
		}
	}
	if slices.ContainsFunc(host, func(b TimelineBin) bool {
		return b.BlockedNs != 0 || b.Stalls != 0 || b.GPUFaults != 0 || b.CPUFaults != 0 || b.DemandBytes != 0 || b.Storm
	}) {
		h := int64(HostLane)
		tl.Lanes = append(tl.Lanes, TimelineLane{Pid: pid, Device: &h, Bins: host})
	}
}

// newBins returns TimelineBins empty bins on the timeline's edges.
func (a timeliner) newBins() []TimelineBin {
	bins := make([]TimelineBin, TimelineBins)
	for i := range bins {
		bins[i].StartNs = a.lo + int64(i)*a.res.Timeline.BinNs
	}
	return bins
}
