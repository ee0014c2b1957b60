package multirank

import (
	"fmt"
	"strconv"
	"time"

	"github.com/umtrace/umtrace/analyze"
)

// Evidence says whether files are one job, and why.
type Evidence struct {
	OneJob bool
	Reason string
}

// rankVars are the launcher variables that name a process's rank, in the
// order they are believed.
var rankVars = []string{"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}

// launchRank is the rank f's launch environment names, and the variable,
// or -1.
func launchRank(f *analyze.File) (int, string) {
	for _, v := range rankVars {
		if s, ok := f.Info.LaunchEnv[v]; ok {
			if r, err := strconv.Atoi(s); err == nil && r >= 0 {
				return r, v
			}
		}
	}
	return -1, ""
}

// hasCollectives reports whether f ran any collective (an NCCL kernel or
// an NVTX collective range).
func hasCollectives(f *analyze.File) bool {
	if f.Collectives == nil {
		return false
	}
	for _, m := range []map[int64][]analyze.Collective{f.Collectives.Kernels, f.Collectives.Ranges} {
		for _, cs := range m {
			if len(cs) > 0 {
				return true
			}
		}
	}
	return false
}

// window is f's recording window on the UTC clock; ok is false when the
// export does not give its session's start.
func window(f *analyze.File) (lo, hi int64, ok bool) {
	if f.Info == nil || f.Info.SessionStartUTCNs == 0 {
		return 0, 0, false
	}
	return f.Info.SessionStartUTCNs + f.Info.SpanStartNs, f.Info.SessionStartUTCNs + f.Info.SpanEndNs, true
}

func utc(ns int64) string { return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05") }

// SameJob weighs whether files (analyzed with SplitProcesses) are the
// ranks of one job: one file is one recording, hence one launch; several
// are one job only when their recordings overlap in time (where the exports
// say when they ran), they do not name the same rank or different world
// sizes, and either every file names a distinct rank or every file runs
// collectives. Anything else is several programs, or evidence too thin to
// align clocks and charge waits across them.
func SameJob(files []*analyze.File) Evidence {
	if len(files) < 2 {
		return Evidence{OneJob: true, Reason: "one recording"}
	}
	known := true
	var latestStart, earliestEnd *analyze.File
	var maxLo, minHi int64
	for _, f := range files {
		lo, hi, ok := window(f)
		if !ok {
			known = false
			break
		}
		if latestStart == nil || lo > maxLo {
			latestStart, maxLo = f, lo
		}
		if earliestEnd == nil || hi < minHi {
			earliestEnd, minHi = f, hi
		}
	}
	if known && maxLo >= minHi {
		return Evidence{Reason: fmt.Sprintf("their recordings do not overlap in time (%s ended at %s UTC, %s started at %s UTC)",
			earliestEnd.Name, utc(minHi), latestStart.Name, utc(maxLo))}
	}
	byRank := map[int]*analyze.File{}
	world := map[string]*analyze.File{}
	named, collectives := 0, 0
	for _, f := range files {
		if r, v := launchRank(f); r >= 0 {
			if g, dup := byRank[r]; dup {
				return Evidence{Reason: fmt.Sprintf("%s and %s both name rank %d (%s)", g.Name, f.Name, r, v)}
			}
			byRank[r] = f
			named++
		}
		if ws, ok := f.Info.LaunchEnv["WORLD_SIZE"]; ok {
			world[ws] = f
		}
		if hasCollectives(f) {
			collectives++
		}
	}
	if len(world) > 1 {
		return Evidence{Reason: "they name different WORLD_SIZE values"}
	}
	when := "their recordings overlap in time"
	if !known {
		when = "the exports do not say when they ran"
	}
	switch {
	case named == len(files):
		return Evidence{OneJob: true, Reason: when + " and each names a distinct rank"}
	case known && collectives == len(files):
		return Evidence{OneJob: true, Reason: when + " and every file runs collectives"}
	case known:
		return Evidence{Reason: when + ", but they name no ranks (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID) and not all run collectives"}
	}
	return Evidence{Reason: when + ", and they do not all name distinct ranks"}
}
