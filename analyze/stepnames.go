package analyze

import (
	"fmt"
	"regexp"
	"strings"
)

// stepKind ranks what an NVTX range's name says about it as a step
// marker. Names are compared by key: the name with each run of digits as
// N ("train_step 17" -> "train_step N").
type stepKind int8

const (
	// stepOp: a range a library or framework opens around one operation
	// or API call, never an iteration: PyTorch's emit_nvtx op ranges
	// ("aten::mm, seq = 12, op_id = 999730", "autograd::engine::..."),
	// record_function ranges of optimizers and Lightning hooks, NCCL, MPI
	// and CUDA API ranges.
	stepOp stepKind = iota
	// stepOther: a user range whose name says nothing of iterations
	// ("forward", "saxpy"); a step only when its ranges tile the
	// process's time.
	stepOther
	// stepEpoch: an epoch holds many steps; a step only if nothing
	// better repeats.
	stepEpoch
	// stepWord: named like an iteration without a number ("train_step",
	// "run_training_batch").
	stepWord
	// stepNumbered: named like an iteration and numbered ("train_step N",
	// "iteration N", "ProfilerStep#N").
	stepNumbered
)

var (
	// opPrefixes open ranges around one operation or API call.
	opPrefixes = []string{
		"aten::", "autograd::", "torch::", "c10d::", "prim::", "profiler::", "cudnn", "cublas",
		"nccl", "MPI_", "PMPI_", "Optimizer.", "[LightningModule]", "[Strategy]", "[Callback]",
		"[LightningDataModule]", "[_", "## ",
	}
	opMarks = regexp.MustCompile(`::|^cu[A-Z]|^cuda[A-Z]`)
	// emitNVTXTail is what torch.autograd.profiler.emit_nvtx appends to
	// every range it opens, op or record_function ("aten::mm, seq = 12,
	// op_id = 999730"; "ProfilerStep#3, op_id = 2866").
	emitNVTXTail = regexp.MustCompile(`(, (seq|op_id) = N)+$`)
	numberedWord = regexp.MustCompile(`(?i)^ProfilerStep#N$|(^|[^a-z])(step|iter|iteration|batch)[\s_#:=-]*N($|[^a-z])`)
	iterWord     = regexp.MustCompile(`(?i)step|iter|batch`)
	epochWord    = regexp.MustCompile(`(?i)epoch`)
)

// classifyStepKey says what kind of step marker a range key is. Under
// emit_nvtx every range carries a seq/op_id tail: the name before it
// decides (an op's "aten::mm", the profiler schedule's "ProfilerStep#N"
// or a user's record_function), except that a bare name with such a tail
// and no iteration word is an op.
func classifyStepKey(key string) stepKind {
	if base := emitNVTXTail.ReplaceAllString(key, ""); base != key {
		if k := classifyStepKey(base); k >= stepEpoch {
			return k
		}
		return stepOp
	}
	for _, p := range opPrefixes {
		if strings.HasPrefix(key, p) {
			return stepOp
		}
	}
	switch {
	case opMarks.MatchString(key):
		return stepOp
	case numberedWord.MatchString(key):
		return stepNumbered
	case epochWord.MatchString(key):
		return stepEpoch
	case iterWord.MatchString(key):
		return stepWord
	}
	return stepOther
}

// minTiling is the share of its process's window (first range start to
// last range end) a candidate's ranges must cover to be taken as
// iterations when their name does not say so, and to be sure of them when
// it does.
const minTiling = 0.5

// noStepsAdvice is what to record when no range marks iterations.
const noStepsAdvice = "record one NVTX range per iteration (nvtxRangePushA(\"step\") ... nvtxRangePop() in C/C++; " +
	"torch.cuda.nvtx.range_push(\"train_step\") ... range_pop(), or torch.profiler with a schedule for ProfilerStep#N, in PyTorch) " +
	"or pass --step-range NAME"

// confidence says how sure the choice of c is, and why.
func (c stepCand) confidence() (string, string) {
	tiles := c.tiling >= minTiling
	var conf, named string
	switch c.kind {
	case stepNumbered:
		named, conf = "named and numbered like an iteration", "medium"
		if tiles {
			conf = "high"
		}
	case stepWord:
		named, conf = "named like an iteration", "low"
		if tiles {
			conf = "medium"
		}
	case stepEpoch:
		named, conf = "named like an epoch (the trace has no range named like a step)", "low"
	default:
		named, conf = "not named like an iteration, but repeating and tiling its process's time", "low"
	}
	return conf, fmt.Sprintf("NVTX range %q: %s; %d ranges covering %.0f%% of their process's time from the first to the last", c.key, named, len(c.rs), 100*c.tiling)
}

// tiling is the share of the windows (first start to last end, per
// process) that ranges g of rt (sorted by start, not overlapping within a
// process) cover.
func tiling(rt *rangeTable, g []int32) float64 {
	rs, rkeys, longEnds := rt.ranges, rt.rangeKeys, rt.longEnds
	type win struct{ first, last, covered int64 }
	wins := map[int32]*win{}
	for _, j := range g {
		r := &rs[j]
		p := rkeys[r.key].proc
		w := wins[p]
		if w == nil {
			w = &win{first: r.start}
			wins[p] = w
		}
		end := rangeEnd(r, longEnds)
		w.last = max(w.last, end)
		w.covered += end - r.start
	}
	var covered, window int64
	for _, w := range wins {
		covered += w.covered
		window += w.last - w.first
	}
	if window <= 0 {
		return 0
	}
	return min(1, float64(covered)/float64(window))
}
