package analyze

import (
	"cmp"
	"path/filepath"
	"slices"
	"sort"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/sanitizer"
)

// SanitizerReport puts compute-sanitizer / cuda-memcheck findings next to
// the trace: findings grouped by tool, kind, kernel and source location,
// with the storm episodes in which that kernel ran.
type SanitizerReport struct {
	Logs   []SanitizerLog   `json:"logs"`
	Groups []SanitizerGroup `json:"groups"`
}

// SanitizerLog summarizes one log.
type SanitizerLog struct {
	File       string `json:"file"`
	Tool       string `json:"tool"`
	Findings   int    `json:"findings"`
	ToolErrors int64  `json:"tool_errors"` // from the tool's ERROR SUMMARY, -1 when absent
	Warnings   int    `json:"parse_warnings"`
}

// SanitizerGroup is a set of findings with the same tool, severity, kind,
// kernel and location.
type SanitizerGroup struct {
	Tool          string `json:"tool"`
	Severity      string `json:"severity"`
	Kind          string `json:"kind"`
	Kernel        string `json:"kernel"`
	Location      string `json:"location"`
	Detail        string `json:"detail"`
	Count         int    `json:"count"`
	KernelInTrace bool   `json:"kernel_in_trace"`
	StormEpisodes []int  `json:"storm_episodes"` // indexes of storm episodes in which the kernel ran
}

// sanitizerReport joins the logs' findings, grouped by sanitizer.ByDetail,
// to the trace's kernels.
func (a devicer) sanitizerReport(logs []*sanitizer.Log) *SanitizerReport {
	if len(logs) == 0 {
		return nil
	}
	rep := &SanitizerReport{Logs: []SanitizerLog{}, Groups: []SanitizerGroup{}}
	// Kernel names that ran in each storm episode, and in the whole trace.
	all := map[int32]bool{}
	perEp := make([]map[int32]bool, len(a.res.Episodes))
	for i := range perEp {
		perEp[i] = map[int32]bool{}
	}
	for k, ws := range a.work {
		for _, w := range ws {
			if w.name < 0 {
				continue
			}
			all[w.name] = true
			start := w.end - a.wdur(k, w)
			for i, e := range a.res.Episodes {
				if start >= e.StartNs && start < e.EndNs {
					perEp[i][w.name] = true
				}
			}
		}
	}
	ids := make([]int32, 0, len(all))
	for id := range all {
		ids = append(ids, id)
	}
	a.c.kernelNames.Resolve(ids) // in one read
	names := func(set map[int32]bool) []string {
		out := make([]string, 0, len(set))
		for id := range set {
			out = append(out, a.c.kernelNames.Name(id))
		}
		sort.Strings(out)
		return out
	}
	allNames := names(all)
	epNames := make([][]string, len(perEp))
	for i := range perEp {
		epNames[i] = names(perEp[i])
	}
	matches := func(g *sanitizer.Group, ns []string) bool {
		for _, n := range ns {
			if g.Kernel != "" && g.Kernel == ingest.KernelBaseName(n) {
				return true
			}
		}
		return false
	}
	for _, l := range logs {
		sl := SanitizerLog{File: filepath.Base(l.Path), Tool: l.Tool, Findings: len(l.Findings), ToolErrors: -1, Warnings: len(l.Warnings)}
		if l.Summary.HasErrors {
			sl.ToolErrors = l.Summary.Errors
		}
		rep.Logs = append(rep.Logs, sl)
	}
	for _, g := range sanitizer.GroupFindings(sanitizer.ByDetail, logs...) {
		sg := SanitizerGroup{Tool: g.Tool, Severity: g.Severity, Kind: g.Kind, Kernel: g.Kernel, Location: g.Location, Detail: g.What, Count: g.Count, StormEpisodes: []int{}}
		if g.KernelName != "" {
			sg.KernelInTrace = matches(g, allNames)
			for j, ns := range epNames {
				if matches(g, ns) {
					sg.StormEpisodes = append(sg.StormEpisodes, a.res.Episodes[j].Index)
				}
			}
		}
		rep.Groups = append(rep.Groups, sg)
	}
	slices.SortFunc(rep.Groups, func(x, y SanitizerGroup) int {
		return cmp.Or(cmp.Compare(len(y.StormEpisodes), len(x.StormEpisodes)), cmp.Compare(y.Count, x.Count),
			cmp.Compare(x.Tool, y.Tool), cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Kernel, y.Kernel), cmp.Compare(x.Location, y.Location), cmp.Compare(x.Detail, y.Detail), cmp.Compare(x.Severity, y.Severity))
	})
	return rep
}
