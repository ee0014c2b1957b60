//go:build unix

package analyze

import (
	"fmt"
	"syscall"
)

// cpuSoFar is ", CPU N s": the process's user and system time so far.
func cpuSoFar() string {
	var r syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &r) != nil {
		return ""
	}
	return fmt.Sprintf(", CPU %.2f s", float64(r.Utime.Sec+r.Stime.Sec)+float64(r.Utime.Usec+r.Stime.Usec)/1e6)
}
