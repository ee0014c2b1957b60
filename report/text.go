package report

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/umtrace/umtrace/analyze"
)

// writeText writes a short terminal summary.
func writeText(b *bytes.Buffer, r *analyze.Result) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	h := r.Headline
	t0 := r.Trace.StartNs
	p("%s: %s\n  %s\n\n", r.Trace.File, strings.ToUpper(r.Verdict), r.Reason)
	p("  storm time      %s ms (%s of %s ms), %d episode(s), %s ms excess blocked\n", msI(h.StormTimeNs), pct(h.StormShare), msI(r.Trace.DurationNs), len(r.Episodes), msI(h.StormExcessNs))
	p("  host blocked    %s ms (%s) in %d calls (%d explicit, %d implicit)\n", msI(h.BlockedNs), pct(h.BlockedShare), h.HostBlocking, h.ExplicitSyncs, h.ImplicitSyncs)
	p("  sync P50/P99    %s / %s ms\n", ms(h.SyncP50Ns), ms(h.SyncP99Ns))
	if s := startupLine(r); s != "" {
		p("  CUDA start-up   %s\n", s)
	}
	p("  UM faults       %d GPU, %d CPU (%.1f /s); migrated %s (%s fault-driven)\n", h.GPUFaults, h.CPUFaults, h.FaultsPerSec, analyze.FormatBytes(h.MigratedBytes), analyze.FormatBytes(h.DemandMigBytes))
	p("  steps           %s\n", strings.ReplaceAll(stepHeadline(r), "`", ""))
	if len(r.Timeline.Bins) > 0 {
		p("\n")
		writeTimeline(b, r, "  ")
	}
	if len(r.Episodes) > 0 {
		p("\nEpisodes (seconds from trace start):\n")
		for _, e := range r.Episodes {
			var s []string
			for _, a := range e.StallAPIs {
				s = append(s, fmt.Sprintf("%s×%d", a.Name, a.Count))
			}
			p("  #%d %s–%s  %s ms, %d stalls (%s), %s ms excess, %d GPU + %d CPU faults, %s fault-driven migration, steps %s\n",
				e.Index, sec(e.StartNs, t0), sec(e.EndNs, t0), msI(e.DurationNs), e.Stalls, strings.Join(s, ", "), msI(e.ExcessNs),
				e.GPUFaults, e.CPUFaults, analyze.FormatBytes(demandBytes(e.Migrations)), stepsCovered(e))
		}
	}
	p("\nSync latency (ms):\n  %-28s %-8s %7s %10s %9s %9s %9s %9s\n", "API", "kind", "count", "total", "P50", "P95", "P99", "max")
	for _, s := range r.SyncAPIs {
		p("  %-28s %-8s %7d %10s %9s %9s %9s %9s\n", s.Name, s.Kind, s.Count, msI(s.Total), ms(s.Median), ms(s.P95), ms(s.P99), msI(s.Max))
	}
	if s := r.Sanitizer; s != nil {
		p("\nSanitizer findings:\n")
		for _, g := range s.Groups {
			where := ""
			if len(g.StormEpisodes) > 0 {
				where = fmt.Sprintf("  [kernel ran in storm episode %v]", g.StormEpisodes)
			}
			p("  %-10s %-8s %-22s %s %s ×%d%s\n", g.Tool, g.Severity, g.Kind, g.Kernel, g.Location, g.Count, where)
		}
	}
	if len(r.Mitigations) > 0 {
		p("\nMitigations:\n")
		for _, m := range r.Mitigations {
			p("  - %s (%s)\n", m.Title, m.Evidence)
		}
	}
	for _, w := range r.Warnings {
		p("\nwarning: %s", w)
	}
	if len(r.Warnings) > 0 {
		p("\n")
	}
	p("\nFull report: umtrace analyze %s --format md\n", r.Trace.File)
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
