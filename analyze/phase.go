package analyze

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/trace"
	"strings"
	"time"
)

// phaseEpoch is when the package was initialized: each phase line says
// when (since then) its phase ended, which shows what ran beside what.
var phaseEpoch = time.Now()

// Phase is phase for the program's own steps after an analysis (the job
// of ranks, writing the report), logged beside the analysis's phases.
func Phase(w io.Writer, name string) func() { return phase(w, name) }

// phase returns a function that logs to w the time since phase was
// called (Options.Phases: for performance work, see docs/performance.md);
// with a nil w it does nothing.
func phase(w io.Writer, name string) func() {
	if w == nil {
		return func() {}
	}
	t := time.Now()
	return func() {
		if trace.IsEnabled() {
			// The phase's end, in an execution trace (UMTRACE_EXECTRACE;
			// scripts/tracean lists them beside its buckets).
			trace.Log(context.Background(), "phase", name)
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		fmt.Fprintf(w, "umtrace: %-16s %7.3f s  (ends at %6.3f s%s, allocated %5d MiB, heap %4d MiB, %d GCs%s)\n", name, time.Since(t).Seconds(), time.Since(phaseEpoch).Seconds(), cpuSoFar(), m.TotalAlloc>>20, m.HeapAlloc>>20, m.NumGC, peakRSS())
	}
}

// peakRSS is ", peak RSS N MiB" from /proc/self/status (VmHWM), or "" where
// there is none.
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb); err == nil {
				return fmt.Sprintf(", peak RSS %d MiB", kb>>10)
			}
		}
	}
	return ""
}
