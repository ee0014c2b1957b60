package opener

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestHeapAt: phase lines pass through unchanged, and only the named
// phase's line writes the heap profile (not a phase whose name it
// begins).
func TestHeapAt(t *testing.T) {
	var out bytes.Buffer
	path := filepath.Join(t.TempDir(), "heap.prof")
	h := &heapAt{w: &out, line: []byte("umtrace: sort "), path: path}
	for _, l := range []string{"umtrace: sorted    0.1 s\n", "umtrace: collect   1.0 s\n"} {
		if _, err := h.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a profile for a line of another phase")
	}
	h.Write([]byte("umtrace: sort      0.2 s\n"))
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("no profile at the phase's line: %v", err)
	}
	if want := "umtrace: sorted    0.1 s\numtrace: collect   1.0 s\numtrace: sort      0.2 s\n"; out.String() != want {
		t.Errorf("passed on %q, want %q", out.String(), want)
	}
}
