package reproducer

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

typedef int nvrtcResult;
typedef void *nvrtcProgram;
typedef nvrtcResult (*pCreate)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
typedef nvrtcResult (*pCompile)(nvrtcProgram, int, const char *const *);
typedef nvrtcResult (*pSize)(nvrtcProgram, size_t *);
typedef nvrtcResult (*pGet)(nvrtcProgram, char *);
typedef nvrtcResult (*pDestroy)(nvrtcProgram *);
typedef const char *(*pErr)(nvrtcResult);

// rtc_compile compiles src to PTX with the NVRTC library at lib. On
// success it returns 0 and *ptx (malloc'd); otherwise a negative step
// number or the nvrtcResult, with *log set when NVRTC produced one.
static int rtc_compile(const char *lib, const char *src, const char *arch, char **ptx, char **log, const char **errs) {
	*ptx = NULL; *log = NULL; *errs = NULL;
	void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
	if (!h) { *errs = dlerror(); return -1; }
	pCreate create = (pCreate)dlsym(h, "nvrtcCreateProgram");
	pCompile compile = (pCompile)dlsym(h, "nvrtcCompileProgram");
	pSize logSize = (pSize)dlsym(h, "nvrtcGetProgramLogSize");
	pGet getLog = (pGet)dlsym(h, "nvrtcGetProgramLog");
	pSize ptxSize = (pSize)dlsym(h, "nvrtcGetPTXSize");
	pGet getPTX = (pGet)dlsym(h, "nvrtcGetPTX");
	pDestroy destroy = (pDestroy)dlsym(h, "nvrtcDestroyProgram");
	pErr errstr = (pErr)dlsym(h, "nvrtcGetErrorString");
	if (!create || !compile || !logSize || !getLog || !ptxSize || !getPTX || !destroy) { *errs = "missing nvrtc symbols"; return -2; }
	nvrtcProgram prog;
	nvrtcResult r = create(&prog, src, "umtrace_reproducer.cu", 0, NULL, NULL);
	if (r) { if (errstr) *errs = errstr(r); return r; }
	const char *opts[] = {arch, "-lineinfo", "--std=c++17"};
	r = compile(prog, 3, opts);
	size_t n = 0;
	if (logSize(prog, &n) == 0 && n > 1) { *log = malloc(n); getLog(prog, *log); }
	if (r) { if (errstr) *errs = errstr(r); destroy(&prog); return r; }
	if ((r = ptxSize(prog, &n))) { destroy(&prog); return r; }
	*ptx = malloc(n);
	r = getPTX(prog, *ptx);
	destroy(&prog);
	return r;
}
static void *rtc_preload(const char *path) { return dlopen(path, RTLD_NOW | RTLD_GLOBAL); }
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unsafe"
)

// kernelSource holds the scenario kernels, compiled at run time by NVRTC.
//
// touch: every element p[i] = p[i]*0.5 + v, reps times (reps > 1 makes a
// long kernel so that an implicit synchronization has something to wait for).
// race: a planted shared-memory race. Each thread writes its slot and then,
// without __syncthreads(), reads its neighbour's: thread 31 of warp 0 reads
// the slot warp 1 writes. compute-sanitizer racecheck reports it.
const kernelSource = `
extern "C" __global__ void touch(float *p, unsigned long long n, float v, int reps) {
  for (int r = 0; r < reps; r++)
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)blockDim.x * gridDim.x)
      p[i] = p[i] * 0.5f + v;
}

extern "C" __global__ void race(float *out) {
  __shared__ float s[256];
  s[threadIdx.x] = (float)threadIdx.x;
  // missing __syncthreads(): read-after-write hazard across warps
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}
`

// nvrtcCandidates lists NVRTC libraries to try, newest first.
func nvrtcCandidates() []string {
	var out []string
	if p := os.Getenv("UMTRACE_NVRTC"); p != "" {
		out = append(out, p)
	}
	var dirs []string
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if d := os.Getenv(env); d != "" {
			dirs = append(dirs, filepath.Join(d, "lib64"), filepath.Join(d, "lib"))
		}
	}
	dirs = append(dirs, "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib")
	if m, _ := filepath.Glob("/usr/local/cuda-*/lib64"); len(m) > 0 {
		sort.Sort(sort.Reverse(sort.StringSlice(m)))
		dirs = append(dirs, m...)
	}
	for _, d := range dirs {
		m, _ := filepath.Glob(filepath.Join(d, "libnvrtc.so*"))
		sort.Sort(sort.Reverse(sort.StringSlice(m)))
		for _, f := range m {
			if !strings.Contains(f, "builtins") && !strings.HasSuffix(f, ".alt") {
				out = append(out, f)
			}
		}
	}
	// Whatever the dynamic loader finds on its own path.
	return append(out, "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so")
}

// buildKernels compiles kernelSource for compute capability maj.min and
// returns the PTX and a note on how it was built.
func buildKernels(maj, minr int) (string, string, error) {
	arch := C.CString(fmt.Sprintf("--gpu-architecture=compute_%d%d", maj, minr))
	defer C.free(unsafe.Pointer(arch))
	src := C.CString(kernelSource)
	defer C.free(unsafe.Pointer(src))
	var tried []string
	for _, lib := range nvrtcCandidates() {
		// NVRTC dlopens its builtins library by name; preloading the one
		// next to it makes that work without LD_LIBRARY_PATH.
		if filepath.IsAbs(lib) {
			if m, _ := filepath.Glob(filepath.Join(filepath.Dir(lib), "libnvrtc-builtins.so*")); len(m) > 0 {
				sort.Sort(sort.Reverse(sort.StringSlice(m)))
				cb := C.CString(m[0])
				C.rtc_preload(cb)
				C.free(unsafe.Pointer(cb))
			}
		}
		cl := C.CString(lib)
		var ptx, log *C.char
		var errs *C.char
		r := C.rtc_compile(cl, src, arch, &ptx, &log, (**C.char)(unsafe.Pointer(&errs)))
		C.free(unsafe.Pointer(cl))
		logText := ""
		if log != nil {
			logText = strings.TrimSpace(C.GoString(log))
			C.free(unsafe.Pointer(log))
		}
		if r == -1 {
			tried = append(tried, lib)
			continue
		}
		if r != 0 {
			msg := ""
			if errs != nil {
				msg = C.GoString(errs)
			}
			return "", "", fmt.Errorf("nvrtc (%s): compile kernels: %s (%d): %s", lib, msg, int(r), logText)
		}
		p := C.GoString(ptx)
		C.free(unsafe.Pointer(ptx))
		return p, "nvrtc " + lib, nil
	}
	return "", "", fmt.Errorf("no NVRTC library found (tried %s); set UMTRACE_NVRTC or CUDA_HOME", strings.Join(tried, ", "))
}
