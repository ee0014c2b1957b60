package reproducer

import "github.com/umtrace/umtrace/analyze"

// AnalysisOf condenses an analysis into a validation row's numbers
// (umtrace reproduce --validate analyzes each trace through the CLI's
// opener, like every other command).
func AnalysisOf(res *analyze.Result) *Analysis {
	h := res.Headline
	return &Analysis{
		StepP50Ms:  h.StepP50Ns / 1e6,
		SyncShare:  h.BlockedShare,
		UMFaults:   h.GPUFaults + h.CPUFaults,
		MigratedMB: float64(h.MigratedBytes) / (1 << 20),
		Verdict:    res.Verdict,
		Storm:      res.Verdict == analyze.VerdictStorm,
	}
}
