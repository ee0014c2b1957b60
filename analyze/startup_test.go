package analyze_test

import (
	"path/filepath"
	"testing"

	"github.com/umtrace/umtrace/analyze/analyzetest"

	"github.com/umtrace/umtrace/analyze"
)

// TestStartupExcluded checks, on the shared traces, that a host-blocking
// first runtime call (the CUDA context's creation) is reported as start-up
// and left out of the headline and of File.Sync, while the per-API table
// (which the nsys cross-check compares) still counts it.
func TestStartupExcluded(t *testing.T) {
	d := sharedTraces(t)
	for _, tc := range []struct {
		trace, api string
		startup    bool
	}{
		{"um_pingpong_default", "cudaMallocManaged", true},
		{"um_pingpong_prefetch", "cudaMallocManaged", true},
		{"um_pingpong_explicit", "cudaMalloc", true},
		// PyTorch's first runtime call is cudaGetDeviceProperties: not
		// host-blocking, so nothing is set aside.
		{"torch_mlp_managed", "", false},
		{"torch_mlp_device", "", false},
	} {
		t.Run(tc.trace, func(t *testing.T) {
			path := filepath.Join(d, tc.trace+".sqlite")
			src, res := analyzetest.Open(t, path)
			opts := analyze.DefaultOptions()
			opts.SyncSamples = true
			f, err := analyze.AnalyzeFile(src, opts)
			if err != nil {
				t.Fatal(err)
			}
			samples := f.Sync
			if !tc.startup {
				if len(res.Startup) != 0 {
					t.Fatalf("start-up %+v, want none", res.Startup)
				}
			} else {
				if len(res.Startup) != 1 {
					t.Fatalf("start-up %+v, want one %s", res.Startup, tc.api)
				}
				s := res.Startup[0]
				if s.API != tc.api || s.StartNs < res.Trace.StartNs {
					t.Fatalf("start-up %+v, want %s", s, tc.api)
				}
				// The start-up call is the longest call of its API, and
				// longer than every headline sync.
				var api *analyze.APIStats
				for i := range res.SyncAPIs {
					if res.SyncAPIs[i].Name == tc.api {
						api = &res.SyncAPIs[i]
					}
				}
				if api == nil || api.Max != s.DurationNs {
					t.Fatalf("sync API table %+v: max should be the start-up call's %d ns", api, s.DurationNs)
				}
				if res.Headline.SyncP99Ns >= float64(s.DurationNs) {
					t.Errorf("headline P99 %.1f ns includes the %d ns start-up", res.Headline.SyncP99Ns, s.DurationNs)
				}
				if res.Headline.BlockedNs+s.DurationNs > res.Trace.DurationNs {
					t.Errorf("blocked %d ns + start-up %d ns exceed the trace", res.Headline.BlockedNs, s.DurationNs)
				}
				for _, v := range samples[tc.api] {
					if v == s.DurationNs {
						t.Errorf("SyncSamples[%s] still holds the start-up's %d ns", tc.api, v)
					}
				}
			}
			var calls int
			for _, a := range res.SyncAPIs {
				calls += a.Count
				want := a.Count
				for _, s := range res.Startup {
					if s.API == a.Name {
						want--
					}
				}
				if len(samples[a.Name]) != want {
					t.Errorf("SyncSamples[%s]: %d samples, want %d", a.Name, len(samples[a.Name]), want)
				}
			}
			if got := res.Headline.HostBlocking + len(res.Startup); got != calls {
				t.Errorf("headline %d calls + %d start-up, sync API table %d", res.Headline.HostBlocking, len(res.Startup), calls)
			}
		})
	}
}
