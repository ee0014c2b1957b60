package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/multirank"
)

// Lane is one row group of the timeline chart: the time axis of one
// process or device (or of the whole trace). ShiftNs is added to its
// times to put them on the chart's clock (a job's clock alignment).
type Lane struct {
	Name     string
	StartNs  int64 // the lane's own clock
	BinNs    int64
	Bins     []analyze.TimelineBin
	Episodes []analyze.Episode // shaded in the lane's rows
	ShiftNs  int64
}

// ResultLane is the whole trace's time axis as one lane.
func ResultLane(name string, r *analyze.Result) Lane {
	return Lane{Name: name, StartNs: r.Timeline.StartNs, BinNs: r.Timeline.BinNs, Bins: r.Timeline.Bins, Episodes: r.Episodes}
}

// ResultLanes is one lane per process when the trace has several, or one
// per GPU (and the host lane) when one process has several (analyze's
// Timeline.Lanes), labelled with the process's name, rank and GPUs or the
// GPU's id and name; otherwise the whole trace as one lane.
func ResultLanes(r *analyze.Result) []Lane {
	if len(r.Timeline.Lanes) < 2 {
		return []Lane{ResultLane("all processes", r)}
	}
	procs := map[int64]analyze.Process{}
	for _, p := range r.Processes {
		procs[p.Pid] = p
	}
	devs := map[int64]analyze.Device{}
	for _, d := range r.Devices {
		devs[d.ID] = d
	}
	var out []Lane
	for _, tl := range r.Timeline.Lanes {
		var eps []analyze.Episode
		for _, e := range r.Episodes {
			switch {
			case tl.Device == nil:
				if e.Pid == tl.Pid {
					eps = append(eps, e)
				}
			case *tl.Device == analyze.HostLane:
				if _, ok := devs[e.Device]; !ok {
					eps = append(eps, e)
				}
			case e.Device == *tl.Device:
				eps = append(eps, e)
			}
		}
		name := processLabel(tl.Pid, procs[tl.Pid])
		if tl.Device != nil {
			name = deviceLabel(*tl.Device, devs[*tl.Device], tl.Pid, procs[tl.Pid])
		}
		out = append(out, Lane{Name: name, StartNs: r.Timeline.StartNs, BinNs: r.Timeline.BinNs, Bins: tl.Bins, Episodes: eps})
	}
	return out
}

// deviceLabel names a per-device lane: "GPU 0 NVIDIA H200", "GPU 1 NVIDIA
// H200 · no activity", or the host lane "host · pid 541 umtrace: CPU
// faults, blocked calls of no known GPU".
func deviceLabel(id int64, d analyze.Device, pid int64, p analyze.Process) string {
	if id == analyze.HostLane {
		name := fmt.Sprintf("pid %d", pid)
		if p.Name != "" {
			name += " " + p.Name
		}
		return "host · " + name + ": CPU faults, blocked calls of no known GPU"
	}
	s := fmt.Sprintf("GPU %d", id)
	if d.Name != "" {
		s += " " + d.Name
	}
	if len(d.Pids) == 0 {
		s += " · no activity"
	}
	return s
}

// perDevice reports whether r's timeline lanes are per GPU.
func perDevice(r *analyze.Result) bool {
	return len(r.Timeline.Lanes) > 0 && r.Timeline.Lanes[0].Device != nil
}

// processLabel names a process lane: "rank 1 · pid 541 umtrace · GPU 0".
func processLabel(pid int64, p analyze.Process) string {
	var parts []string
	if p.Rank >= 0 && p.Pid == pid {
		parts = append(parts, fmt.Sprintf("rank %d", p.Rank))
	}
	name := fmt.Sprintf("pid %d", pid)
	if p.Name != "" {
		name += " " + p.Name
	}
	parts = append(parts, name)
	if len(p.Devices) > 0 {
		gs := make([]string, len(p.Devices))
		for i, d := range p.Devices {
			gs[i] = fmt.Sprint(d)
		}
		parts = append(parts, "GPU "+strings.Join(gs, ","))
	}
	return strings.Join(parts, " · ")
}

// JobLanes is one lane per rank of a job, each rank's analysis put on the
// job's aligned clock (session-start offset plus collective correction).
func JobLanes(j *multirank.Result) []Lane {
	var out []Lane
	for i, r := range j.Results {
		if i >= len(j.Ranks) || len(r.Timeline.Bins) == 0 {
			continue
		}
		k := j.Ranks[i]
		name := fmt.Sprintf("rank %d · pid %d", k.Rank, k.Pid)
		if k.Device >= 0 {
			name += fmt.Sprintf(" · GPU %d", k.Device)
		}
		l := ResultLane(name, r)
		l.ShiftNs = k.ClockOffsetNs + k.ClockCorrectionNs
		out = append(out, l)
	}
	return out
}

const (
	chartW   = 960.0
	marginL  = 150.0
	marginR  = 24.0
	plotW    = chartW - marginL - marginR
	rowH     = 54.0
	rowGap   = 10.0
	axisH    = 34.0
	legendH  = 26.0
	maxMarks = 120 // step boundaries drawn; more are thinned
	laneHead = 18.0
)

// timeline is what the timeline chart draws: lanes on one clock from T0
// over SpanNs, with step starts (chart clock) marked.
type timeline struct {
	ID, Title  string
	T0, SpanNs int64
	Lanes      []Lane
	Steps      []int64
	Axis       string // the time axis's label
}

// timelineChart draws host-blocked time, page faults and fault-driven
// migration per time bin of a trace, one group of rows per lane, with
// the storm episodes shaded and the step boundaries marked.
func timelineChart(r *analyze.Result, lanes []Lane) Chart {
	var steps []int64
	for _, st := range r.Steps.Rows {
		steps = append(steps, st.StartNs)
	}
	span := r.Trace.DurationNs
	for _, l := range lanes {
		span = max(span, l.BinNs*int64(len(l.Bins)))
	}
	c := drawTimeline(timeline{ID: "timeline", Title: "Timeline of " + r.Trace.File, T0: r.Trace.StartNs, SpanNs: span, Lanes: lanes, Steps: steps, Axis: "seconds from trace start"})
	caption := fmt.Sprintf("Timeline: %d bins of %s from the trace start", len(r.Timeline.Bins), analyze.FormatNs(float64(r.Timeline.BinNs)))
	switch {
	case len(lanes) > 1 && perDevice(r):
		gpus := len(lanes)
		if last := r.Timeline.Lanes[len(r.Timeline.Lanes)-1]; *last.Device == analyze.HostLane {
			gpus--
		}
		caption += fmt.Sprintf(", one lane per GPU (%d): host-blocking calls in the lane of the GPU they waited on", gpus)
		if gpus < len(lanes) {
			caption += ", the host lane holds the CPU faults and the calls of no known GPU (host time is per process)"
		}
	case len(lanes) > 1:
		caption += fmt.Sprintf(", one lane per process (%d)", len(lanes))
	}
	caption += "; storm episodes shaded"
	if len(steps) > 0 {
		caption += "; dashed lines mark step starts"
		if every := stepEvery(len(steps)); every > 1 {
			caption += fmt.Sprintf(" (every %d steps)", every)
		}
	}
	c.Caption = caption + "."
	c.Alt = Pre{sparkTimeline(r)}
	return c
}

// jobTimelineChart draws one lane per rank on the job's aligned clock.
func jobTimelineChart(j *multirank.Result) (Chart, bool) {
	lanes := JobLanes(j)
	if len(lanes) == 0 {
		return Chart{}, false
	}
	t0, t1 := lanes[0].StartNs+lanes[0].ShiftNs, int64(0)
	for _, l := range lanes {
		t0 = min(t0, l.StartNs+l.ShiftNs)
		t1 = max(t1, l.StartNs+l.ShiftNs+l.BinNs*int64(len(l.Bins)))
	}
	c := drawTimeline(timeline{ID: "job-timeline", Title: fmt.Sprintf("Timeline of %d ranks", len(lanes)), T0: t0, SpanNs: t1 - t0, Lanes: lanes, Axis: "seconds from the first rank's start (aligned clock)"})
	c.Caption = fmt.Sprintf("Timeline: one lane per rank (%d), each rank's bins on the aligned clock (%s); its storm episodes shaded.", len(lanes), j.Clock.Method)
	c.Alt = Pre{laneSparks(lanes)} // markdown and text: the job's time axis as sparklines
	return c, true
}

// idleLane reports whether l has nothing to draw.
func idleLane(l Lane) bool {
	for _, b := range l.Bins {
		if b.BlockedNs != 0 || b.Stalls != 0 || b.GPUFaults != 0 || b.CPUFaults != 0 || b.DemandBytes != 0 {
			return false
		}
	}
	return len(l.Episodes) == 0
}

func stepEvery(n int) int { return max(1, (n+maxMarks-1)/maxMarks) }

func drawTimeline(tl timeline) Chart {
	span := float64(tl.SpanNs)
	if span <= 0 {
		span = 1
	}
	multi := len(tl.Lanes) > 1
	laneH := 3*rowH + 3*rowGap
	if multi {
		laneH += laneHead
	}
	// With several lanes, one with nothing in it (an idle GPU) is its
	// label alone.
	heights, laneTop := make([]float64, len(tl.Lanes)), make([]float64, len(tl.Lanes))
	top := legendH
	bottom := top
	for i, l := range tl.Lanes {
		heights[i] = laneH
		if multi && idleLane(l) {
			heights[i] = laneHead + rowGap
		}
		laneTop[i] = bottom
		bottom += heights[i]
	}
	h := bottom + axisH
	s := newSVG(tl.ID, tl.Title, chartW, h)
	x := func(t int64) float64 { return marginL + plotW*float64(t-tl.T0)/span }
	s.legend(marginL, 14, [][2]string{{"host blocked", colBlocked}, {"GPU faults", colGPU}, {"CPU faults", colCPU}, {"fault-driven migration", colMig}, {"storm episode", "#f6c9ca"}})
	// Storm episodes under everything: across the chart for one lane,
	// within each lane's rows for several.
	for i, l := range tl.Lanes {
		y0, y1 := top, bottom
		if multi {
			y0 = laneTop[i] + laneHead
			y1 = y0 + heights[i] - laneHead - rowGap
		}
		for _, e := range l.Episodes {
			x1, x2 := x(e.StartNs+l.ShiftNs), x(e.EndNs+l.ShiftNs)
			s.rect(x1, y0, max(x2-x1, 1.5), y1-y0, colStorm, ` fill-opacity="0.14" class="storm"`)
			s.text(x1+2, y0+9, "start", "#a33", fmt.Sprintf("storm %d", e.Index), ` font-size="9"`)
		}
	}
	// Step boundaries.
	every := stepEvery(len(tl.Steps))
	for i := 0; i < len(tl.Steps); i += every {
		xs := x(tl.Steps[i])
		s.line(xs, top, xs, bottom, "#8a8a8a", 0.6, ` stroke-dasharray="2,3" class="step"`)
	}
	y := top
	for i, l := range tl.Lanes {
		if multi {
			s.text(6, y+12, "start", "#222", l.Name, ` font-weight="bold" class="lane"`)
			y += laneHead
			if heights[i] < laneH {
				y += rowGap
				continue
			}
		}
		bx := func(i int) (float64, float64) {
			a := x(l.StartNs + l.ShiftNs + int64(i)*l.BinNs)
			b := x(l.StartNs + l.ShiftNs + int64(i+1)*l.BinNs)
			return a, max(b-a-0.8, 0.6)
		}
		series := []struct {
			name  string
			parts []func(analyze.TimelineBin) float64
			cols  []string
			unit  func(float64) string
		}{
			{"host blocked", []func(analyze.TimelineBin) float64{func(b analyze.TimelineBin) float64 { return float64(b.BlockedNs) }}, []string{colBlocked},
				func(v float64) string { return analyze.FormatNs(v) + " / bin" }},
			{"page faults", []func(analyze.TimelineBin) float64{func(b analyze.TimelineBin) float64 { return float64(b.GPUFaults) }, func(b analyze.TimelineBin) float64 { return float64(b.CPUFaults) }},
				[]string{colGPU, colCPU}, func(v float64) string { return fmtCount(v) + " / bin" }},
			{"fault-driven migr.", []func(analyze.TimelineBin) float64{func(b analyze.TimelineBin) float64 { return float64(b.DemandBytes) }}, []string{colMig},
				func(v float64) string { return analyze.FormatBytes(int64(v)) + " / bin" }},
		}
		for _, se := range series {
			var mx float64
			for _, b := range l.Bins {
				var t float64
				for _, p := range se.parts {
					t += p(b)
				}
				mx = max(mx, t)
			}
			s.text(marginL-8, y+rowH/2+4, "end", "#222", se.name, "")
			s.text(marginL-8, y+rowH/2+16, "end", "#777", "max "+se.unit(mx), ` font-size="9"`)
			s.line(marginL, y+rowH, marginL+plotW, y+rowH, colAxis, 0.8, "")
			s.line(marginL, y, marginL+plotW, y, colGrid, 0.6, "")
			if mx > 0 {
				for i, b := range l.Bins {
					bxx, bw := bx(i)
					base := y + rowH
					for k, p := range se.parts {
						v := p(b)
						hh := rowH * v / mx
						s.rect(bxx, base-hh, bw, hh, se.cols[k], "")
						base -= hh
					}
				}
			} else {
				s.text(marginL+plotW/2, y+rowH/2+4, "middle", "#999", "none recorded", "")
			}
			y += rowH + rowGap
		}
	}
	// Time axis.
	step := niceStep(span/1e9, 10)
	for v := 0.0; v <= span/1e9+1e-12; v += step {
		xv := marginL + plotW*v*1e9/span
		s.line(xv, bottom, xv, bottom+4, colAxis, 0.8, "")
		s.text(xv, bottom+16, "middle", "#333", fmtSec(v, step), "")
	}
	s.text(marginL+plotW, bottom+30, "end", "#555", tl.Axis, "")
	return Chart{ID: tl.ID, SVG: s.String()}
}

// latencyCharts draws one log-axis histogram per host-blocking API, with
// its P50, P95 and P99.
func latencyCharts(r *analyze.Result) (Chart, bool) {
	type panel struct {
		st analyze.APIStats
		h  analyze.LatencyHist
	}
	var ps []panel
	lo, hi := math.MaxInt, math.MinInt
	for i, st := range r.SyncAPIs {
		if i >= len(r.Charts.SyncHistograms) || st.Count == 0 {
			continue
		}
		h := r.Charts.SyncHistograms[i]
		if h.Name != st.Name || len(h.Counts) == 0 {
			continue
		}
		ps = append(ps, panel{st, h})
		lo, hi = min(lo, h.FirstBucket), max(hi, h.FirstBucket+len(h.Counts))
	}
	if len(ps) == 0 {
		return Chart{}, false
	}
	// Whole decades, at least two.
	per := analyze.HistBucketsPerDecade
	lo = int(math.Floor(float64(lo)/float64(per))) * per
	hi = int(math.Ceil(float64(hi)/float64(per))) * per
	if hi-lo < 2*per {
		hi = lo + 2*per
	}
	const cols, pw, ph, gap = 2, 456.0, 170.0, 16.0
	nrows := (len(ps) + cols - 1) / cols
	s := newSVG("sync-latency", "Host-blocking call latency by API", chartW, float64(nrows)*(ph+gap)+20)
	s.legend(60, 14, [][2]string{{"calls per bucket (√ scale)", colBlocked}, {"P50", colP50}, {"P95", colP95}, {"P99", colP99}})
	for i, p := range ps {
		ox := 10 + float64(i%cols)*(pw+gap+20)
		oy := 24 + float64(i/cols)*(ph+gap)
		px, py, w, hh := ox+44, oy+30, pw-54, ph-62
		s.text(ox, oy+14, "start", "#222", short(p.st.Name, 46), ` font-weight="bold"`)
		s.text(ox+pw, oy+14, "end", "#555", fmt.Sprintf("%d calls (%s)", p.st.Count, p.st.Kind), "")
		x := func(b float64) float64 { return px + w*(b-float64(lo))/float64(hi-lo) }
		xns := func(ns float64) float64 { return x(float64(per) * math.Log10(math.Max(ns, 1))) }
		var mx int64
		for _, c := range p.h.Counts {
			mx = max(mx, c)
		}
		for d := lo; d <= hi; d += per {
			xv := x(float64(d))
			s.line(xv, py, xv, py+hh, colGrid, 0.6, "")
			s.text(xv, py+hh+14, "middle", "#333", fmtDurAxis(math.Pow(10, float64(d/per))), ` font-size="10"`)
		}
		s.line(px, py+hh, px+w, py+hh, colAxis, 0.8, "")
		s.text(px-4, py+8, "end", "#777", fmtCount(float64(mx)), ` font-size="9"`)
		s.text(px-4, py+hh, "end", "#777", "0", ` font-size="9"`)
		for k, c := range p.h.Counts {
			if c == 0 {
				continue
			}
			b := float64(p.h.FirstBucket + k)
			x1, x2 := x(b), x(b+1)
			bh := hh * math.Sqrt(float64(c)/float64(mx))
			s.rect(x1+0.4, py+hh-bh, x2-x1-0.8, bh, colBlocked, "")
		}
		for j, q := range []struct {
			name string
			v    float64
			col  string
		}{{"P50", p.st.Median, colP50}, {"P95", p.st.P95, colP95}, {"P99", p.st.P99, colP99}} {
			xv := xns(q.v)
			s.line(xv, py-2, xv, py+hh, q.col, 1.6, "")
			// Labels stack down the plot's top, on the side with room.
			anchor, lx := "start", xv+4
			if xv > px+w*0.7 {
				anchor, lx = "end", xv-4
			}
			s.text(lx, py+8+float64(j)*11, anchor, q.col, q.name+" "+analyze.FormatNs(q.v), ` font-size="9.5" font-weight="bold"`)
		}
	}
	return Chart{ID: "sync-latency", Caption: "Host-blocking call latency per API: log-bucketed durations (10 buckets per decade), bar height √count; P50/P95/P99 marked.", SVG: s.String()}, true
}

// maxBars is the most bars the step chart draws; longer runs are grouped.
const maxBars = 240

// stepChart draws each step's time stacked as compute (not host-blocked),
// host-blocked and fault stall (UM-stalled host-blocking calls).
func stepChart(r *analyze.Result) (Chart, bool) {
	rows := r.Steps.Rows
	if len(rows) == 0 || len(r.Charts.StepStallNs) != len(rows) {
		return Chart{}, false
	}
	group := max(1, (len(rows)+maxBars-1)/maxBars)
	type bar struct {
		compute, blocked, stall float64
		storm, warm             bool
		first                   int
	}
	var bars []bar
	var mx float64
	for i := 0; i < len(rows); i += group {
		var b bar
		b.first = rows[i].Index
		n := 0
		for j := i; j < min(i+group, len(rows)); j++ {
			st := rows[j]
			stall := float64(min(r.Charts.StepStallNs[j], st.BlockedNs))
			b.stall += stall
			b.blocked += float64(st.BlockedNs) - stall
			b.compute += float64(max(st.DurationNs-st.BlockedNs, 0))
			b.storm = b.storm || st.Episode > 0
			b.warm = b.warm || st.Warmup
			n++
		}
		b.compute, b.blocked, b.stall = b.compute/float64(n), b.blocked/float64(n), b.stall/float64(n)
		if !b.warm { // the warm-up step does not set the scale: it would flatten the rest
			mx = max(mx, b.compute+b.blocked+b.stall)
		}
		bars = append(bars, b)
	}
	if mx == 0 {
		for _, b := range bars {
			mx = max(mx, b.compute+b.blocked+b.stall)
		}
	}
	const ph = 170.0
	h := legendH + ph + axisH + 14
	s := newSVG("steps", "Step time split", chartW, h)
	s.legend(marginL, 14, [][2]string{{"compute (not host-blocked)", colCompute}, {"host-blocked", colBlocked}, {"fault stall (UM-stalled syncs)", colGPU}, {"in a storm episode", colStorm}})
	py := legendH + 6
	yv := func(v float64) float64 { return py + ph - ph*v/math.Max(mx, 1) }
	tick := niceStep(mx/1e6, 4)
	for v := 0.0; v <= mx/1e6+1e-9; v += tick {
		s.line(marginL, yv(v*1e6), marginL+plotW, yv(v*1e6), colGrid, 0.6, "")
		s.text(marginL-6, yv(v*1e6)+4, "end", "#333", f1(v)+" ms", "")
	}
	s.text(marginL-6, py-8, "end", "#555", "step time", "")
	bw := plotW / float64(len(bars))
	for i, b := range bars {
		x := marginL + float64(i)*bw
		w := math.Max(bw-math.Min(1, bw*0.2), 0.5)
		base := py + ph
		tot, clip := b.compute+b.blocked+b.stall, 1.0
		if tot > mx { // the warm-up, drawn to the top of the scale and labelled
			clip = mx / tot
			s.text(x+w/2, py-8, "middle", "#555", "warm-up "+f1(tot/1e6)+" ms", ` font-size="10"`)
		}
		for _, part := range []struct {
			v   float64
			col string
		}{{b.compute, colCompute}, {b.blocked, colBlocked}, {b.stall, colGPU}} {
			hh := ph * part.v * clip / math.Max(mx, 1)
			s.rect(x, base-hh, w, hh, part.col, "")
			base -= hh
		}
		if b.storm {
			s.rect(x, py+ph+3, w, 4, colStorm, ` class="storm"`)
		}
	}
	s.line(marginL, py+ph, marginL+plotW, py+ph, colAxis, 0.8, "")
	ti := int(math.Max(1, niceStep(float64(len(rows)), 10)))
	for i := 0; i < len(rows); i += ti {
		x := marginL + (float64(i)/float64(group)+0.5)*bw
		s.text(x, py+ph+20, "middle", "#333", fmt.Sprint(rows[i].Index), "")
	}
	label := "step index"
	if group > 1 {
		label = fmt.Sprintf("step index (each bar: mean of %d steps)", group)
	}
	s.text(marginL+plotW, py+ph+34, "end", "#555", label, "")
	return Chart{ID: "steps", Caption: "Per-step time: compute, host-blocked and fault stall; a red mark under a bar: the step lies in a storm episode.", SVG: s.String()}, true
}
