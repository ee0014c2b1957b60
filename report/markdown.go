package report

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/umtrace/umtrace/analyze"
)

type mdw struct{ b *bytes.Buffer }

func (w mdw) p(format string, a ...any) { fmt.Fprintf(w.b, format, a...) }

func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

func (w mdw) table(head []string, rows [][]string) {
	w.p("| %s |\n|", strings.Join(head, " | "))
	for i := range head {
		if i == 0 {
			w.p("---|")
		} else {
			w.p("---:|")
		}
	}
	w.p("\n")
	for _, r := range rows {
		cs := make([]string, len(r))
		for i, c := range r {
			cs[i] = cell(c)
		}
		w.p("| %s |\n", strings.Join(cs, " | "))
	}
	w.p("\n")
}

func distRow(name, kind string, d analyze.Dist) []string {
	r := []string{name}
	if kind != "-" {
		r = append(r, kind)
	}
	return append(r, fmt.Sprint(d.Count), msI(d.Total), msI(d.Min), ms(d.Median), ms(d.P95), ms(d.P99), msI(d.Max), ms(d.Mean), ms(d.StdDev))
}

var distHead = []string{"count", "total ms", "min ms", "P50 ms", "P95 ms", "P99 ms", "max ms", "mean ms", "stddev ms"}

func writeMarkdown(b *bytes.Buffer, r *analyze.Result) {
	w := mdw{b}
	h := r.Headline
	t0 := r.Trace.StartNs
	w.p("# umtrace report: `%s`\n\n", r.Trace.File)
	w.p("**Verdict: %s** — %s\n\n", verdictWord(r.Verdict), r.Reason)
	w.table([]string{"headline", "value"}, [][]string{
		{"storm time", fmt.Sprintf("%s ms (%s of the trace) in %d episode(s)", msI(h.StormTimeNs), pct(h.StormShare), len(r.Episodes))},
		{"excess blocked time in storms", msI(h.StormExcessNs) + " ms"},
		{"host blocked", fmt.Sprintf("%s ms (%s of the trace) in %d calls: %d explicit, %d implicit syncs", msI(h.BlockedNs), pct(h.BlockedShare), h.HostBlocking, h.ExplicitSyncs, h.ImplicitSyncs)},
		{"sync latency P50 / P99", fmt.Sprintf("%s / %s ms", ms(h.SyncP50Ns), ms(h.SyncP99Ns))},
		{"CUDA start-up", orDash(startupLine(r))},
		{"UM page faults", fmt.Sprintf("%d GPU, %d CPU (%.1f /s)", h.GPUFaults, h.CPUFaults, h.FaultsPerSec)},
		{"UM migrated", fmt.Sprintf("%s (%s fault-driven)", analyze.FormatBytes(h.MigratedBytes), analyze.FormatBytes(h.DemandMigBytes))},
		{"step time P50 / P99", stepHeadline(r)},
		{"trace", fmt.Sprintf("%s ms, %s %s (export schema %s), GPUs: %s", msI(r.Trace.DurationNs), r.Trace.Producer, orDash(r.Trace.ProductVersion), orDash(r.Trace.SchemaVersion), orDash(strings.Join(r.Trace.GPUs, ", ")))},
	})

	if len(r.Timeline.Bins) > 0 {
		w.p("## Time axis\n\n```\n")
		writeTimeline(w.b, r, "")
		w.p("```\n\n")
	}

	if len(r.Episodes) > 0 {
		w.p("## Storm episodes\n\nTimes are seconds from the trace start (%d ns in the trace clock).\n\n", t0)
		var rows [][]string
		for _, e := range r.Episodes {
			rows = append(rows, episodeRow(e, t0))
		}
		w.table(episodeHead, rows)
		for _, e := range r.Episodes {
			writeEvidence(w, e, t0)
		}
	}

	w.p("## Sync latency\n\nHost-blocking CUDA calls, explicit and implicit (classification in the method note).\n\n")
	var rows [][]string
	for _, s := range r.SyncAPIs {
		rows = append(rows, distRow(s.Name, string(s.Kind), s.Dist))
	}
	w.table(append([]string{"API", "kind"}, distHead...), rows)
	w.p("### By GPU work waited on\n\nThe last kernel or copy on the synced stream (or, for device-wide syncs, on any stream) that finished while the call blocked.\n\n")
	w.table(append([]string{"GPU work"}, distHead...), groupRows(r.SyncByKernel))
	w.p("### By thread\n\n")
	w.table(append([]string{"thread"}, distHead...), groupRows(r.SyncByThread))
	w.p("### By stream\n\n")
	w.table(append([]string{"stream"}, distHead...), groupRows(r.SyncByStream))

	writeUM(w, r)
	writeSteps(w, r)

	if len(r.Mitigations) > 0 {
		w.p("## Mitigations\n\n")
		for _, m := range r.Mitigations {
			w.p("- **%s.** Evidence: %s. Try: %s.\n", m.Title, m.Evidence, m.Action)
		}
		w.p("\n")
	}
	writeSanitizer(w, r)
	if len(r.Isolated) > 0 {
		w.p("## Isolated stalls\n\nUM stalls too few or too short to call a storm (first-touch warm-up often looks like this).\n\n")
		var rows [][]string
		for _, e := range r.Isolated {
			rows = append(rows, episodeRow(e, t0))
		}
		w.table(episodeHead, rows)
	}
	w.p("## All CUDA API calls\n\n")
	rows = nil
	for _, s := range r.APIs {
		rows = append(rows, distRow(s.Name, "-", s.Dist))
	}
	w.table(append([]string{"API"}, distHead...), rows)
	if len(r.Kernels) > 0 {
		w.p("## Kernels\n\n")
		rows = nil
		for _, k := range r.Kernels {
			rows = append(rows, distRow(short(k.Name, 100), "-", k.Dist))
		}
		w.table(append([]string{"kernel"}, distHead...), rows)
	}
	if len(r.Warnings) > 0 {
		w.p("## Warnings\n\n")
		for _, s := range r.Warnings {
			w.p("- %s\n", s)
		}
		w.p("\n")
	}
	writeMethod(w, r)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func stepHeadline(r *analyze.Result) string {
	if r.Steps.Count == 0 {
		return "no steps (" + r.Steps.Source + ")"
	}
	return fmt.Sprintf("%s / %s ms over %d `%s` ranges", ms(r.Headline.StepP50Ns), ms(r.Headline.StepP99Ns), r.Steps.Count, r.Steps.Range)
}

var episodeHead = []string{"#", "start", "end", "duration ms", "stalls", "syncs", "blocked ms", "excess ms", "GPU faults", "CPU faults", "fault-driven migrated", "steps"}

func episodeRow(e analyze.Episode, t0 int64) []string {
	return []string{fmt.Sprint(e.Index), sec(e.StartNs, t0), sec(e.EndNs, t0), msI(e.DurationNs), fmt.Sprint(e.Stalls), fmt.Sprint(e.Syncs),
		msI(e.BlockedNs), msI(e.ExcessNs), fmt.Sprint(e.GPUFaults), fmt.Sprint(e.CPUFaults), analyze.FormatBytes(demandBytes(e.Migrations)), stepsCovered(e)}
}

func writeEvidence(w mdw, e analyze.Episode, t0 int64) {
	w.p("### Episode %d: %s – %s\n\n", e.Index, sec(e.StartNs, t0), sec(e.EndNs, t0))
	var stalls []string
	for _, s := range e.StallAPIs {
		stalls = append(stalls, fmt.Sprintf("%s ×%d (%s ms)", s.Name, s.Count, msI(s.Ns)))
	}
	w.p("- Stalled calls: %s; %d host-blocking calls in the window blocked %s ms, %s ms over baseline (%s).\n", strings.Join(stalls, ", "), e.Syncs, msI(e.BlockedNs), msI(e.ExcessNs), e.BaselineNote)
	w.p("- Page faults: %d GPU faults in %d fault groups, %d CPU faults.\n", e.GPUFaults, e.GPUFaultGroups, e.CPUFaults)
	if len(e.CPUFaultSites) > 0 {
		var s []string
		for _, c := range e.CPUFaultSites {
			s = append(s, fmt.Sprintf("`%s` ×%d", c.Name, c.Count))
		}
		w.p("- CPU fault sites: %s.\n", strings.Join(s, ", "))
	}
	w.p("\n")
	if len(e.Migrations) > 0 {
		var rows [][]string
		for _, m := range e.Migrations {
			rows = append(rows, []string{m.Direction, m.Cause, fmt.Sprint(m.Count), analyze.FormatBytes(m.Bytes), msI(m.TimeNs)})
		}
		w.table([]string{"migration", "cause", "count", "bytes", "time ms"}, rows)
	}
	if len(e.Kernels) > 0 {
		var rows [][]string
		for _, k := range e.Kernels {
			calm, slow := "–", "–"
			if k.CalmMedianNs > 0 {
				calm, slow = ms(k.CalmMedianNs), fmt.Sprintf("%.2f×", k.Slowdown)
			}
			rows = append(rows, []string{short(k.Name, 80), fmt.Sprint(k.Count), ms(k.MedianNs), calm, slow})
		}
		w.table([]string{"kernel in episode", "runs", "median ms", "calm median ms", "slowdown"}, rows)
	}
}

func groupRows(gs []analyze.Group) [][]string {
	var rows [][]string
	for _, g := range gs {
		rows = append(rows, distRow(short(g.Key, 80), "-", g.Dist))
	}
	return rows
}

func writeUM(w mdw, r *analyze.Result) {
	u := r.UnifiedMemory
	w.p("## Unified memory\n\n")
	w.p("- Managed allocations: %d calls", u.ManagedAllocs)
	if u.ManagedBytes > 0 {
		w.p(", %s recorded", analyze.FormatBytes(u.ManagedBytes))
	}
	w.p(".\n- Page faults: %d GPU faults in %d groups (%.1f /s), %d CPU faults (%.1f /s)", u.GPUFaults, u.GPUFaultGroups, u.GPUFaultsPerSec, u.CPUFaults, u.CPUFaultsPerSec)
	if !u.FaultTables {
		w.p(" — no page-fault tables in this export")
	}
	w.p(".\n- Migrated: %s (%s/s).\n\n", analyze.FormatBytes(u.MigratedBytes), analyze.FormatBytes(int64(u.MigratedBytesPerSec)))
	if len(u.Migrations) > 0 {
		var rows [][]string
		for _, m := range u.Migrations {
			rows = append(rows, []string{m.Direction, m.Cause, fmt.Sprint(m.Count), analyze.FormatBytes(m.Bytes), msI(m.TimeNs)})
		}
		w.table([]string{"migration", "cause", "count", "bytes", "time ms"}, rows)
	}
	if len(u.TopRanges) > 0 {
		var rows [][]string
		for _, a := range u.TopRanges {
			rows = append(rows, []string{"`" + a.Start + "`", analyze.FormatBytes(a.Bytes), a.Label, fmt.Sprint(a.GPUFaults), fmt.Sprint(a.CPUFaults), fmt.Sprint(a.Migrations), analyze.FormatBytes(a.MigratedBytes)})
		}
		w.p("Top address ranges:\n\n")
		w.table([]string{"range start", "size", "kind", "GPU faults", "CPU faults", "migrations", "migrated"}, rows)
	}
	if len(u.CPUFaultSites) > 0 {
		var rows [][]string
		for _, s := range u.CPUFaultSites {
			rows = append(rows, []string{"`" + s.Name + "`", fmt.Sprint(s.Count)})
		}
		w.p("CPU fault sites:\n\n")
		w.table([]string{"site", "faults"}, rows)
	}
}

func writeSteps(w mdw, r *analyze.Result) {
	s := r.Steps
	w.p("## Steps\n\n")
	if s.Count == 0 {
		w.p("No steps: %s. Name a range with `--step-range NAME`.\n\n", s.Source)
		return
	}
	w.p("%d steps from NVTX range `%s` (%s). Step time P50 %s ms, P95 %s ms, P99 %s ms; %s of step time host-blocked; %.1f page faults per step (max %d).\n\n",
		s.Count, s.Range, s.Source, ms(s.Duration.Median), ms(s.Duration.P95), ms(s.Duration.P99), pct(s.BlockedShare), s.FaultsPerStep, s.MaxFaults)
	rows := [][]string{}
	list := s.Rows
	note := ""
	if len(list) > 50 {
		note = fmt.Sprintf("First 50 of %d steps; the JSON report has all.\n\n", len(list))
		list = list[:50]
	}
	for _, st := range list {
		ep := "–"
		if st.Episode > 0 {
			ep = fmt.Sprint(st.Episode)
		}
		rows = append(rows, []string{fmt.Sprint(st.Index), st.Name, msI(st.DurationNs), msI(st.BlockedNs), pct(st.BlockedShare), fmt.Sprint(st.GPUFaults), fmt.Sprint(st.CPUFaults), analyze.FormatBytes(st.MigratedBytes), ep})
	}
	w.table([]string{"step", "range", "time ms", "blocked ms", "blocked", "GPU faults", "CPU faults", "migrated", "episode"}, rows)
	w.p("%s", note)
}

func writeMethod(w mdw, r *analyze.Result) {
	t := r.Thresholds
	w.p("## Method\n\n")
	w.p("A host-blocking call is an explicit sync (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize and driver equivalents) or an implicit one (synchronous cudaMemcpy/cudaMemset, cudaFree/cudaFreeHost, cudaMalloc/cudaMallocManaged/cudaHostAlloc and driver equivalents). ")
	w.p("A call is a *UM stall* when it lasts at least %s ms, at least %.0f%% of it overlaps fault-driven unified-memory activity of its process (GPU page-fault groups; migrations caused by page faults, speculative prefetch or eviction), and, where the API has at least %d calm calls, it lasts at least %.1f× their median. ",
		msI(t.MinStallNs), 100*t.MinOverlap, t.MinCalmCalls, t.Inflation)
	w.p("Stalls less than %s ms apart join one episode (widened to whole steps when steps are known); an episode with at least %d stalls and %s ms of stalled time is a storm. ",
		msI(t.MergeGapNs), t.MinEpisodeStalls, msI(t.MinEpisodeBlockedNs))
	w.p("Percentiles interpolate linearly between closest ranks (type 7); the median of an even count is the mean of the two middle values, as in nsys. Full description: docs/method.md.\n")
}

func writeSanitizer(w mdw, r *analyze.Result) {
	s := r.Sanitizer
	if s == nil {
		return
	}
	w.p("## Sanitizer findings\n\n")
	for _, l := range s.Logs {
		summary := "no ERROR SUMMARY line"
		if l.ToolErrors >= 0 {
			summary = fmt.Sprintf("ERROR SUMMARY %d", l.ToolErrors)
		}
		w.p("- `%s`: %s, %d findings, %s, %d parse warnings.\n", l.File, orDash(l.Tool), l.Findings, summary, l.Warnings)
	}
	w.p("\n")
	if len(s.Groups) == 0 {
		return
	}
	var rows [][]string
	for _, g := range s.Groups {
		storm := "–"
		if len(g.StormEpisodes) > 0 {
			var es []string
			for _, e := range g.StormEpisodes {
				es = append(es, fmt.Sprint(e))
			}
			storm = "**yes** (" + strings.Join(es, ", ") + ")"
		} else if g.KernelInTrace {
			storm = "no (ran outside storms)"
		} else if g.Kernel != "" {
			storm = "kernel not in trace"
		}
		rows = append(rows, []string{g.Tool, g.Severity, g.Kind, "`" + short(orDash(g.Kernel), 60) + "`", orDash(g.Location), short(g.Detail, 50), fmt.Sprint(g.Count), storm})
	}
	w.table([]string{"tool", "severity", "kind", "kernel", "location", "detail", "count", "in storm episode"}, rows)
}
