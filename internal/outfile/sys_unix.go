//go:build unix

package outfile

import (
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// alive reports whether a process with this PID exists (in this PID
// namespace); EPERM means it exists under another user.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// umask is the process's file mode creation mask, read from
// /proc/self/status where Linux gives it (setting it to read it back
// would race with files created meanwhile).
func umask() os.FileMode {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return os.FileMode(m)
				}
			}
		}
	}
	umaskMu.Lock()
	defer umaskMu.Unlock()
	m := syscall.Umask(0o077)
	syscall.Umask(m)
	return os.FileMode(m)
}

var umaskMu sync.Mutex

// defaultPerm is the mode of a new output file: 0644 less the umask, as
// most tools write (os.WriteFile(name, data, 0o644)).
func defaultPerm() os.FileMode { return 0o644 &^ umask() }

// installHandler removes the registered temporary names on SIGINT and
// SIGTERM and exits 130 or 143, as a shell reports a process killed by
// them.
func installHandler() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-c
		removeLive()
		code := 130
		if s == syscall.SIGTERM {
			code = 143
		}
		os.Exit(code)
	}()
}
