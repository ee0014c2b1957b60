package main

import "github.com/umtrace/umtrace/reproducer"

func init() {
	analyzeTrace = func(path string) (*reproducer.Analysis, error) {
		a, _, err := reproducer.AnalyzeTrace(path)
		return a, err
	}
}
