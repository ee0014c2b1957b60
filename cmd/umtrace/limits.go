package main

import (
	"fmt"
	"strings"
)

// The memory umtrace plans with (the huge-page heap reservation, the GC's
// soft limit) is bounded by what the process is allowed, not only by the
// machine: RLIMIT_AS (ulimit -v) counts every mapping, reserved address
// space included, RLIMIT_DATA (ulimit -d) private writable mappings, and a
// cgroup's memory limit the memory actually used. A Go program maps about
// a gigabyte of address space it never touches at start (the page
// allocator's summaries, malloc arenas of the cgo threads), so what an
// rlimit leaves is measured from the process's use when the settings are
// made, not from zero.

// limitShare is the part of what the limits leave that umtrace plans to
// use: the GC's soft limit at most, the heap reservation at most a
// quarter of it (limitReserveShare).
const (
	limitShare        = 0.75
	limitReserveShare = 0.25
)

// cgroupRoot is where the cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// room is how many more bytes the rlimits let this process map (RLIMIT_AS)
// or commit (RLIMIT_DATA), -1 when neither is set.
func (l memLimits) room() int64 {
	r := int64(-1)
	if l.as > 0 {
		r = max(0, l.as-l.vmSize)
	}
	if l.data > 0 {
		if d := max(0, l.data-l.vmData); r < 0 || d < r {
			r = d
		}
	}
	return r
}

// allowed is the most memory the process may use: the smallest of the
// machine's memory, the cgroup limit and the rlimits' room; 0 when none is
// known.
func (l memLimits) allowed(machine int64) int64 {
	m := machine
	lower := func(v int64) {
		if m <= 0 || v < m {
			m = v
		}
	}
	if l.cgroup > 0 {
		lower(l.cgroup)
	}
	if r := l.room(); r >= 0 {
		lower(max(r, 1<<20))
	}
	return m
}

// describe names the limits that are set, for the out-of-memory message:
// "ulimit -v 1953125 KiB", "cgroup memory.max 512 MiB", or "none set".
func (l memLimits) describe() string {
	var s []string
	if l.as > 0 {
		s = append(s, fmt.Sprintf("ulimit -v %d KiB", l.as>>10))
	}
	if l.data > 0 {
		s = append(s, fmt.Sprintf("ulimit -d %d KiB", l.data>>10))
	}
	if l.cgroup > 0 {
		s = append(s, fmt.Sprintf("cgroup memory limit %s", mib(l.cgroup)))
	}
	if len(s) == 0 {
		if m := machineMemory(); m > 0 {
			return "no limit set; machine memory " + mib(m)
		}
		return "no limit set"
	}
	return strings.Join(s, ", ")
}

func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }
