package analyze_test

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/umtrace/umtrace/analyze/analyzetest"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/ingest/nsys"
	"github.com/umtrace/umtrace/ingest/testshared"
)

func sharedTraces(t *testing.T) string {
	t.Helper()
	return testshared.Need(t, "traces")
}

func analyzeTrace(t *testing.T, path string) *analyze.Result {
	t.Helper()
	_, res := analyzetest.Open(t, path)
	return res
}

// TestNsysCrossCheck checks per-API count, total, min, max, mean, median and
// stddev against nsys's own cuda_api_sum / cudaapisum output for the shared
// traces.
func TestNsysCrossCheck(t *testing.T) {
	d := sharedTraces(t)
	cases := map[string]string{
		"um_pingpong_default":  "um_pingpong_default.cuda_api_sum.csv",
		"um_pingpong_prefetch": "um_pingpong_prefetch.cuda_api_sum.csv",
		"um_pingpong_explicit": "um_pingpong_explicit.cuda_api_sum.csv",
		"torch_mlp_managed":    "torch_mlp_managed_cudaapisum.csv",
		"torch_mlp_device":     "torch_mlp_device_cudaapisum.csv",
	}
	for trace, csvName := range cases {
		t.Run(trace, func(t *testing.T) {
			f, err := os.Open(filepath.Join(d, "nsys-stats", csvName))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			recs, err := csv.NewReader(f).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			res := analyzeTrace(t, filepath.Join(d, trace+".sqlite"))
			ours := map[string]analyze.APIStats{}
			for _, a := range res.APIs {
				ours[a.Name] = a
			}
			if len(recs)-1 != len(ours) {
				t.Errorf("%d APIs, nsys lists %d", len(ours), len(recs)-1)
			}
			// Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name
			for _, rec := range recs[1:] {
				name := nsys.StripVersion(rec[8])
				a, ok := ours[name]
				if !ok {
					t.Errorf("%s: missing", name)
					continue
				}
				num := func(i int) float64 {
					v, err := strconv.ParseFloat(rec[i], 64)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					return v
				}
				check := func(what string, got, want, tol float64) {
					if math.Abs(got-want) > tol {
						t.Errorf("%s %s = %v, nsys says %v", name, what, got, want)
					}
				}
				check("count", float64(a.Count), num(2), 0)
				check("total", float64(a.Total), num(1), 0)
				check("min", float64(a.Min), num(5), 0)
				check("max", float64(a.Max), num(6), 0)
				check("median", a.Median, num(4), 0)
				check("mean", a.Mean, num(3), 0.051)
				check("stddev", a.StdDev, num(7), 0.051)
			}
		})
	}
}

// TestVerdicts checks the expected verdicts of the shared traces and the
// figures they rest on.
func TestVerdicts(t *testing.T) {
	d := sharedTraces(t)
	want := map[string]string{
		"um_pingpong_default":  analyze.VerdictStorm,
		"um_pingpong_prefetch": analyze.VerdictNoStorm,
		"um_pingpong_explicit": analyze.VerdictNoStorm,
		"torch_mlp_managed":    analyze.VerdictStorm,
		"torch_mlp_device":     analyze.VerdictNoStorm,
	}
	for trace, v := range want {
		t.Run(trace, func(t *testing.T) {
			res := analyzeTrace(t, filepath.Join(d, trace+".sqlite"))
			if res.Verdict != v {
				t.Fatalf("verdict %s (%s), want %s", res.Verdict, res.Reason, v)
			}
			switch trace {
			case "um_pingpong_default":
				u := res.UnifiedMemory
				if u.GPUFaults != 1448 || u.CPUFaults != 1536 || u.MigratedBytes != 469762048+536870912 {
					t.Errorf("UM: %d GPU faults, %d CPU faults, %d bytes", u.GPUFaults, u.CPUFaults, u.MigratedBytes)
				}
				e := res.Episodes[0]
				if len(res.Episodes) != 1 || e.Stalls != 8 || e.StalledNs != 125670074 || e.GPUFaults != 1448 {
					t.Errorf("episodes: %+v", res.Episodes)
				}
			case "um_pingpong_explicit":
				var memcpy *analyze.APIStats
				for i := range res.SyncAPIs {
					if res.SyncAPIs[i].Name == "cudaMemcpy" {
						memcpy = &res.SyncAPIs[i]
					}
				}
				if memcpy == nil || memcpy.Kind != analyze.Implicit || memcpy.Count != 16 || memcpy.Total != 144246075 {
					t.Errorf("synchronous memcpy not reported as 16 implicit syncs: %+v", memcpy)
				}
			case "torch_mlp_managed":
				var free *analyze.APIStats
				for i := range res.SyncAPIs {
					if res.SyncAPIs[i].Name == "cudaFree" {
						free = &res.SyncAPIs[i]
					}
				}
				if free == nil || free.Count != 418 || free.Kind != analyze.Implicit {
					t.Errorf("cudaFree: %+v", free)
				}
				if res.Steps.Count != 20 || res.Steps.Range != "train_step N" {
					t.Errorf("steps: %d %q", res.Steps.Count, res.Steps.Range)
				}
				e := res.Episodes[0]
				if e.FirstStep != 0 || e.LastStep != 19 || e.GPUFaults == 0 || e.CPUFaults != 2080 {
					t.Errorf("episode: %+v", e)
				}
			case "um_pingpong_prefetch":
				if res.Headline.DemandMigBytes != 0 || res.UnifiedMemory.MigratedBytes == 0 {
					t.Errorf("prefetch migration: %+v", res.Headline)
				}
			}
		})
	}
}

// TestTimeline checks that the time axis accounts for every fault and
// fault-driven byte, and marks exactly the bins the storm covers.
func TestTimeline(t *testing.T) {
	res := analyzeTrace(t, filepath.Join(sharedTraces(t), "um_pingpong_default.sqlite"))
	tl := res.Timeline
	if len(tl.Bins) != analyze.TimelineBins || tl.BinNs*analyze.TimelineBins < res.Trace.DurationNs {
		t.Fatalf("timeline: %d bins of %d ns for %d ns", len(tl.Bins), tl.BinNs, res.Trace.DurationNs)
	}
	var gpu, cpu, demand int64
	stalls := 0
	for i, b := range tl.Bins {
		gpu += b.GPUFaults
		cpu += b.CPUFaults
		demand += b.DemandBytes
		stalls += b.Stalls
		e := res.Episodes[0]
		inStorm := b.StartNs < e.EndNs && b.StartNs+tl.BinNs > e.StartNs
		if b.Storm != inStorm {
			t.Errorf("bin %d storm=%v, episode overlap %v", i, b.Storm, inStorm)
		}
	}
	if gpu != res.UnifiedMemory.GPUFaults || cpu != res.UnifiedMemory.CPUFaults || demand != res.Headline.DemandMigBytes || stalls != 8 {
		t.Errorf("timeline totals: %d GPU, %d CPU faults, %d B, %d stalls", gpu, cpu, demand, stalls)
	}
}
