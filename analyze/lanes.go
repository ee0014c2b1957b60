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
	lb := &laneBins{lane: map[int64]int{}, host: a.newBins(), lo: a.lo, binNs: tl.BinNs}
	for _, d := range a.res.Devices {
		lb.lane[d.ID] = len(tl.Lanes)
		dev := d.ID
		tl.Lanes = append(tl.Lanes, TimelineLane{Pid: pid, Device: &dev, Bins: a.newBins()})
	}
	lb.lanes = tl.Lanes
	streamDev, err := a.streamDevices(lb)
	if err != nil {
		a.multiErr = err
		return
	}
	a.fillLanes(lb, streamDev)
	host := lb.host
	if slices.ContainsFunc(host, func(b TimelineBin) bool {
		return b.BlockedNs != 0 || b.Stalls != 0 || b.GPUFaults != 0 || b.CPUFaults != 0 || b.DemandBytes != 0 || b.Storm
	}) {
		h := int64(HostLane)
		tl.Lanes = append(tl.Lanes, TimelineLane{Pid: pid, Device: &h, Bins: host})
	}
}

// laneBins are a per-device timeline's bins: a lane per device, and the
// host lane for the rest.
type laneBins struct {
	lane      map[int64]int // device → index in lanes
	lanes     []TimelineLane
	host      []TimelineBin
	lo, binNs int64
}

// bin is the index of t's bin.
func (lb *laneBins) bin(t int64) int {
	return min(max(int((t-lb.lo)/lb.binNs), 0), TimelineBins-1)
}

// of returns the bins of dev's lane, the host lane's for another device.
func (lb *laneBins) of(dev int64) []TimelineBin {
	if i, ok := lb.lane[dev]; ok {
		return lb.lanes[i].Bins
	}
	return lb.host
}

// streamDevices reads the kernel, memset and memcpy tables (a second
// time) for each stream's device (twoDevices when it has two), and adds
// demand migrations' bytes to their device's lane.
func (a timeliner) streamDevices(lb *laneBins) (map[int64]int64, error) {
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
			return nil, err
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
				lb.of(dv.Value(i))[lb.bin(st.Value(i))].DemandBytes += min(max(by.Value(i), 0), maxDur)
			}
		}
	})
	return streamDev, err
}

// fillLanes puts the host-blocking calls (on their synced stream's
// device, or the process's only device with work), the faults and the
// storm episodes in their lanes.
func (a timeliner) fillLanes(lb *laneBins, streamDev map[int64]int64) {
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
		bins := lb.of(dev)
		if cl.stall {
			bins[lb.bin(cl.start)].Stalls++
		}
		for b := lb.bin(cl.start); b <= lb.bin(cl.end); b++ {
			lo, hi := max(cl.start, bins[b].StartNs), min(cl.end, bins[b].StartNs+lb.binNs)
			if hi > lo {
				bins[b].BlockedNs += hi - lo
			}
		}
	}
	for _, f := range c.gfaults {
		lb.of(int64(f.dev))[lb.bin(f.start)].GPUFaults += int64(f.n)
	}
	for _, f := range c.cfaults {
		lb.host[lb.bin(f.t)].CPUFaults++
	}
	for _, e := range a.res.Episodes {
		bins := lb.of(e.Device)
		for b := lb.bin(e.StartNs); b <= lb.bin(e.EndNs-1); b++ {
			bins[b].Storm = true
		}
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
