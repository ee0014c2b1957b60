package reproducer

import (
	"fmt"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/ingest/nsys"
)

// AnalyzeTrace runs umtrace's analyzer with default options on one nsys
// SQLite export and condenses the result into a validation row's numbers.
func AnalyzeTrace(path string) (*Analysis, *analyze.Result, error) {
	r, err := nsys.Open(path, nsys.Options{})
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	res, err := analyze.Analyze(r, analyze.DefaultOptions())
	if err != nil {
		return nil, nil, fmt.Errorf("analyze %s: %w", path, err)
	}
	return AnalysisOf(res), res, nil
}

// AnalysisOf condenses an analysis into a validation row's numbers.
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
