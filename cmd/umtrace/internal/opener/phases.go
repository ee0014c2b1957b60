package opener

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
)

// PhasesOut is where per-phase timings go (an analysis's, and the
// program's own steps after it through analyze.Phase): stderr under
// UMTRACE_PHASES, else nowhere (nil). With UMTRACE_HEAPAT=PHASE too, the
// live heap after a collection is written, as a pprof heap profile, to
// UMTRACE_HEAPAT_FILE as that phase's line is (for performance work:
// docs/performance.md, "Finding where time goes"; UMTRACE_MEMPROFILE sets
// the sampling rate). The environment is read here, not in analyze.
func PhasesOut() io.Writer {
	if os.Getenv("UMTRACE_PHASES") == "" {
		return nil
	}
	at := os.Getenv("UMTRACE_HEAPAT")
	if at == "" {
		return os.Stderr
	}
	return &heapAt{w: os.Stderr, line: []byte("umtrace: " + at + " "), path: os.Getenv("UMTRACE_HEAPAT_FILE")}
}

// heapAt passes phase lines on to w, writing the heap profile to path
// first when a line is the phase's (one Write per line).
type heapAt struct {
	w    io.Writer
	line []byte
	path string
	mu   sync.Mutex // phases of concurrent analyses share a name
}

func (h *heapAt) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, h.line) {
		h.mu.Lock()
		if f, err := os.Create(h.path); err == nil {
			runtime.GC()
			pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
		h.mu.Unlock()
	}
	return h.w.Write(p)
}
