//go:build unix

package opener

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/cmd/umtrace/internal/exitcode"
)

// TestFIFO: a FIFO is refused before it is opened (reading one could
// block forever).
func TestFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo.sqlite")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, err := Opener{}.Analyze(fifo, analyze.DefaultOptions())
	if exitcode.Of(err) != exitcode.BadInput || !strings.Contains(err.Error(), "a FIFO (named pipe)") {
		t.Errorf("exit %d, %v; want bad input naming a FIFO", exitcode.Of(err), err)
	}
}
