package analyze

import "slices"

// The host-blocking calls' durations (File.Sync) are apiStats' sorted
// per-API samples, copied as it summarizes each API, less each process's
// start-up call: the pass reads the API table once for everything.

// samplesOf returns ds (sorted durations, as apiStats holds them) as ns.
func samplesOf(ds []float64) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = int64(d)
	}
	return out
}

// dropStartup deletes one sample of each start-up call from samples
// (sorted ascending), and the APIs left without samples.
func dropStartup(samples map[string][]int64, startup []Startup) {
	for _, s := range startup {
		ds := samples[s.API]
		if i, ok := slices.BinarySearch(ds, s.DurationNs); ok {
			samples[s.API] = slices.Delete(ds, i, i+1)
		}
		if len(samples[s.API]) == 0 {
			delete(samples, s.API)
		}
	}
}
