package main

import (
	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/opener"
	"github.com/umtrace/umtrace/reproducer"
)

func init() {
	// --validate analyzes each scenario's trace as analyze does.
	analyzeTrace = func(path string) (*reproducer.Analysis, error) {
		t, err := opener.Opener{}.Analyze(path, analyze.DefaultOptions())
		if err != nil {
			return nil, err
		}
		t.Close()
		return reproducer.AnalysisOf(t.Result), nil
	}
}
