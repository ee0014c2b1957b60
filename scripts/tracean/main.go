// Command tracean reads a Go execution trace (UMTRACE_EXECTRACE=FILE, or
// scripts/cores.sh's trace-SHAPE.out) and prints, per time bucket, the
// goroutines running and those running or runnable on average (the
// parallelism the program had and the parallelism it asked for) and the
// share of the bucket in a GC mark phase. With a window (ms from the
// trace's start), it prints instead the functions the trace's CPU samples
// were in there (run with UMTRACE_CPUPROFILE set too, which records them):
// the innermost umtrace analyze frame and the leaf. Run with
// UMTRACE_PHASES=1, each bucket names the phases that ended in it (and
// when, in ms).
//
//	go run ./scripts/tracean TRACE [BUCKET_MS]            (from scripts/tracean)
//	go run ./scripts/tracean TRACE BUCKET_MS FROM_MS TO_MS
//
// It is its own module (golang.org/x/exp/trace), outside umtrace's build.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/exp/trace"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tracean TRACE [BUCKET_MS [FROM_MS TO_MS]]")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracean:", err)
		os.Exit(1)
	}
	defer f.Close()
	bucket := 10e6 // ns
	if len(os.Args) > 2 {
		ms, err := strconv.ParseFloat(os.Args[2], 64)
		if err != nil || ms <= 0 {
			fmt.Fprintln(os.Stderr, "tracean: bucket: want milliseconds above 0")
			os.Exit(2)
		}
		bucket = ms * 1e6
	}
	winLo, winHi := -1.0, -1.0
	if len(os.Args) > 4 {
		winLo, _ = strconv.ParseFloat(os.Args[3], 64)
		winHi, _ = strconv.ParseFloat(os.Args[4], 64)
	}
	if err := run(f, bucket, winLo, winHi); err != nil {
		fmt.Fprintln(os.Stderr, "tracean:", err)
		os.Exit(1)
	}
}

func run(f io.Reader, bucket, winLo, winHi float64) error {
	r, err := trace.NewReader(f)
	if err != nil {
		return err
	}
	var t0, last trace.Time
	first := true
	add := func(m map[int]float64, a, b trace.Time) {
		for a < b {
			k := int(float64(a-t0) / bucket)
			end := min(t0+trace.Time(float64(k+1)*bucket), b)
			m[k] += float64(end - a)
			a = end
		}
	}
	running := map[trace.GoID]trace.Time{} // since when
	ready := map[trace.GoID]trace.Time{}   // running or runnable, since when
	busy, demand, gc := map[int]float64{}, map[int]float64{}, map[int]float64{}
	var gcStart trace.Time
	inGC := false
	samples := map[string]int{}
	var phases []phaseEnd // umtrace's (UMTRACE_PHASES=1), in order
	for {
		ev, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if first {
			t0, first = ev.Time(), false
		}
		last = ev.Time()
		switch ev.Kind() {
		case trace.EventStackSample:
			if ms := float64(ev.Time()-t0) / 1e6; ms >= winLo && ms < winHi {
				samples[frames(ev.Stack())]++
			}
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				continue
			}
			id := st.Resource.Goroutine()
			from, to := st.Goroutine()
			isReady := func(s trace.GoState) bool { return s == trace.GoRunning || s == trace.GoRunnable }
			if isReady(to) && !isReady(from) {
				ready[id] = ev.Time()
			} else if !isReady(to) && isReady(from) {
				if s, ok := ready[id]; ok {
					add(demand, s, ev.Time())
					delete(ready, id)
				}
			}
			if to == trace.GoRunning {
				running[id] = ev.Time()
			} else if from == trace.GoRunning {
				if s, ok := running[id]; ok {
					add(busy, s, ev.Time())
					delete(running, id)
				}
			}
		case trace.EventLog:
			if l := ev.Log(); l.Category == "phase" {
				phases = append(phases, phaseEnd{float64(ev.Time() - t0), l.Message})
			}
		case trace.EventRangeBegin:
			if ev.Range().Name == "GC concurrent mark phase" {
				inGC, gcStart = true, ev.Time()
			}
		case trace.EventRangeEnd:
			if ev.Range().Name == "GC concurrent mark phase" && inGC {
				add(gc, gcStart, ev.Time())
				inGC = false
			}
		}
	}
	for _, s := range running {
		add(busy, s, last)
	}
	for _, s := range ready {
		add(demand, s, last)
	}
	if winLo >= 0 {
		type count struct {
			where string
			n     int
		}
		var l []count
		for k, n := range samples {
			l = append(l, count{k, n})
		}
		sort.Slice(l, func(i, j int) bool { return l[i].n > l[j].n || l[i].n == l[j].n && l[i].where < l[j].where })
		fmt.Printf("CPU samples %.0f-%.0f ms\n", winLo, winHi)
		for i, c := range l {
			if i == 25 {
				break
			}
			fmt.Println(c.n, c.where)
		}
		return nil
	}
	var ks []int
	for k := range busy {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	fmt.Printf("trace %.3f s, buckets of %.0f ms: start (ms), goroutines running, running or runnable, GC mark share\n", float64(last-t0)/1e9, bucket/1e6)
	for _, k := range ks {
		fmt.Printf("%7.0f %5.1f %5.1f %4.0f%%", float64(k)*bucket/1e6, busy[k]/bucket, demand[k]/bucket, 100*gc[k]/bucket)
		for len(phases) > 0 && phases[0].at < float64(k+1)*bucket {
			fmt.Printf("  %s@%.1f", phases[0].name, phases[0].at/1e6)
			phases = phases[1:]
		}
		fmt.Println()
	}
	return nil
}

// phaseEnd is where a phase of umtrace's ended (ns from the trace's start).
type phaseEnd struct {
	at   float64
	name string
}

// frames names a sample by its innermost umtrace analyze frame and its
// leaf function.
func frames(st trace.Stack) string {
	var fr []string
	for f := range st.Frames() {
		fr = append(fr, f.Func)
	}
	if len(fr) == 0 {
		return "?"
	}
	for _, f := range fr {
		if strings.HasPrefix(f, "github.com/umtrace/umtrace/analyze") {
			return f + " <- leaf " + fr[0]
		}
	}
	return fr[0]
}
