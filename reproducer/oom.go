package reproducer

/*
#include "um.h"
*/
import "C"

import "fmt"

// OtherScenarios run with --scenario but are not in Scenarios (--validate
// checks storm verdicts and committed traces for those). oom is the
// user's case "OOM with memory apparently free".
var OtherScenarios = []Scenario{oomScenario}

var oomScenario = Scenario{Name: "oom", Storm: true, run: runOOM,
	Description: "managed memory storming as in managed, a device buffer, and in the middle step a cuMemAlloc larger than the GPU (fails with CUDA_ERROR_OUT_OF_MEMORY while little is live: for umtrace's allocation-failure report)"}

// cudaErrorOutOfMemory is CUDA_ERROR_OUT_OF_MEMORY (= cudaErrorMemoryAllocation).
const cudaErrorOutOfMemory = 2

func runOOM(g *gpu, r *runner) error {
	p, free, err := r.managed()
	if err != nil {
		return err
	}
	defer free()
	var d C.CUdeviceptr
	if err := ck("cuMemAlloc", C.um_alloc(&d, C.size_t(r.bytes))); err != nil {
		return err
	}
	defer C.um_free(d)
	C.um_cpu_touch(p, C.size_t(r.bytes))
	// More than the whole GPU: refused at once, nothing is allocated (a
	// request that cannot fit does not oversubscribe anything).
	huge := g.info.TotalBytes + 1<<30
	return r.steps(func(i int) error {
		if err := r.touch(r.stream, p, r.floats(), float32(i), touchRepsDefault); err != nil {
			return err
		}
		if err := r.touch(r.stream, d, r.floats(), float32(i), 1); err != nil {
			return err
		}
		if err := ck("cuStreamSynchronize", C.um_stream_sync(r.stream)); err != nil {
			return err
		}
		if i == r.opts.Steps/2 {
			var q C.CUdeviceptr
			switch rc := C.um_alloc(&q, C.size_t(huge)); rc {
			case cudaErrorOutOfMemory:
				fmt.Fprintf(r.opts.Log, "step %d: cuMemAlloc of %d MB failed with CUDA_ERROR_OUT_OF_MEMORY, as planted\n", i, huge>>20)
			case 0:
				C.um_free(q)
				return fmt.Errorf("cuMemAlloc of %d MB succeeded on a %d MB GPU", huge>>20, g.info.TotalBytes>>20)
			default:
				return ck("cuMemAlloc (planted failure)", rc)
			}
		}
		C.um_cpu_touch(p, C.size_t(r.bytes))
		return nil
	})
}
