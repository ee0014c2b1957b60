package analyze

import (
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/ingest"
)

// SyncSamples returns the durations (ns) of every host-blocking call
// (APIs in HostBlocking) in src, keyed by API name and sorted ascending.
// Result holds only their summaries; diff needs the samples for its
// significance tests. Each process's CUDA start-up call (Result.Startup)
// is left out.
func SyncSamples(src ingest.Source) (map[string][]int64, error) {
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
