package analyze

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/umtrace/umtrace/analyze/internal/chunks"
)

// TestRenameKernels renames the kernels, and their long durations' keys,
// by the canonical ids Dedupe gives for "c" interned first, then "a", "b",
// "a", "c", "b", "d" lazily (intern.TestLazyDedupe).
func TestRenameKernels(t *testing.T) {
	ids := []int32{1, 2, 3, 4, 5, 6}
	canon := []int32{0, 1, 2, 1, 0, 2, 6}
	c := &collector{kernels: map[streamKey]*chunks.List[gpuWork]{}, longWork: map[longKey]int64{}}
	k := streamKey{1, 2}
	c.kernels[k] = &chunks.List[gpuWork]{}
	for i, id := range ids {
		c.kernels[k].Push(gpuWork{end: int64(i), dur: 1, name: id})
	}
	c.kernels[k].Push(gpuWork{end: 99, dur: maxDur, name: ids[2]})
	c.longWork[longKey{k, 99, ids[2]}] = 5e9
	c.longWork = renameKernels(c.kernels, c.longWork, canon)
	var got []int32
	for _, w := range c.kernels[k].AppendTo(nil) {
		got = append(got, w.name)
	}
	if !slices.Equal(got, []int32{1, 2, 1, 0, 2, 6, 1}) {
		t.Errorf("renamed kernels %v", got)
	}
	if d := c.longWork[longKey{k, 99, 1}]; d != 5e9 {
		t.Errorf("long duration under the canonical id: %d", d)
	}

	// Source ids' keys (intern.SIDKey): a source id below 2^26 is its own
	// key, -1 a null name, -2-id a large source id's id.
	sids := map[streamKey]*chunks.List[gpuWork]{k: {}}
	for i, key := range []int32{7, -3, 7, -1, 2} {
		sids[k].Push(gpuWork{end: int64(i), dur: 1, name: key})
	}
	long := renameKernels(sids, map[longKey]int64{{k, 1, -3}: 6e9, {k, 4, 2}: 7e9}, []int32{2: 2, 7: 0})
	got = got[:0]
	for _, w := range sids[k].AppendTo(nil) {
		got = append(got, w.name)
	}
	if !slices.Equal(got, []int32{0, 1, 0, -1, 2}) || long[longKey{k, 1, 1}] != 6e9 || long[longKey{k, 4, 2}] != 7e9 {
		t.Errorf("kernels by source id renamed %v, long durations %v", got, long)
	}
}

// TestIsNCCLKernel compares the one-scan test with the two Contains it
// replaced, on chosen and random names.
func TestIsNCCLKernel(t *testing.T) {
	ref := func(s string) bool { return strings.Contains(s, "ncclKernel") || strings.Contains(s, "ncclDevKernel") }
	cases := []string{"", "nccl", "ncclKernel", "ncclDevKernel", "ncclDevKerne", "ncclncclKernel", "xncclDevncclKernel_AllReduce",
		"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "void gemm<ncclDev>(nccl)", "NCCLKernel"}
	rng := rand.New(rand.NewPCG(1, 2))
	parts := []string{"nccl", "Kernel", "Dev", "n", "c", "K", "x", "ncc", "l"}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(6) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		if got, want := IsNCCLKernel(s), ref(s); got != want {
			t.Errorf("IsNCCLKernel(%q) = %v, want %v", s, got, want)
		}
	}
}
