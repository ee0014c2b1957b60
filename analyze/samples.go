package analyze

import (
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/umtrace/umtrace/ingest"
)

// SyncSamples returns the durations (ns) of every host-blocking call
// (APIs in HostBlocking) in src, keyed by API name and sorted ascending.
// Result holds only their summaries; diff needs the samples for its
// significance tests.
func SyncSamples(src ingest.Source) (map[string][]int64, error) {
	t := ingest.API
	out := map[string][]int64{}
	err := src.Scan(t, func(rec arrow.RecordBatch) error {
		names := ingest.Str(rec, t, ingest.ColName)
		start := ingest.I64(rec, t, ingest.ColStart)
		end := ingest.I64(rec, t, ingest.ColEnd)
		blocking := make([]string, names.DictLen()) // "" when not host-blocking
		for k := range blocking {
			if v := names.DictValue(k); isHostBlocking(v) {
				blocking[k] = strings.Clone(v) // v points into the batch
			}
		}
		for i := range names.Len() {
			k := names.Key(i)
			if k < 0 || blocking[k] == "" || start.IsNull(i) || end.IsNull(i) {
				continue
			}
			out[blocking[k]] = append(out[blocking[k]], end.Value(i)-start.Value(i))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, s := range out {
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	}
	return out, nil
}

func isHostBlocking(name string) bool {
	_, ok := HostBlocking[name]
	return ok
}
