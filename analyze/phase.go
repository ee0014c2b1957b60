package analyze

import (
	"fmt"
	"os"
	"runtime"
	"time"
)

// phaseLog prints how long each analysis phase took to stderr when
// UMTRACE_PHASES is set (for performance work; see docs/performance.md).
var phaseLog = os.Getenv("UMTRACE_PHASES") != ""

// phase returns a function that logs the time since phase was called.
func phase(name string) func() {
	if !phaseLog {
		return func() {}
	}
	t := time.Now()
	return func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		fmt.Fprintf(os.Stderr, "umtrace: %-16s %7.3f s  (allocated %5d MiB, heap %4d MiB, %d GCs)\n", name, time.Since(t).Seconds(), m.TotalAlloc>>20, m.HeapAlloc>>20, m.NumGC)
	}
}
