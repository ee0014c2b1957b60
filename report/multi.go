package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/multirank"
)

// Per-device, per-process and memory sections of one analysis, and the
// job report (many ranks).

func bytesOrDash(b int64) string {
	if b < 0 {
		return "–"
	}
	return analyze.FormatBytes(b)
}

func int64s(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func rankOf(p analyze.Process) string {
	if p.Rank < 0 {
		return "–"
	}
	return fmt.Sprintf("%d (%s)", p.Rank, p.RankSource)
}

// several reports whether the device and process tables are shown: the
// trace has more than one GPU or process (the JSON always has them).
func several(r *analyze.Result) bool { return len(r.Devices) > 1 || len(r.Processes) > 1 }

// multiSections adds the device and process tables (shown only when the
// trace has several GPUs or processes) and the GPU memory section.
func multiSections(d *Doc, r *analyze.Result) {
	if several(r) {
		d.h(2, T("Per device"))
		d.p(T("Counts per GPU id as in the export's deviceId columns; NCCL kernels are collective waits and are included in the kernel time."))
		var rows [][]Inline
		for _, v := range r.Devices {
			rows = append(rows, Cells(fmt.Sprint(v.ID), orDash(v.Name), int64s(v.Pids), fmt.Sprint(v.Kernels), msI(v.KernelNs), fmt.Sprintf("%d / %s", v.NCCLKernels, msI(v.NCCLNs)),
				fmt.Sprint(v.GPUFaults), analyze.FormatBytes(v.DemandBytes), analyze.FormatBytes(v.PrefetchBytes), analyze.FormatBytes(v.PeerBytes), msI(v.StormNs), bytesOrDash(v.PeakBytes)))
		}
		d.add(table([]string{"GPU", "name", "pids", "kernels", "kernel ms", "NCCL kernels / ms", "GPU faults", "fault-driven", "prefetched", "peer/DtoD", "storm ms", "peak memory"}, rows))
	}
	if several(r) {
		d.h(2, T("Per process"))
		var rows [][]Inline
		for _, p := range r.Processes {
			rows = append(rows, Cells(fmt.Sprint(p.Pid), orDash(p.Name), rankOf(p), int64s(p.Devices), msI(p.HostBlockedNs), fmt.Sprint(p.SyncCalls),
				ms(p.SyncP50Ns)+" / "+ms(p.SyncP95Ns)+" / "+ms(p.SyncP99Ns), fmt.Sprintf("%d GPU, %d CPU", p.GPUFaults, p.CPUFaults), msI(p.NCCLNs), msI(p.StormNs), fmt.Sprint(p.Episodes)))
		}
		d.add(table([]string{"pid", "name", "rank", "GPUs", "host blocked ms", "syncs", "sync P50/P95/P99 ms", "UM faults", "NCCL ms", "storm ms", "episodes"}, rows))
	}
	memorySection(d, r)
}

func memorySection(d *Doc, r *analyze.Result) {
	m := r.Memory
	if m == nil {
		return
	}
	d.h(2, T("GPU memory"))
	d.p(T(m.Note + "."))
	var rows [][]Inline
	t0 := r.Trace.StartNs
	for _, v := range m.Devices {
		total := "–"
		if v.TotalBytes > 0 {
			total = analyze.FormatBytes(v.TotalBytes)
		}
		rows = append(rows, Cells(fmt.Sprint(v.Device), total, analyze.FormatBytes(v.PeakBytes), analyze.FormatBytes(v.PeakDeviceBytes), analyze.FormatBytes(v.PeakManagedBytes),
			sec(v.PeakAtNs, t0), v.PeakVsStorm, fmt.Sprintf("%d / %d", v.Allocations, v.Frees)))
	}
	d.add(table([]string{"GPU", "memory", "peak live", "device", "managed", "peak at", "relative to storms", "allocs / frees"}, rows))
	if len(m.Failures) > 0 {
		d.h(3, T("Failed allocations (cudaErrorMemoryAllocation)"))
		var items []Inline
		for _, f := range m.Failures {
			items = append(items, Cat(T(sec(f.StartNs, t0)+" pid "+fmt.Sprint(f.Pid)+": "), C(f.API), T(": "+f.Explanation)))
		}
		d.add(List{items})
	}
}

// multiSummary adds the text summary's lines for devices, processes and memory.
func multiSummary(d *Doc, r *analyze.Result) {
	if several(r) {
		d.h(2, T("Per device"))
		var rows [][]Inline
		for _, v := range r.Devices {
			rows = append(rows, Cells(fmt.Sprintf("GPU %d", v.ID), short(orDash(v.Name), 28), fmt.Sprintf("%d kernels %s ms", v.Kernels, msI(v.KernelNs)), fmt.Sprintf("NCCL %s ms", msI(v.NCCLNs)),
				fmt.Sprintf("%d GPU faults", v.GPUFaults), analyze.FormatBytes(v.DemandBytes)+" fault-driven", fmt.Sprintf("storm %s ms", msI(v.StormNs))))
		}
		d.add(Table{Rows: rows})
	}
	if several(r) {
		d.h(2, T("Per process"))
		var rows [][]Inline
		for _, p := range r.Processes {
			rows = append(rows, Cells(fmt.Sprintf("pid %d", p.Pid), "rank "+rankOf(p), "GPUs "+orDash(int64s(p.Devices)), fmt.Sprintf("blocked %s ms", msI(p.HostBlockedNs)),
				fmt.Sprintf("sync P99 %s ms", ms(p.SyncP99Ns)), fmt.Sprintf("storm %s ms in %d episode(s)", msI(p.StormNs), p.Episodes)))
		}
		d.add(Table{Rows: rows})
	}
	if m := r.Memory; m != nil && len(m.Failures) > 0 {
		d.h(2, T("Failed allocations"))
		var items []Inline
		for _, f := range m.Failures {
			items = append(items, T(sec(f.StartNs, r.Trace.StartNs)+": "+f.Explanation))
		}
		d.add(List{items})
	}
}

// GenerateJob writes a job's report in the given format.
func GenerateJob(w io.Writer, j *multirank.Result, format string) error {
	switch format {
	case "text", "", "md", "markdown", "html":
		return Render(w, JobDoc(j, format == "text" || format == ""), format)
	case "json":
		return EncodeJSON(w, NewJobDocument(j))
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

func rankList(rs []multirank.RankWait) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprintf("%d: %s", r.Rank, msI(r.WaitNs))
	}
	return strings.Join(s, ", ")
}

// JobDoc is the report of a job: per-rank table, clock alignment,
// stragglers, attributions and per-step skew; brief lists the first rows
// of the long tables only.
func JobDoc(j *multirank.Result, brief bool) *Doc {
	d := &Doc{Title: fmt.Sprintf("umtrace job: %d ranks", len(j.Ranks))}
	d.h(1, T(fmt.Sprintf("umtrace job: %d ranks in %d file(s)", len(j.Ranks), len(j.Files))))
	v := Para{Text: Cat(B("Verdict: "+verdictWord(j.Verdict)), T(" — "+j.Reason))}
	if j.Verdict == analyze.VerdictStorm {
		v.Class = "storm"
	}
	d.add(v)
	doc := NewJobDocument(j)
	if j.Verdict == analyze.VerdictStorm {
		storyBlocks(d, doc.Story, doc.Mitigations, len(j.Files) > 1, true)
	}
	d.h(2, T("Ranks"))
	var rows [][]Inline
	for _, r := range j.Ranks {
		dev := "–"
		if r.Device >= 0 {
			dev = fmt.Sprint(r.Device)
		}
		rows = append(rows, []Inline{T(fmt.Sprint(r.Rank)), C(r.File), T(fmt.Sprint(r.Pid)), T(dev), T(verdictWord(r.Verdict)), T(msI(r.StormNs)),
			T(fmt.Sprintf("%d / %d", r.GPUFaults, r.CPUFaults)), T(ms(r.StepP50Ns)), T(msI(r.HostBlockedNs)), T(fmt.Sprintf("%s (%s)", msI(r.CollectiveNs), pct(r.CollectiveShare))),
			T(msI(r.WaitOnOthersNs)), T(msI(r.CausedWaitNs)), T(r.RankSource)})
	}
	rt := table([]string{"rank", "file", "pid", "GPU", "verdict", "storm ms", "GPU / CPU faults", "step P50 ms", "host blocked ms", "in collectives ms", "waited for storms ms", "caused wait ms", "rank from"}, rows)
	rt.Align[1], rt.Align[4], rt.Align[12] = Left, Left, Left // file, verdict, rank from
	d.add(rt)
	if ch, ok := jobTimelineChart(j); ok {
		d.h(2, T("Time axis"))
		d.add(ch)
	}
	c := j.Clock
	d.h(2, T("Clock alignment"))
	d.p(T(fmt.Sprintf("%s; collectives from %s. %s.", c.Method, j.Collective, c.Note)))
	if c.MatchedRanks > 0 {
		rows = nil
		for _, r := range j.Ranks {
			rows = append(rows, Cells(fmt.Sprint(r.Rank), secDur(r.ClockOffsetNs)+" s", analyze.FormatNs(float64(r.ClockCorrectionNs))))
		}
		d.add(table([]string{"rank", "session-start offset", "collective correction"}, rows))
		d.p(T(fmt.Sprintf("Residual after alignment %s, spread %s.", analyze.FormatNs(float64(c.ResidualNs)), analyze.FormatNs(float64(c.SpreadNs)))))
	}
	if len(j.Stragglers) > 0 {
		d.h(2, T("Stragglers"))
		d.p(T("A collective is attributed to the rank that arrived last when it came at least the threshold after the median rank and had a storm episode since its previous collective; the other ranks' wait in that collective is the straggler's cost."))
		rows = nil
		for _, s := range j.Stragglers {
			rows = append(rows, Cells(fmt.Sprint(s.Rank), fmt.Sprint(s.Collectives), fmt.Sprint(s.Steps), msI(s.WaitNs), fmt.Sprint(s.Episodes), fmt.Sprintf("%d / %d", s.GPUFaults, s.CPUFaults)))
		}
		d.add(table([]string{"rank", "collectives delayed", "steps", "others' wait ms", "storm episodes", "GPU / CPU faults in those steps"}, rows))
		d.h(3, T("Evidence"))
		rows = nil
		n := len(j.Attributions)
		if brief && n > 12 {
			n = 12
		}
		for _, a := range j.Attributions[:n] {
			rows = append(rows, []Inline{T(fmt.Sprint(a.Step)), C(short(a.Collective, 48)), T(fmt.Sprint(a.StragglerRank)), T(fmt.Sprint(a.Episode)), T(msI(a.LateNs)), T(msI(a.WaitNs)), T(msI(a.StallNs)), T(fmt.Sprintf("%d / %d", a.GPUFaults, a.CPUFaults)), T(rankList(a.Waiters))})
		}
		d.add(table([]string{"step", "collective", "straggler", "episode", "late by ms", "others' wait ms", "its stalls ms", "its GPU / CPU faults", "wait per rank ms"}, rows))
		if n < len(j.Attributions) {
			d.p(T(fmt.Sprintf("… %d more (--format md or json lists them all).", len(j.Attributions)-n)))
		}
	}
	if len(j.Steps) > 0 {
		d.h(2, T("Steps across ranks"))
		rows = nil
		n := len(j.Steps)
		if brief && n > 20 {
			n = 20
		}
		for _, s := range j.Steps[:n] {
			late := "–"
			if s.LateRank >= 0 {
				late = fmt.Sprintf("%d (+%s ms)", s.LateRank, msI(s.LateNs))
			}
			storms := "–"
			if len(s.StormRanks) > 0 {
				storms = fmt.Sprint(s.StormRanks)
			}
			cs := make([]string, len(s.CollectiveNs))
			for i, x := range s.CollectiveNs {
				cs[i] = msI(x)
			}
			rows = append(rows, Cells(fmt.Sprint(s.Step), fmt.Sprint(s.Ranks), fmt.Sprint(s.SlowestRank), msI(s.SlowestNs), ms(s.MedianNs), msI(s.SkewNs), late, msI(s.WaitNs), storms, strings.Join(cs, " ")))
		}
		d.add(table([]string{"step", "ranks", "slowest", "slowest ms", "median ms", "skew ms", "last at collective", "others' wait ms", "storming ranks", "in collectives ms per rank"}, rows))
		if n < len(j.Steps) {
			d.p(T(fmt.Sprintf("… %d more steps.", len(j.Steps)-n)))
		}
	}
	mitigationSection(d, doc.Mitigations, j.Verdict, len(j.Files) > 1, true)
	d.h(2, T("Per-rank episodes"))
	rows = nil
	for i, res := range j.Results {
		for _, e := range res.Episodes {
			rows = append(rows, Cells(fmt.Sprint(j.Ranks[i].Rank), fmt.Sprintf("#%d", e.Index), sec(e.StartNs, res.Trace.StartNs)+"–"+sec(e.EndNs, res.Trace.StartNs), msI(e.DurationNs),
				fmt.Sprint(e.Stalls), msI(e.ExcessNs), fmt.Sprintf("%d / %d", e.GPUFaults, e.CPUFaults), stepsCovered(e)))
		}
	}
	if len(rows) == 0 {
		d.p(T("No storm episode on any rank."))
	} else {
		d.add(table([]string{"rank", "episode", "rank time", "ms", "stalls", "excess ms", "GPU / CPU faults", "steps"}, rows))
	}
	if len(j.Warnings) > 0 {
		d.h(2, T("Warnings"))
		var items []Inline
		for _, w := range j.Warnings {
			items = append(items, T(w))
		}
		d.add(List{items})
	}
	return d
}
