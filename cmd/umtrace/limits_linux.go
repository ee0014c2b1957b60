package main

import (
	"bufio"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// memLimits are the limits the kernel puts on this process's memory, in
// bytes, 0 where there is none.
type memLimits struct {
	as     int64 // RLIMIT_AS (ulimit -v): all mapped address space
	data   int64 // RLIMIT_DATA (ulimit -d): private writable mappings
	cgroup int64 // the cgroup's memory.max (v2) or memory.limit_in_bytes (v1), the smallest up the tree
	// What this process already holds of what as and data count.
	vmSize, vmData int64
}

// readMemLimits reads the limits and the process's use; it costs a few
// small file reads and two system calls.
func readMemLimits() memLimits {
	var l memLimits
	l.as = rlimit(syscall.RLIMIT_AS)
	l.data = rlimit(syscall.RLIMIT_DATA)
	l.cgroup = cgroupMemoryMax(cgroupRoot)
	if l.as > 0 || l.data > 0 {
		l.vmSize, l.vmData = vmUse()
	}
	return l
}

// rlimit is the soft limit of resource r, 0 when unlimited.
func rlimit(r int) int64 {
	var rl syscall.Rlimit
	if syscall.Getrlimit(r, &rl) != nil || rl.Cur == ^uint64(0) || rl.Cur >= 1<<62 {
		return 0
	}
	return int64(rl.Cur)
}

// vmUse is VmSize and VmData of /proc/self/status in bytes.
func vmUse() (size, data int64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmSize:"); ok {
			size = kbValue(v)
		} else if v, ok := strings.CutPrefix(sc.Text(), "VmData:"); ok {
			data = kbValue(v)
		}
	}
	return size, data
}

func kbValue(s string) int64 {
	kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(s), " kB"), 10, 64)
	if err != nil {
		return 0
	}
	return kb << 10
}

// cgroupMemoryMax is the smallest memory limit of this process's cgroup
// and its ancestors: memory.max on cgroup v2, memory.limit_in_bytes on v1
// (its "unlimited" is a huge number); 0 when none is set or readable. In
// a container the process's cgroup path is often not under the mount (the
// namespace's root is), so the mount's own files are read too. root is the
// mount point of the cgroup file systems (cgroupRoot).
func cgroupMemoryMax(root string) int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	var best int64
	take := func(file string) {
		v := readLimitFile(file)
		if v > 0 && (best == 0 || v < best) {
			best = v
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		// hierarchy-ID:controller-list:cgroup-path
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var dir, file string
		switch {
		case f[0] == "0" && f[1] == "":
			dir, file = root, "memory.max"
			if _, err := os.Stat(path.Join(dir, "memory.max")); err != nil && !strings.Contains(f[2], "..") {
				// hybrid hierarchy: v2 is mounted under unified/
				dir = path.Join(root, "unified")
			}
		case strings.Contains(","+f[1]+",", ",memory,"):
			dir, file = path.Join(root, "memory"), "memory.limit_in_bytes"
		default:
			continue
		}
		take(path.Join(dir, file))
		for p := path.Clean("/" + f[2]); p != "/"; p = path.Dir(p) {
			take(path.Join(dir, p, file))
		}
	}
	return best
}

// readLimitFile reads a cgroup limit: a number of bytes, 0 for "max",
// absent or unreadable files and v1's unlimited (a number near 2^63).
func readLimitFile(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v <= 0 || v >= 1<<62 {
		return 0
	}
	return v
}
