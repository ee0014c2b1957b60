package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/umtrace/umtrace/internal/nsysbin"
	"github.com/umtrace/umtrace/reproducer"
)

// Multi-rank scenarios (reproducer.MultiScenarios): `umtrace reproduce
// --scenario multi-process|multi-gpu|multi-gpu-control --ranks N`.

// isMultiReproduce reports whether reproduce's arguments name a multi-rank
// scenario (or are a rank started by one).
func isMultiReproduce(args []string) bool {
	for i, a := range args {
		v := ""
		switch {
		case a == "--worker" || a == "--parent":
			return true
		case strings.HasPrefix(a, "--scenario="):
			v = strings.TrimPrefix(a, "--scenario=")
		case a == "--scenario" && i+1 < len(args):
			v = args[i+1]
		}
		if _, ok := reproducer.LookupMulti(v); ok {
			return true
		}
	}
	return false
}

type multiFlags struct {
	scenario, out, nsys, exchange, rendezvous   string
	ranks, stormRank, size, steps, rank, device int
	noNsys, worker, parent                      bool
}

func (m *multiFlags) args(mode string, rank int) []string {
	a := []string{"reproduce", mode, "--scenario", m.scenario, "--ranks", strconv.Itoa(m.ranks), "--storm-rank", strconv.Itoa(m.stormRank),
		"--size", strconv.Itoa(m.size), "--steps", strconv.Itoa(m.steps), "--out-dir", m.out, "--exchange", m.exchange,
		"--rendezvous", m.rendezvous, "--device", strconv.Itoa(m.device)}
	if mode == "--worker" {
		a = append(a, "--rank", strconv.Itoa(rank))
	}
	return a
}

func cmdReproduceMulti(stdout, stderr io.Writer, args []string) error {
	fs := newFlags("reproduce", stdout, stderr)
	var m multiFlags
	fs.StringVar(&m.scenario, "scenario", "", "multi-rank scenario: "+strings.Join(multiNames(), ", "))
	fs.IntVar(&m.ranks, "ranks", 2, "number of ranks (processes)")
	fs.IntVar(&m.stormRank, "storm-rank", 1, "the rank that touches its managed memory from the host")
	fs.IntVar(&m.size, "size", 64, "buffer size per rank in MB")
	fs.IntVar(&m.steps, "steps", 8, "timed steps")
	outDir := outDirFlag(fs, "umtrace-reproduce", "directory for traces and step timings")
	fs.StringVar(&m.nsys, "nsys", "", "nsys binary (default: nsys on PATH or a standard install location)")
	fs.BoolVar(&m.noNsys, "no-nsys", false, "run directly even when nsys is found")
	fs.StringVar(&m.exchange, "exchange", "auto", "collective each step: nccl, host (barrier + host-staged copy), or auto (NCCL when one GPU per rank and libnccl loads)")
	fs.IntVar(&m.device, "device", -1, "CUDA device for every rank (-1: rank mod GPU count for multi-gpu, 0 for multi-process)")
	fs.BoolVar(&m.worker, "worker", false, "internal: run one rank")
	fs.BoolVar(&m.parent, "parent", false, "internal: start every rank as a child and wait")
	fs.IntVar(&m.rank, "rank", 0, "internal: this rank")
	fs.StringVar(&m.rendezvous, "rendezvous", "", "internal: directory the ranks meet in")
	for _, h := range []string{"worker", "parent", "rank", "rendezvous"} {
		_ = fs.MarkHidden(h)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var err error
	if m.out, err = outDir(); err != nil {
		return err
	}
	sc, err := m.check()
	if err != nil {
		return err
	}
	if m.worker {
		res, err := reproducer.RunRank(reproducer.RankOptions{Scenario: m.scenario, Rank: m.rank, Ranks: m.ranks, StormRank: m.stormRank,
			SizeMB: m.size, Steps: m.steps, Device: m.device, Exchange: m.exchange, Rendezvous: m.rendezvous, Log: stdout})
		if err == nil {
			err = reproducer.WriteRankResult(m.out, res)
		}
		if err != nil {
			fmt.Fprintf(stderr, "umtrace reproduce: rank %d: %s\n", m.rank, oneLine(err.Error()))
			reproducer.Exit(exitFail)
		}
		reproducer.Exit(exitOK)
	}
	if !m.parent {
		// No device is exit 3, as for the single-process scenarios, found
		// before any rank starts.
		if err := reproducer.Available(); err != nil {
			return badInput(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return internal(err)
	}
	if m.parent {
		return startRanks(stdout, stderr, exe, &m, nil)
	}
	if err := os.MkdirAll(m.out, 0o755); err != nil {
		return internal(fmt.Errorf("output directory: %w", err))
	}
	if m.out, err = filepath.Abs(m.out); err != nil {
		return internal(err)
	}
	m.rendezvous = filepath.Join(m.out, m.scenario+".rendezvous")
	_ = os.RemoveAll(m.rendezvous)
	if err := os.MkdirAll(m.rendezvous, 0o755); err != nil {
		return internal(err)
	}
	defer os.RemoveAll(m.rendezvous)
	for r := 0; r < m.ranks; r++ {
		_ = os.Remove(reproducer.RankFile(m.out, m.scenario, r))
	}
	nsys := ""
	if !m.noNsys {
		if nsys, err = nsysbin.Find(m.nsys); err != nil {
			return usageErr("%v", err)
		}
	}
	traces, err := recordRanks(stdout, stderr, exe, nsys, sc, &m)
	if err != nil {
		return err
	}
	return printRanks(stdout, &m, traces)
}

// check validates the flags and returns the scenario they name.
func (m *multiFlags) check() (reproducer.MultiScenario, error) {
	sc, ok := reproducer.LookupMulti(m.scenario)
	if !ok {
		return sc, usageErr("unknown multi-rank scenario %q", m.scenario)
	}
	if m.ranks < 1 || m.ranks > 64 {
		return sc, usageErr("--ranks %d out of range 1..64", m.ranks)
	}
	if m.stormRank < 0 || m.stormRank >= m.ranks {
		return sc, usageErr("--storm-rank %d out of range 0..%d", m.stormRank, m.ranks-1)
	}
	if m.size < 1 || m.size > reproducer.MaxSizeMB || m.steps < 1 || m.steps > 10000 {
		return sc, usageErr("--size 1..%d and --steps 1..10000", reproducer.MaxSizeMB)
	}
	if m.exchange != "auto" && m.exchange != "nccl" && m.exchange != "host" {
		return sc, usageErr("--exchange must be auto, nccl or host")
	}
	return sc, nil
}

// recordRanks runs the ranks: under nsys, a session per rank or one for
// all as the scenario records, or directly without nsys. It returns the
// traces recorded.
func recordRanks(stdout, stderr io.Writer, exe, nsys string, sc reproducer.MultiScenario, m *multiFlags) ([]string, error) {
	var traces []string
	switch {
	case nsys != "" && sc.PerRankTrace:
		// One nsys session per rank, all at once (they meet every step).
		traces = make([]string, m.ranks)
		errs := make([]error, m.ranks)
		var wg sync.WaitGroup
		for r := 0; r < m.ranks; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				traces[r], errs[r] = reproducer.Record(nsys, exe, m.args("--worker", r), m.out, fmt.Sprintf("%s.rank%d", m.scenario, r), stderr)
			}()
		}
		wg.Wait()
		for _, e := range errs {
			if e != nil {
				return nil, failed(e)
			}
		}
	case nsys != "":
		t, err := reproducer.Record(nsys, exe, m.args("--parent", 0), m.out, m.scenario, stderr)
		if err != nil {
			return nil, failed(err)
		}
		traces = []string{t}
	default:
		if err := startRanks(stdout, stderr, exe, m, nil); err != nil {
			return nil, err
		}
	}
	return traces, nil
}

// printRanks prints each rank's step timings and the traces.
func printRanks(stdout io.Writer, m *multiFlags, traces []string) error {
	for r := 0; r < m.ranks; r++ {
		res, err := reproducer.ReadRankResult(m.out, m.scenario, r)
		if err != nil {
			return failed(fmt.Errorf("rank %d left no step timings (did it fail?): %w", r, err))
		}
		fmt.Fprintf(stdout, "rank %d on %s: step P50 %.2f ms, collective P50 %.2f ms (%s); per step:", r, res.Device.Name, res.P50(), medianF(res.CollectiveMs), res.Exchange)
		for _, ms := range res.StepMs {
			fmt.Fprintf(stdout, " %.2f", ms)
		}
		fmt.Fprintln(stdout)
	}
	for _, t := range traces {
		fmt.Fprintf(stdout, "trace: %s\n", t)
	}
	return nil
}

// startRanks starts every rank as a child of this process and waits.
func startRanks(stdout, stderr io.Writer, exe string, m *multiFlags, _ []string) error {
	cmds := make([]*exec.Cmd, m.ranks)
	for r := 0; r < m.ranks; r++ {
		c := exec.Command(exe, m.args("--worker", r)...)
		c.Stdout, c.Stderr = stdout, stderr
		if err := c.Start(); err != nil {
			for _, p := range cmds[:r] {
				_ = p.Process.Kill()
			}
			return internal(fmt.Errorf("start rank %d: %w", r, err))
		}
		cmds[r] = c
	}
	var bad []string
	for r, c := range cmds {
		if err := c.Wait(); err != nil {
			bad = append(bad, fmt.Sprintf("rank %d: %v", r, err))
		}
	}
	if len(bad) > 0 {
		return failed(fmt.Errorf("%s", strings.Join(bad, "; ")))
	}
	return nil
}

func medianF(v []float64) float64 {
	r := reproducer.Result{StepMs: v}
	return r.P50()
}
