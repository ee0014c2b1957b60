package reproducer

import (
	"errors"
	"strings"
	"testing"
)

func TestScenarioTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Scenarios {
		if s.Name == "" || s.run == nil || s.Description == "" || seen[s.Name] {
			t.Errorf("bad scenario %+v", s.Name)
		}
		seen[s.Name] = true
	}
	for _, n := range []string{"managed", "prefetch", "advise", "explicit", "pool", "free-in-loop", "two-streams", "race"} {
		if _, ok := Lookup(n); !ok {
			t.Errorf("scenario %s missing", n)
		}
	}
}

func TestKernelSourceHasRace(t *testing.T) {
	if !strings.Contains(kernelSource, "missing __syncthreads()") || strings.Contains(kernelSource, "__syncthreads();") {
		t.Error("race kernel must not synchronize")
	}
}

func TestRunValidatesOptions(t *testing.T) {
	if _, err := Run(Options{Scenario: "nope"}); err == nil {
		t.Error("unknown scenario accepted")
	}
	if _, err := Run(Options{Scenario: "managed", SizeMB: MaxSizeMB + 1}); err == nil {
		t.Error("oversized buffer accepted")
	}
}

// TestGPUScenarios runs every scenario briefly on a real GPU.
func TestGPUScenarios(t *testing.T) {
	if err := Available(); err != nil {
		if errors.Is(err, ErrNoGPU) {
			t.Skipf("skipping GPU test: %v", err)
		}
		t.Fatal(err)
	}
	for _, s := range Scenarios {
		res, err := Run(Options{Scenario: s.Name, SizeMB: 8, Steps: 2})
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if len(res.StepMs) != 2 || res.P50() <= 0 {
			t.Errorf("%s: step times %v", s.Name, res.StepMs)
		}
	}
}

func TestMedian(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median = %v", m)
	}
	if m := median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Errorf("median = %v", m)
	}
	if m := median(nil); m != 0 {
		t.Errorf("median(nil) = %v", m)
	}
}
