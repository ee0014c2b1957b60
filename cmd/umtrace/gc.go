package main

import (
	"bufio"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
)

// The GC settings are derived, not fixed. GOGC and GOMEMLIMIT from the
// environment win; otherwise GOGC keeps the runtime's default and umtrace
// sets a soft memory limit that starts from the size of the traces named
// on the command line (64 MiB and a tenth of their size) and follows the
// live heap up: after every collection the limit becomes at least 1.1
// times the live heap and at least 24 MiB per core (GOMAXPROCS; 48 MiB at
// least) above it, so a trace that needs more memory than the estimate
// never makes the GC run back to back, and it never exceeds three
// quarters of the machine's memory. The headroom grows with the cores:
// with 48 MiB on 16 cores a 12M-row trace took 43-58 collections, each
// slowing sixteen goroutines; with 384 MiB it takes 6-8, for 15-20% less
// wall time and twice the peak RSS (300-350 -> 550-680 MiB). On two
// cores it stays 48 MiB.
// The measurements behind these numbers: docs/performance.md, "GC soft limit".

const (
	gcBaseBytes       = 64 << 20
	gcBytesPerInput   = 0.1 // limit bytes per byte of input trace
	gcHeadroom        = 1.1
	gcMinHeadroom     = 48 << 20
	gcHeadroomPerCore = 24 << 20
)

// gcMinAbove is the least room the limit leaves above the live heap.
func gcMinAbove() int64 {
	return max(gcMinHeadroom, gcHeadroomPerCore*int64(runtime.GOMAXPROCS(0)))
}

// setupGC applies the derived settings for a run with args.
func setupGC(args []string) {
	var input int64
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if fi, err := os.Stat(a); err == nil && fi.Mode().IsRegular() {
			input += fi.Size()
		}
	}
	lim := readMemLimits()                    // limits.go
	huge := newHugeHeap(thpBytes(input, lim)) // thp_linux.go
	if os.Getenv("GOMEMLIMIT") != "" {
		if huge != nil {
			(&gcTuner{huge: huge}).arm()
		}
		return
	}
	t := &gcTuner{huge: huge, floor: gcBaseBytes + int64(gcBytesPerInput*float64(input)), ceiling: gcCeiling(lim), above: gcMinAbove()}
	if t.ceiling <= 0 {
		t.ceiling = math.MaxInt64
	}
	t.floor = min(t.floor, t.ceiling)
	t.start()
}

// gcTuner raises the soft memory limit to follow the live heap.
type gcTuner struct {
	floor, ceiling int64
	above          int64 // gcMinAbove
	sample         []metrics.Sample
	huge           *hugeHeap
}

// gcSentinel is garbage as soon as it is made: its finalizer runs after
// the next collection, which re-arms it.
type gcSentinel struct{ _ [64]byte }

func (t *gcTuner) start() {
	t.sample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	debug.SetMemoryLimit(t.floor)
	if os.Getenv("GOGC") == "" {
		// The limit alone paces the collector. Under GOGC=100 a heap
		// of a few MB (start-up: options, schema, the first batches)
		// was collected every few MB, 8 to 10 times before the first
		// records: docs/performance.md, "GC soft limit".
		debug.SetGCPercent(-1)
	}
	t.arm()
}

func (t *gcTuner) arm() { runtime.SetFinalizer(&gcSentinel{}, t.tune) }

func (t *gcTuner) tune(*gcSentinel) {
	t.huge.advise()
	if t.sample == nil {
		t.arm()
		return
	}
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live := int64(t.sample[0].Value.Uint64())
		debug.SetMemoryLimit(min(max(t.floor, int64(gcHeadroom*float64(live)), live+t.above), t.ceiling))
	}
	t.arm()
}

// gcCeiling is the highest soft limit: three quarters of the memory the
// process may use (the machine's, its cgroup's limit, what RLIMIT_AS and
// RLIMIT_DATA leave; limits.go); 0 when unknown.
func gcCeiling(lim memLimits) int64 {
	return int64(limitShare * float64(lim.allowed(machineMemory())))
}

// machineMemory is MemTotal from /proc/meminfo in bytes (0 when unknown).
func machineMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// thpBytes is the heap advised for huge pages up front for input bytes of
// traces: more than an analysis of that much holds at its peak (64 MiB and
// half the input; more grows into ranges advised after each collection,
// but a range the heap grows into and touches before the next collection
// faults 4 KiB at a time), none for small inputs, where faults cost
// little. Reserving costs address space, not memory. Under RLIMIT_AS or
// RLIMIT_DATA the reservation is at most a quarter of the room they leave
// (limits.go), and none when that is below the 32 MiB worth reserving.
// The measurements: docs/performance.md, "Huge pages for the heap".
func thpBytes(input int64, lim memLimits) int64 {
	if input < 32<<20 {
		return 0
	}
	n := min(gcBaseBytes+input/2, machineMemory()/4)
	if r := lim.room(); r >= 0 {
		n = min(n, int64(limitReserveShare*float64(r)))
	}
	if n < 32<<20 {
		return 0
	}
	return n
}
