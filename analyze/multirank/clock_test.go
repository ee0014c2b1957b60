package multirank_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/analyze"
	"github.com/umtrace/umtrace/analyze/multirank"
	"github.com/umtrace/umtrace/ingest/ingesttest"
)

// rankFile is one rank's recording: a file naming its rank, whose session
// start is recorded at session (UTC ns), with an NCCL all-reduce ending at
// each of ends (the file's own clock) after 2 ms of waiting.
func rankFile(t *testing.T, rank int, session int64, ends []int64) *analyze.File {
	t.Helper()
	const nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
	tr := ingesttest.New(fmt.Sprintf("rank%d.sqlite", rank))
	tr.Info().SessionStartUTCNs = session
	tr.Info().LaunchEnv = map[string]string{"RANK": fmt.Sprint(rank), "WORLD_SIZE": "2"}
	pid := int64(100 + rank)
	for _, e := range ends {
		tr.Call(pid, 1, "cudaLaunchKernel", e-4*ms, e-4*ms+ms/100)
		tr.Kernel(pid, 0, 7, "gemm_kernel", e-4*ms, e-2*ms)
		tr.Kernel(pid, 0, 8, nccl, e-2*ms, e)
		tr.Call(pid, 1, "cudaStreamSynchronize", e-ms, e+ms/10)
	}
	opts := analyze.DefaultOptions()
	opts.SplitProcesses = true
	f, err := analyze.AnalyzeFile(tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	f.Name = tr.Info().Path
	return f
}

const session = int64(1_700_000_000_000_000_000)

// TestClockCorrectionSupported: one job of two ranks whose second host's
// clock ran 2 s ahead when its session started. The 10 all-reduces end
// together on the true clock, so once rank 1's clock is moved back 2 s
// every pair overlaps: the correction stands.
func TestClockCorrectionSupported(t *testing.T) {
	var ends []int64
	for k := range int64(10) {
		ends = append(ends, 50*ms+k*20*ms+(k%3)*ms)
	}
	jr, err := multirank.Analyze([]*analyze.File{rankFile(t, 0, session, ends), rankFile(t, 1, session+2_000_000_000, ends)})
	if err != nil {
		t.Fatal(err)
	}
	if got := jr.Ranks[1].ClockCorrectionNs; got != -2_000_000_000 {
		t.Errorf("rank 1 correction %d ns, want -2 s", got)
	}
	if len(jr.Clock.Refused) != 0 || jr.Clock.ResidualNs != 0 || !strings.Contains(jr.Clock.Method, "refinement") {
		t.Errorf("clock %+v", jr.Clock)
	}
}

// TestClockCorrectionRefused: two recordings that are not one job (forced
// into one, as --job does) each ran 10 all-reduces, at times that have
// nothing to do with each other. The median end difference asks for a
// correction of seconds; after it hardly any pair of "matched" collectives
// shares a moment, so it is refused: rank 1 keeps its session-start
// clock, and the note, the warnings and the JSON say why.
func TestClockCorrectionRefused(t *testing.T) {
	var e0, e1 []int64
	gaps := []int64{13, 41, 7, 29, 55, 3, 37, 19, 61, 11}
	t0, t1 := 50*ms, 50*ms
	for k, g := range gaps {
		t0 += 20 * ms
		t1 += g * ms
		e0 = append(e0, t0)
		e1 = append(e1, t1+int64(k%2)*7*ms)
	}
	jr, err := multirank.Analyze([]*analyze.File{rankFile(t, 0, session, e0), rankFile(t, 1, session-4_150_000_000, e1)})
	if err != nil {
		t.Fatal(err)
	}
	if got := jr.Ranks[1].ClockCorrectionNs; got != 0 {
		t.Errorf("rank 1 correction %d ns, want none (refused)", got)
	}
	if jr.Ranks[1].ClockOffsetNs != 0 || jr.Ranks[0].ClockOffsetNs != 4_150_000_000 {
		t.Errorf("session-start offsets %d, %d", jr.Ranks[0].ClockOffsetNs, jr.Ranks[1].ClockOffsetNs)
	}
	c := jr.Clock
	if len(c.Refused) != 1 || c.Refused[0].File != "rank1.sqlite" || c.Refused[0].Matched != 10 || c.Refused[0].Overlapping >= 9 {
		t.Fatalf("refused %+v", c.Refused)
	}
	if r := c.Refused[0]; abs(r.CorrectionNs) < 4_000_000_000 || !strings.Contains(r.Reason, "overlap") {
		t.Errorf("refused %+v, want the 4 s correction, refused for want of overlap", r)
	}
	if strings.Contains(c.Method, "refinement") || !strings.Contains(c.Note, "do not support") || !strings.Contains(strings.Join(jr.Warnings, "\n"), "refused") {
		t.Errorf("method %q, note %q, warnings %q", c.Method, c.Note, jr.Warnings)
	}
}

// TestClockCorrectionTooFewCollectives: two matched collectives are no
// evidence for moving a clock by 2 s.
func TestClockCorrectionTooFewCollectives(t *testing.T) {
	ends := []int64{50 * ms, 70 * ms}
	jr, err := multirank.Analyze([]*analyze.File{rankFile(t, 0, session, ends), rankFile(t, 1, session+2_000_000_000, ends)})
	if err != nil {
		t.Fatal(err)
	}
	if jr.Ranks[1].ClockCorrectionNs != 0 || len(jr.Clock.Refused) != 1 || !strings.Contains(jr.Clock.Refused[0].Reason, "too few") {
		t.Errorf("correction %d, refused %+v", jr.Ranks[1].ClockCorrectionNs, jr.Clock.Refused)
	}
}
