package compare

import (
	"math"
	"testing"

	"github.com/umtrace/umtrace/analyze"
)

func TestMannWhitney(t *testing.T) {
	// scipy.stats.mannwhitneyu(a, b, method="asymptotic") gives 0.01219.
	p, ok := MannWhitney([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10})
	if !ok || math.Abs(p-0.01219) > 1e-4 {
		t.Errorf("p = %v, %v", p, ok)
	}
	p, _ = MannWhitney([]float64{6, 7, 8, 9, 10}, []float64{1, 2, 3, 4, 5})
	if math.Abs(p-0.01219) > 1e-4 {
		t.Errorf("symmetric p = %v", p)
	}
	// Same samples: no evidence.
	if p, ok := MannWhitney([]float64{1, 2, 3, 4}, []float64{1, 2, 3, 4}); !ok || p < 0.9 {
		t.Errorf("identical p = %v", p)
	}
	// Ties, by hand: midranks give R1 = 18, U = 3, tie term 60,
	// sigma^2 = 25/12*(11-60/90) = 21.53, z = (9.5-0.5)/4.640 = 1.940, p = 0.0524.
	if p, _ := MannWhitney([]float64{1, 1, 2, 2, 3}, []float64{2, 3, 3, 4, 4}); math.Abs(p-0.0524) > 2e-4 {
		t.Errorf("tied p = %v", p)
	}
	if _, ok := MannWhitney([]float64{1}, []float64{1, 2}); ok {
		t.Error("n=1 should be untestable")
	}
	if _, ok := MannWhitney([]float64{3, 3}, []float64{3, 3, 3}); ok {
		t.Error("all tied should be untestable")
	}
}

func TestCompareSynthetic(t *testing.T) {
	mk := func(step int64, storm int64) Side {
		r := &analyze.Result{}
		r.Trace.File = "x"
		r.Headline.StormTimeNs = storm
		r.Steps.Count = 10
		for i := range 10 {
			r.Steps.Rows = append(r.Steps.Rows, analyze.Step{DurationNs: step + int64(i)})
		}
		return Side{Result: r, Sync: map[string][]int64{"cudaFree": {step, step + 1, step + 2}}}
	}
	d := Compare(mk(100, 50), mk(50, 0))
	if d.Overall != "improvement" {
		t.Errorf("overall %s (%s)", d.Overall, d.Reason)
	}
	d = Compare(mk(50, 0), mk(100, 50))
	if d.Overall != "regression" {
		t.Errorf("overall %s (%s)", d.Overall, d.Reason)
	}
	d = Compare(mk(50, 0), mk(50, 0))
	if d.Overall != "no significant change" {
		t.Errorf("overall %s (%s)", d.Overall, d.Reason)
	}
}
