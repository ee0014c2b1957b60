package analyze

import (
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/ingest"
	"github.com/umtrace/umtrace/ingest/nsys"
	"github.com/umtrace/umtrace/ingest/testshared"
)

// TestSyncSamples checks File.Sync, taken from the analysis's one pass,
// against a scan of the API table of its own, on a trace whose start-up
// call is not host-blocking, one whose start-up call is, and a file of
// several processes (split or not).
func TestSyncSamples(t *testing.T) {
	multi := testshared.Testdata("reproducer", "multi", "multi-process.sqlite")
	for _, c := range []struct {
		trace string
		split bool
	}{
		{testshared.Need(t, "traces", "torch_mlp_managed.sqlite"), false},
		{testshared.Need(t, "traces", "um_pingpong_default.sqlite"), false},
		{multi, true},
		{multi, false},
	} {
		path := c.trace
		r, err := nsys.Open(path, nsys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		opts := DefaultOptions()
		opts.SyncSamples, opts.SplitProcesses = true, c.split
		f, err := AnalyzeFile(r, opts)
		if err != nil {
			t.Fatal(err)
		}
		want, err := scanSyncSamples(r)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.EqualFunc(f.Sync, want, slices.Equal) {
			t.Errorf("%s (split %v): samples of %v, the table scan's of %v", filepath.Base(c.trace), c.split, slices.Sorted(maps.Keys(f.Sync)), slices.Sorted(maps.Keys(want)))
		}
		for _, a := range f.Whole.SyncAPIs {
			got := f.Sync[a.Name]
			var total int64
			for _, d := range got {
				total += d
			}
			if st := startupOf(f.Whole, a.Name); len(got) != a.Count-len(st) || total+sum(st) != a.Total {
				t.Errorf("%s: %s: %d samples of %d ns, result counts %d of %d ns with start-up %v", c.trace, a.Name, len(got), total, a.Count, a.Total, st)
			}
		}
	}
}

func startupOf(r *Result, api string) []int64 {
	var out []int64
	for _, s := range r.Startup {
		if s.API == api {
			out = append(out, s.DurationNs)
		}
	}
	return out
}

func sum(s []int64) int64 {
	var n int64
	for _, v := range s {
		n += v
	}
	return n
}

// scanSyncSamples is the reference for File.Sync, as SyncSamples
// computed it before the one read: a scan of the API table of its own.
// It returns the durations (ns) of every host-blocking call
// (APIs in HostBlocking) in src, keyed by API name and sorted ascending.
// Result holds only their summaries; diff needs the samples for its
// significance tests. Each process's CUDA start-up call (Result.Startup)
// is left out.
func scanSyncSamples(src ingest.Source) (map[string][]int64, error) {
	t := ingest.API
	out := map[string][]int64{}
	first := startupFilter{first: map[int64]startupCall{}}
	err := src.Scan(t, func(rec arrow.RecordBatch) error {
		names := ingest.Str(rec, t, ingest.ColName)
		start := ingest.I64(rec, t, ingest.ColStart)
		end := ingest.I64(rec, t, ingest.ColEnd)
		pid := ingest.I64(rec, t, ingest.ColPid)
		blocking := make([]string, names.DictLen()) // "" when not host-blocking
		runtime := make([]bool, names.DictLen())
		for k := range blocking {
			v := names.DictValue(k)
			if isHostBlocking(v) {
				blocking[k] = strings.Clone(v) // v points into the batch
			}
			runtime[k] = isRuntimeAPI(v)
		}
		for i := range names.Len() {
			k := names.Key(i)
			if k < 0 || start.IsNull(i) || end.IsNull(i) {
				continue
			}
			d := end.Value(i) - start.Value(i)
			if runtime[k] {
				first.add(pid.Value(i), start.Value(i), d, blocking[k], blocking[k] != "")
			}
			if blocking[k] != "" {
				out[blocking[k]] = append(out[blocking[k]], d)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, s := range out {
		slices.Sort(s)
	}
	first.remove(out)
	return out, nil
}

func isHostBlocking(name string) bool {
	_, ok := HostBlocking[name]
	return ok
}

// startupFilter tracks each process's first runtime call while the API
// table streams by, for SyncSamples.
type startupFilter struct {
	first map[int64]startupCall
}

type startupCall struct {
	start, dur int64
	name       string // "" when not host-blocking
}

func (f *startupFilter) add(pid, start, dur int64, name string, blocking bool) {
	cur, ok := f.first[pid]
	if ok && (start > cur.start || (start == cur.start && dur >= cur.dur)) {
		return
	}
	if !blocking {
		name = ""
	}
	f.first[pid] = startupCall{start, dur, name}
}

// remove deletes one sample of each host-blocking start-up call from
// samples (sorted ascending).
func (f *startupFilter) remove(samples map[string][]int64) {
	for _, s := range f.first {
		ds := samples[s.name]
		if s.name == "" || len(ds) == 0 {
			continue
		}
		if i, ok := slices.BinarySearch(ds, s.dur); ok {
			samples[s.name] = slices.Delete(ds, i, i+1)
		}
		if len(samples[s.name]) == 0 {
			delete(samples, s.name)
		}
	}
}

// TestGCAfterRead: a collection follows the read (collectCUDA), before
// the analysis's own buffers, once the heap is gcAfterReadMin or more; its
// phase line comes right after collect's and shows one more collection.
func TestGCAfterRead(t *testing.T) {
	// The test trace's heap is small: a live ballast takes it past
	// gcAfterReadMin.
	ballast := make([]byte, gcAfterReadMin+1<<20)
	defer runtime.KeepAlive(ballast)
	r, err := nsys.Open(testshared.Testdata("reproducer", "multi", "multi-process.sqlite"), nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var phases strings.Builder
	opts := DefaultOptions()
	opts.Phases = &phases
	if _, err := AnalyzeFile(r, opts); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(phases.String(), "\n")
	gcs := func(l string) int {
		var n int
		for _, f := range strings.Split(l, ", ") {
			if _, err := fmt.Sscanf(f, "%d GCs", &n); err == nil {
				return n
			}
		}
		t.Fatalf("no GC count in %q", l)
		return 0
	}
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "umtrace: collect ") || !strings.HasPrefix(lines[1], "umtrace: gc ") {
		t.Fatalf("phases begin %q, want collect then gc", lines[:min(2, len(lines))])
	}
	if a, b := gcs(lines[0]), gcs(lines[1]); b <= a {
		t.Errorf("%d collections after the gc phase, %d before it", b, a)
	}
}
