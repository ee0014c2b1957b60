package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/umtrace/umtrace/analyze"
)

func distRow(name Inline, kind string, d analyze.Dist) []Inline {
	r := []Inline{name}
	if kind != "-" {
		r = append(r, T(kind))
	}
	return append(r, Cells(fmt.Sprint(d.Count), msI(d.Total), msI(d.Min), ms(d.Median), ms(d.P95), ms(d.P99), msI(d.Max), ms(d.Mean), ms(d.StdDev))...)
}

var distHead = []string{"count", "total ms", "min ms", "P50 ms", "P95 ms", "P99 ms", "max ms", "mean ms", "stddev ms"}

func table(head []string, rows [][]Inline) Table {
	return Table{Head: head, Align: RightAfterFirst(len(head)), Rows: rows}
}

// AnalyzeDoc is the full incident report of one analysis (markdown and
// HTML).
func AnalyzeDoc(r *analyze.Result) *Doc {
	d := &Doc{Title: "umtrace: " + r.Trace.File}
	h := r.Headline
	t0 := r.Trace.StartNs
	d.h(1, Cat(T("umtrace report: "), C(r.Trace.File)))
	v := Para{Text: Cat(B("Verdict: "+verdictWord(r.Verdict)), T(" — "+r.Reason))}
	if r.Verdict == analyze.VerdictStorm {
		v.Class = "storm"
	}
	d.add(v)
	story(d, r)
	d.add(Table{Head: []string{"headline", "value"}, Rows: [][]Inline{
		Cells("storm time", fmt.Sprintf("%s ms (%s of the trace) in %d episode(s)", msI(h.StormTimeNs), pct(h.StormShare), len(r.Episodes))),
		Cells("excess blocked time in storms", msI(h.StormExcessNs)+" ms"),
		Cells("host blocked", fmt.Sprintf("%s ms (%s of the trace) in %d calls: %d explicit, %d implicit syncs", msI(h.BlockedNs), pct(h.BlockedShare), h.HostBlocking, h.ExplicitSyncs, h.ImplicitSyncs)),
		Cells("sync latency P50 / P99", fmt.Sprintf("%s / %s ms", ms(h.SyncP50Ns), ms(h.SyncP99Ns))),
		Cells("CUDA start-up", orDash(startupLine(r))),
		Cells("UM page faults", fmt.Sprintf("%d GPU, %d CPU (%.1f /s)", h.GPUFaults, h.CPUFaults, h.FaultsPerSec)),
		Cells("UM migrated", fmt.Sprintf("%s (%s fault-driven)", analyze.FormatBytes(h.MigratedBytes), analyze.FormatBytes(h.DemandMigBytes))),
		{T("step time P50 / P99"), stepHeadline(r)},
		Cells("trace", fmt.Sprintf("%s s, %s %s (export schema %s), GPUs: %s", secDur(r.Trace.DurationNs), r.Trace.Producer, orDash(r.Trace.ProductVersion), orDash(r.Trace.SchemaVersion), orDash(strings.Join(r.Trace.GPUs, ", ")))),
	}})

	if len(r.Timeline.Bins) > 0 {
		d.h(2, T("Time axis"))
		d.add(timelineChart(r, ResultLanes(r)))
	}

	if len(r.Episodes) > 0 {
		d.h(2, T("Storm episodes"))
		d.p(Tf("Times are seconds from the trace start (%d ns in the trace clock).", t0))
		var rows [][]Inline
		for _, e := range r.Episodes {
			rows = append(rows, episodeRow(e, t0))
		}
		d.add(table(episodeHead, rows))
		for _, e := range r.Episodes {
			evidence(d, e, t0)
		}
	}

	d.h(2, T("Sync latency"))
	d.p(T("Host-blocking CUDA calls, explicit and implicit (classification in the method note)."))
	if c, ok := latencyCharts(r); ok {
		d.add(c)
	}
	var rows [][]Inline
	for _, s := range r.SyncAPIs {
		rows = append(rows, distRow(T(s.Name), string(s.Kind), s.Dist))
	}
	d.add(table(append([]string{"API", "kind"}, distHead...), rows))
	d.h(3, T("By GPU work waited on"))
	d.p(T("The last kernel or copy on the synced stream (or, for device-wide syncs, on any stream) that finished while the call blocked."))
	d.add(table(append([]string{"GPU work"}, distHead...), groupRows(r.SyncByKernel, true)))
	d.h(3, T("By thread"))
	d.add(table(append([]string{"thread"}, distHead...), groupRows(r.SyncByThread, false)))
	d.h(3, T("By stream"))
	d.add(table(append([]string{"stream"}, distHead...), groupRows(r.SyncByStream, false)))

	unifiedMemory(d, r)
	multiSections(d, r)
	steps(d, r)

	if len(r.Mitigations) > 0 {
		d.h(2, T("Mitigations"))
		var items []Inline
		for _, m := range r.Mitigations {
			items = append(items, Cat(B(m.Title+"."), T(" Evidence: "+m.Evidence+". Try: "+m.Action+".")))
		}
		d.add(List{items})
	}
	sanitizerSection(d, r)
	if len(r.Isolated) > 0 {
		d.h(2, T("Isolated stalls"))
		d.p(T("UM stalls too few or too short to call a storm (first-touch warm-up often looks like this)."))
		var rows [][]Inline
		for _, e := range r.Isolated {
			rows = append(rows, episodeRow(e, t0))
		}
		d.add(table(episodeHead, rows))
	}
	d.h(2, T("All CUDA API calls"))
	rows = nil
	for _, s := range r.APIs {
		rows = append(rows, distRow(T(s.Name), "-", s.Dist))
	}
	d.add(table(append([]string{"API"}, distHead...), rows))
	if len(r.Kernels) > 0 {
		d.h(2, T("Kernels"))
		rows = nil
		for _, k := range r.Kernels {
			rows = append(rows, distRow(C(short(k.Name, 100)), "-", k.Dist))
		}
		d.add(table(append([]string{"kernel"}, distHead...), rows))
	}
	warnings(d, r)
	method(d, r)
	return d
}

// story tells, on the first screen of a storm's report, where it struck
// (process, GPU, steps), what the steps in it cost against the others,
// and the one change to make first (the first mitigation: the one that
// addresses the API the storm's calls stalled in longest).
func story(d *Doc, r *analyze.Result) {
	if r.Verdict != analyze.VerdictStorm || len(r.Episodes) == 0 {
		return
	}
	us := []unit{{res: r, rank: -1}}
	ms := mitigationsOf(us)
	storyBlocks(d, storyOf(us, ms), ms, false, false)
}

// storyBlocks adds the "Where:" and "First change:" lines of s; withFiles
// and withRanks name the files and ranks too (separate traces, jobs).
func storyBlocks(d *Doc, s Story, ms []DocMitigation, withFiles, withRanks bool) {
	toSet := func(xs []int64) map[int64]bool {
		m := map[int64]bool{}
		for _, x := range xs {
			m[x] = true
		}
		return m
	}
	var parts []string
	if withFiles {
		if len(s.Files) == 1 {
			parts = append(parts, "file "+s.Files[0])
		} else {
			parts = append(parts, "files "+strings.Join(s.Files, ", "))
		}
	}
	if withRanks {
		rs := make([]int64, len(s.Ranks))
		for i, r := range s.Ranks {
			rs[i] = int64(r)
		}
		parts = append(parts, setList("rank", "ranks", toSet(rs)))
	}
	where := "Where: " + strings.Join(append(parts, setList("process", "processes", toSet(s.Pids)), setList("GPU", "GPUs", toSet(s.Devices))), ", ")
	if s.SteadySteps > 0 {
		where += fmt.Sprintf("; %d of %d steady-state steps lie in a storm episode", s.StormSteps, s.SteadySteps)
		if s.StormStepP50Ns > 0 && s.CalmStepP50Ns > 0 {
			where += fmt.Sprintf(" (step time P50 %s ms there, %s ms in the others)", msI(s.StormStepP50Ns), msI(s.CalmStepP50Ns))
		} else if s.StormStepP50Ns > 0 {
			where += fmt.Sprintf(" (step time P50 %s ms)", msI(s.StormStepP50Ns))
		}
	}
	d.p(T(where + "."))
	if len(ms) > 0 {
		m := ms[0]
		first := B("First change: " + m.Title + ".")
		if withFiles || withRanks {
			first = B("First change (" + appliesTo(m, withFiles, withRanks) + "): " + m.Title + ".")
		}
		d.p(first, T(" Evidence: "+m.Evidence+". Try: "+m.Action+"."))
	}
}

// appliesTo names the files or ranks that advised m.
func appliesTo(m DocMitigation, withFiles, withRanks bool) string {
	if withRanks && len(m.Ranks) > 0 {
		rs := make([]string, len(m.Ranks))
		for i, r := range m.Ranks {
			rs[i] = fmt.Sprint(r)
		}
		if len(rs) == 1 {
			return "rank " + rs[0]
		}
		return "ranks " + strings.Join(rs, ", ")
	}
	return strings.Join(m.Files, ", ")
}

// mitigationSection lists ms, each with where it applies; empty ms says
// why there is nothing to change.
func mitigationSection(d *Doc, ms []DocMitigation, verdict string, withFiles, withRanks bool) {
	d.h(2, T("Mitigations"))
	if len(ms) == 0 {
		if verdict == analyze.VerdictStorm {
			d.p(T("None that the evidence supports; the per-trace sections show what the storm stalled on."))
		} else {
			d.p(T("None needed: no analysis found a storm that a change would address."))
		}
		return
	}
	var items []Inline
	for _, m := range ms {
		items = append(items, Cat(B(m.Title+"."), T(" For "+appliesTo(m, withFiles, withRanks)+". Evidence: "+m.Evidence+". Try: "+m.Action+".")))
	}
	d.add(List{items})
}

// setList names the members of set: "process 42", "processes 1, 2".
func setList(one, many string, set map[int64]bool) string {
	if len(set) == 0 {
		return many + " unknown"
	}
	ks := make([]int64, 0, len(set))
	for k := range set {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = fmt.Sprint(k)
	}
	if len(ks) == 1 {
		return one + " " + s[0]
	}
	return many + " " + strings.Join(s, ", ")
}

// median is the lower median of d (a step time that happened).
func median(d []int64) int64 {
	return nthSmallest(slices.Clone(d), (len(d)-1)/2)
}

// nthSmallest returns the k-th smallest of s (0-based), reordering s: a
// selection (quickselect, median-of-three pivots) instead of a sort of
// the whole list (a job's story takes the median of every rank's step
// durations, 130k at 12M rows). After 64 rounds it sorts what is left,
// so no input makes it quadratic.
func nthSmallest(s []int64, k int) int64 {
	lo, hi := 0, len(s)-1
	for round := 0; lo < hi; round++ {
		if round == 64 {
			slices.Sort(s[lo : hi+1])
			break
		}
		a, b, c := s[lo], s[lo+(hi-lo)/2], s[hi]
		p := max(min(a, b), min(max(a, b), c)) // the median of the three
		i, j := lo, hi
		for i <= j {
			for s[i] < p {
				i++
			}
			for s[j] > p {
				j--
			}
			if i <= j {
				s[i], s[j] = s[j], s[i]
				i++
				j--
			}
		}
		// s[lo..j] <= p, s[j+1..i-1] == p, s[i..hi] >= p.
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return s[k]
		}
	}
	return s[k]
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func stepHeadline(r *analyze.Result) Inline {
	if r.Steps.Count == 0 {
		return T("no steps (" + r.Steps.Source + ")")
	}
	what := Cat(C(r.Steps.Range), T(" ranges"))
	if r.Steps.Source == "inferred" {
		what = Tf("iterations inferred from the trace's period (%s confidence)", r.Steps.Confidence)
	}
	if w := r.Steps.WarmupSteps; w > 0 {
		return Cat(Tf("%s / %s ms over %d steady ", ms(r.Headline.StepP50Ns), ms(r.Headline.StepP99Ns), r.Steps.Count-w), what, Tf(" (+%d warm-up)", w))
	}
	return Cat(Tf("%s / %s ms over %d ", ms(r.Headline.StepP50Ns), ms(r.Headline.StepP99Ns), r.Steps.Count), what)
}

var episodeHead = []string{"#", "start", "end", "duration ms", "stalls", "syncs", "blocked ms", "excess ms", "GPU faults", "CPU faults", "fault-driven migrated", "steps"}

func episodeRow(e analyze.Episode, t0 int64) []Inline {
	return Cells(fmt.Sprint(e.Index), sec(e.StartNs, t0), sec(e.EndNs, t0), msI(e.DurationNs), fmt.Sprint(e.Stalls), fmt.Sprint(e.Syncs),
		msI(e.BlockedNs), msI(e.ExcessNs), fmt.Sprint(e.GPUFaults), fmt.Sprint(e.CPUFaults), analyze.FormatBytes(demandBytes(e.Migrations)), stepsCovered(e))
}

func migrationTable(ms []analyze.MigrationAgg) Table {
	var rows [][]Inline
	for _, m := range ms {
		rows = append(rows, Cells(m.Direction, m.Cause, fmt.Sprint(m.Count), analyze.FormatBytes(m.Bytes), msI(m.TimeNs)))
	}
	return Table{Head: []string{"migration", "cause", "count", "bytes", "time ms"}, Align: []Align{Left, Left, Right, Right, Right}, Rows: rows}
}

func evidence(d *Doc, e analyze.Episode, t0 int64) {
	d.h(3, Tf("Episode %d: %s – %s", e.Index, sec(e.StartNs, t0), sec(e.EndNs, t0)))
	var stalls []string
	for _, s := range e.StallAPIs {
		stalls = append(stalls, fmt.Sprintf("%s ×%d (%s ms)", s.Name, s.Count, msI(s.Ns)))
	}
	items := []Inline{
		Tf("Stalled calls: %s; %d host-blocking calls in the window blocked %s ms, %s ms over baseline (%s).", strings.Join(stalls, ", "), e.Syncs, msI(e.BlockedNs), msI(e.ExcessNs), e.BaselineNote),
		Tf("Page faults: %d GPU faults in %d fault groups, %d CPU faults.", e.GPUFaults, e.GPUFaultGroups, e.CPUFaults),
	}
	if len(e.CPUFaultSites) > 0 {
		var s []Inline
		for _, c := range e.CPUFaultSites {
			s = append(s, Cat(C(c.Name), Tf(" ×%d", c.Count)))
		}
		items = append(items, Cat(T("CPU fault sites: "), Join(s, ", "), T(".")))
	}
	d.add(List{items})
	if len(e.Migrations) > 0 {
		d.add(migrationTable(e.Migrations))
	}
	if len(e.Kernels) > 0 {
		var rows [][]Inline
		for _, k := range e.Kernels {
			calm, slow := "–", "–"
			if k.CalmMedianNs > 0 {
				calm, slow = ms(k.CalmMedianNs), fmt.Sprintf("%.2f×", k.Slowdown)
			}
			rows = append(rows, append([]Inline{C(short(k.Name, 80))}, Cells(fmt.Sprint(k.Count), ms(k.MedianNs), calm, slow)...))
		}
		d.add(table([]string{"kernel in episode", "runs", "median ms", "calm median ms", "slowdown"}, rows))
	}
}

func groupRows(gs []analyze.Group, code bool) [][]Inline {
	var rows [][]Inline
	for _, g := range gs {
		k := T(short(g.Key, 80))
		if code {
			k = C(short(g.Key, 80))
		}
		rows = append(rows, distRow(k, "-", g.Dist))
	}
	return rows
}

func unifiedMemory(d *Doc, r *analyze.Result) {
	u := r.UnifiedMemory
	d.h(2, T("Unified memory"))
	alloc := fmt.Sprintf("Managed allocations: %d calls", u.ManagedAllocs)
	if u.ManagedBytes > 0 {
		alloc += fmt.Sprintf(", %s recorded", analyze.FormatBytes(u.ManagedBytes))
	}
	faults := fmt.Sprintf("Page faults: %d GPU faults in %d groups (%.1f /s), %d CPU faults (%.1f /s)", u.GPUFaults, u.GPUFaultGroups, u.GPUFaultsPerSec, u.CPUFaults, u.CPUFaultsPerSec)
	if !u.FaultTables {
		faults += " — no page-fault tables in this export"
	}
	d.add(List{[]Inline{T(alloc + "."), T(faults + "."),
		Tf("Migrated: %s (%s/s).", analyze.FormatBytes(u.MigratedBytes), analyze.FormatBytes(int64(u.MigratedBytesPerSec)))}})
	if len(u.Migrations) > 0 {
		d.add(migrationTable(u.Migrations))
	}
	if len(u.TopRanges) > 0 {
		var rows [][]Inline
		for _, a := range u.TopRanges {
			rows = append(rows, append([]Inline{C(a.Start)}, Cells(analyze.FormatBytes(a.Bytes), a.Label, fmt.Sprint(a.GPUFaults), fmt.Sprint(a.CPUFaults), fmt.Sprint(a.Migrations), analyze.FormatBytes(a.MigratedBytes))...))
		}
		d.p(T("Top address ranges:"))
		d.add(Table{Head: []string{"range start", "size", "kind", "GPU faults", "CPU faults", "migrations", "migrated"}, Align: []Align{Left, Right, Left, Right, Right, Right, Right}, Rows: rows})
	}
	if len(u.CPUFaultSites) > 0 {
		var rows [][]Inline
		for _, s := range u.CPUFaultSites {
			rows = append(rows, []Inline{C(s.Name), T(fmt.Sprint(s.Count))})
		}
		d.p(T("CPU fault sites:"))
		d.add(table([]string{"site", "faults"}, rows))
	}
}

func steps(d *Doc, r *analyze.Result) {
	s := r.Steps
	d.h(2, T("Steps"))
	if s.Count == 0 {
		d.p(Tf("No steps: %s.", s.Source))
		return
	}
	if s.Source == "inferred" {
		d.p(Tf("%d steps inferred (%s confidence): %s.", s.Count, s.Confidence, s.Evidence))
	} else {
		d.p(Tf("%d steps from NVTX range ", s.Count), C(s.Range),
			Tf(" (%s, %s confidence: %s).", s.Source, s.Confidence, s.Evidence))
	}
	steady := s.Count - s.WarmupSteps
	if s.WarmupSteps > 0 {
		d.p(Tf("Step %d is the warm-up (%s ms, over %.1f× the median of the others): it is kept out of the figures below, the chart's scale and diff.",
			s.Rows[0].Index, msI(s.Rows[0].DurationNs), analyze.WarmupFactor))
	}
	d.p(Tf("Over %d steady-state steps: step time P50 %s ms, P95 %s ms, P99 %s ms (nearest rank, n=%d); %s of step time host-blocked; %.1f page faults per step (max %d).",
		steady, ms(s.Duration.Median), ms(s.Duration.P95), ms(s.Duration.P99), steady, pct(s.BlockedShare), s.FaultsPerStep, s.MaxFaults))
	if c, ok := stepChart(r); ok {
		d.add(c)
	}
	list := s.Rows
	var note string
	if len(list) > 50 {
		note = fmt.Sprintf("First 50 of %d steps; the JSON report has all.", len(list))
		list = list[:50]
	}
	var rows [][]Inline
	for _, st := range list {
		ep := "–"
		if st.Episode > 0 {
			ep = fmt.Sprint(st.Episode)
		}
		rows = append(rows, append([]Inline{T(fmt.Sprint(st.Index)), C(st.Name)}, Cells(sec(st.StartNs, r.Trace.StartNs), msI(st.DurationNs), msI(st.BlockedNs), pct(st.BlockedShare), fmt.Sprint(st.GPUFaults), fmt.Sprint(st.CPUFaults), analyze.FormatBytes(st.MigratedBytes), ep)...))
	}
	d.add(Table{Head: []string{"step", "range", "start", "time ms", "blocked ms", "blocked", "GPU faults", "CPU faults", "migrated", "episode"},
		Align: []Align{Right, Left, Right, Right, Right, Right, Right, Right, Right, Right}, Rows: rows})
	if note != "" {
		d.p(T(note))
	}
}

func method(d *Doc, r *analyze.Result) {
	t := r.Thresholds
	d.h(2, T("Method"))
	d.p(T("A host-blocking call is an explicit sync (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize and driver equivalents) or an implicit one (synchronous cudaMemcpy/cudaMemset, cudaFree/cudaFreeHost, cudaMalloc/cudaMallocManaged/cudaHostAlloc and driver equivalents). "),
		Tf("A call is a UM stall when it lasts at least %s ms, at least %.0f%% of it overlaps fault-driven unified-memory activity of its process (GPU page-fault groups; migrations caused by page faults, speculative prefetch or eviction), and, where the API has at least %d calm calls, it lasts at least %.1f× their median. ",
			msI(t.MinStallNs), 100*t.MinOverlap, t.MinCalmCalls, t.Inflation),
		Tf("Stalls less than %s ms apart join one episode (widened to whole steps when steps are known); an episode with at least %d stalls and %s ms of stalled time is a storm. ",
			msI(t.MergeGapNs), t.MinEpisodeStalls, msI(t.MinEpisodeBlockedNs)),
		T("Percentiles interpolate linearly between closest ranks (type 7); the median of an even count is the mean of the two middle values, as in nsys. Full description: docs/method.md."))
}

func sanitizerSection(d *Doc, r *analyze.Result) {
	s := r.Sanitizer
	if s == nil {
		return
	}
	d.h(2, T("Sanitizer findings"))
	var items []Inline
	for _, l := range s.Logs {
		summary := "no ERROR SUMMARY line"
		if l.ToolErrors >= 0 {
			summary = fmt.Sprintf("ERROR SUMMARY %d", l.ToolErrors)
		}
		items = append(items, Cat(C(l.File), Tf(": %s, %d findings, %s, %d parse warnings.", orDash(l.Tool), l.Findings, summary, l.Warnings)))
	}
	d.add(List{items})
	if len(s.Groups) == 0 {
		return
	}
	var rows [][]Inline
	for _, g := range s.Groups {
		storm := T("–")
		if len(g.StormEpisodes) > 0 {
			var es []string
			for _, e := range g.StormEpisodes {
				es = append(es, fmt.Sprint(e))
			}
			storm = Cat(B("yes"), T(" ("+strings.Join(es, ", ")+")"))
		} else if g.KernelInTrace {
			storm = T("no (ran outside storms)")
		} else if g.Kernel != "" {
			storm = T("kernel not in trace")
		}
		rows = append(rows, []Inline{T(g.Tool), T(g.Severity), T(g.Kind), C(short(g.Kernel, 60)), T(orDash(g.Location)), T(short(g.Detail, 50)), T(fmt.Sprint(g.Count)), storm})
	}
	d.add(Table{Head: []string{"tool", "severity", "kind", "kernel", "location", "detail", "count", "in storm episode"},
		Align: []Align{Left, Left, Left, Left, Left, Left, Right, Left}, Rows: rows})
}

// TerminalDoc is the terminal summary of one analysis (the text format).
// Its last line is a command that writes the full report, naming the
// trace by its file name (TerminalDocFor names it as the user did).
func TerminalDoc(r *analyze.Result) *Doc {
	return TerminalDocFor(r, r.Trace.File)
}

// TerminalDocFor is TerminalDoc whose closing hint names the trace by
// path, the argument the user gave, quoted for a POSIX shell when it
// needs to be, so the hint runs from where the user ran umtrace.
func TerminalDocFor(r *analyze.Result, path string) *Doc {
	d := &Doc{Title: "umtrace: " + r.Trace.File}
	h := r.Headline
	t0 := r.Trace.StartNs
	d.h(1, T(r.Trace.File+": "+strings.ToUpper(r.Verdict)))
	d.p(T(r.Reason))
	story(d, r)
	d.add(Table{Rows: [][]Inline{
		Cells("storm time", fmt.Sprintf("%s ms (%s of %s s), %d episode(s), %s ms excess blocked", msI(h.StormTimeNs), pct(h.StormShare), secDur(r.Trace.DurationNs), len(r.Episodes), msI(h.StormExcessNs))),
		Cells("host blocked", fmt.Sprintf("%s ms (%s) in %d calls (%d explicit, %d implicit)", msI(h.BlockedNs), pct(h.BlockedShare), h.HostBlocking, h.ExplicitSyncs, h.ImplicitSyncs)),
		Cells("sync P50/P99", fmt.Sprintf("%s / %s ms", ms(h.SyncP50Ns), ms(h.SyncP99Ns))),
	}})
	kv := d.Blocks[len(d.Blocks)-1].(Table)
	if s := startupLine(r); s != "" {
		kv.Rows = append(kv.Rows, Cells("CUDA start-up", s))
	}
	kv.Rows = append(kv.Rows, [][]Inline{
		Cells("UM faults", fmt.Sprintf("%d GPU, %d CPU (%.1f /s); migrated %s (%s fault-driven)", h.GPUFaults, h.CPUFaults, h.FaultsPerSec, analyze.FormatBytes(h.MigratedBytes), analyze.FormatBytes(h.DemandMigBytes))),
		{T("steps"), stepHeadline(r)},
	}...)
	d.Blocks[len(d.Blocks)-1] = kv
	if len(r.Timeline.Bins) > 0 {
		d.add(Pre{sparkTimeline(r)})
	}
	if len(r.Episodes) > 0 {
		d.h(2, T("Episodes (seconds from trace start)"))
		var rows [][]Inline
		for _, e := range r.Episodes {
			var s []string
			for _, a := range e.StallAPIs {
				s = append(s, fmt.Sprintf("%s×%d", a.Name, a.Count))
			}
			rows = append(rows, Cells(fmt.Sprintf("#%d", e.Index), sec(e.StartNs, t0)+"–"+sec(e.EndNs, t0), msI(e.DurationNs)+" ms",
				fmt.Sprintf("%d stalls (%s)", e.Stalls, strings.Join(s, ", ")), msI(e.ExcessNs)+" ms excess",
				fmt.Sprintf("%d GPU + %d CPU faults", e.GPUFaults, e.CPUFaults), analyze.FormatBytes(demandBytes(e.Migrations))+" fault-driven", "steps "+stepsCovered(e)))
		}
		d.add(Table{Align: []Align{Left, Left, Right}, Rows: rows})
	}
	multiSummary(d, r)
	d.h(2, T("Sync latency (ms)"))
	var rows [][]Inline
	for _, s := range r.SyncAPIs {
		rows = append(rows, Cells(s.Name, string(s.Kind), fmt.Sprint(s.Count), msI(s.Total), ms(s.Median), ms(s.P95), ms(s.P99), msI(s.Max)))
	}
	d.add(Table{Head: []string{"API", "kind", "count", "total", "P50", "P95", "P99", "max"}, Align: []Align{Left, Left, Right, Right, Right, Right, Right, Right}, Rows: rows})
	if s := r.Sanitizer; s != nil {
		d.h(2, T("Sanitizer findings"))
		var rows [][]Inline
		for _, g := range s.Groups {
			where := ""
			if len(g.StormEpisodes) > 0 {
				where = fmt.Sprintf("kernel ran in storm episode %v", g.StormEpisodes)
			}
			rows = append(rows, Cells(g.Tool, g.Severity, g.Kind, g.Kernel, g.Location, fmt.Sprintf("×%d", g.Count), where))
		}
		d.add(Table{Rows: rows})
	}
	if len(r.Mitigations) > 0 {
		d.h(2, T("Mitigations"))
		var items []Inline
		for _, m := range r.Mitigations {
			items = append(items, T(m.Title+" ("+m.Evidence+")"))
		}
		d.add(List{items})
	}
	warnings(d, r)
	d.add(Para{Text: T("Full report: bin/umtrace analyze " + ShellQuote(path) + " -o report.md (or -o report.html)")})
	return d
}

// ShellQuote quotes s for a POSIX shell: as is when it holds only
// characters no shell treats specially, else in single quotes.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_-./+,:@%", c) >= 0) {
			safe = false
			break
		}
	}
	if safe && s[0] != '-' {
		return s
	}
	if s[0] == '-' {
		s = "./" + s // never taken for a flag
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// startupLine describes the CUDA start-up calls left out of the headline,
// or returns "" when there are none.
func startupLine(r *analyze.Result) string {
	if len(r.Startup) == 0 {
		return ""
	}
	var parts []string
	for _, s := range r.Startup {
		parts = append(parts, fmt.Sprintf("%s %s ms (pid %d)", s.API, msI(s.DurationNs), s.Pid))
	}
	return strings.Join(parts, ", ") + ", not counted above"
}

// warnings lists the analysis's caveats, when there are any.
func warnings(d *Doc, r *analyze.Result) {
	if len(r.Warnings) == 0 {
		return
	}
	d.h(2, T("Warnings"))
	items := make([]Inline, len(r.Warnings))
	for i, w := range r.Warnings {
		items[i] = T(w)
	}
	d.add(List{items})
}
