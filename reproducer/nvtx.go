package reproducer

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

// A minimal NVTX v3 loader. NVTX3 is header-only: the first NVTX call
// dlopens the tool named by NVTX_INJECTION64_PATH (nsys sets it) and calls
// its InitializeInjectionNvtx2 with an export-table getter; the tool then
// asks for each module's function table and writes its implementations
// into the slots. Only RangePushA and RangePop are used here; every other
// slot is accepted and ignored. When no tool is present, ranges are no-ops.
// Without the injection variable, libnvToolsExt.so.1 (NVTX2) is used if
// the loader finds it.

typedef void (*NvtxFunctionPointer)(void);
typedef NvtxFunctionPointer **NvtxFunctionTable;
typedef struct { size_t struct_size; int (*GetModuleFunctionTable)(int, NvtxFunctionTable *, unsigned int *); } EtblCallbacks;
typedef struct { size_t struct_size; uint32_t version; uint32_t reserved0; void (*SetInjectionNvtxVersion)(uint32_t); } EtblVersion;
typedef int (*pushA_t)(const char *);
typedef int (*pop_t)(void);
typedef int (*initInj_t)(const void *(*)(uint32_t));

// Module sizes (NVTX_CBID_*_SIZE) for CORE, CUDA, OPENCL, CUDART, CORE2, SYNC.
static const unsigned int mod_size[7] = {0, 16, 9, 15, 7, 16, 7};
static NvtxFunctionPointer slots[7][17];
static NvtxFunctionPointer *tables[7][18];

static int get_module_table(int module, NvtxFunctionTable *out, unsigned int *size) {
	if (module < 1 || module > 6) return 0;
	unsigned int n = mod_size[module];
	for (unsigned int i = 0; i <= n; i++) tables[module][i] = (i == 0 || i == n) ? 0 : &slots[module][i];
	if (out) *out = tables[module];
	if (size) *size = n;
	return 1;
}
static void set_version(uint32_t v) { (void)v; }
static EtblCallbacks etbl_cb = {sizeof(EtblCallbacks), get_module_table};
static EtblVersion etbl_ver = {sizeof(EtblVersion), 3, 0, set_version};
static const void *get_export_table(uint32_t id) {
	if (id == 1) return &etbl_cb;
	if (id == 3) return &etbl_ver;
	return 0;
}

static pushA_t nvtx_push_fn;
static pop_t nvtx_pop_fn;

// nvtx_setup returns 1 for an injected tool, 2 for libnvToolsExt, 0 for none.
static int nvtx_setup(void) {
	const char *path = getenv("NVTX_INJECTION64_PATH");
	if (path && *path) {
		void *h = dlopen(path, RTLD_LAZY);
		if (h) {
			initInj_t init = (initInj_t)dlsym(h, "InitializeInjectionNvtx2");
			if (init && init(get_export_table)) {
				nvtx_push_fn = (pushA_t)slots[1][9];  // NVTX_CBID_CORE_RangePushA
				nvtx_pop_fn = (pop_t)slots[1][11];    // NVTX_CBID_CORE_RangePop
				if (nvtx_push_fn && nvtx_pop_fn) return 1;
			}
		}
	}
	void *h = dlopen("libnvToolsExt.so.1", RTLD_LAZY);
	if (h) {
		nvtx_push_fn = (pushA_t)dlsym(h, "nvtxRangePushA");
		nvtx_pop_fn = (pop_t)dlsym(h, "nvtxRangePop");
		if (nvtx_push_fn && nvtx_pop_fn) return 2;
	}
	nvtx_push_fn = 0; nvtx_pop_fn = 0;
	return 0;
}
static void nvtx_push(const char *s) { if (nvtx_push_fn) nvtx_push_fn(s); }
static void nvtx_pop(void) { if (nvtx_pop_fn) nvtx_pop_fn(); }
*/
import "C"

import (
	"sync"
	"unsafe"
)

var (
	nvtxOnce sync.Once
	nvtxMode string
)

// nvtxInit loads an NVTX tool if one is present and returns how NVTX
// ranges are emitted: "injection", "libnvToolsExt" or "none".
func nvtxInit() string {
	nvtxOnce.Do(func() {
		switch C.nvtx_setup() {
		case 1:
			nvtxMode = "injection"
		case 2:
			nvtxMode = "libnvToolsExt"
		default:
			nvtxMode = "none"
		}
	})
	return nvtxMode
}

func nvtxPush(name string) {
	cs := C.CString(name)
	C.nvtx_push(cs)
	C.free(unsafe.Pointer(cs))
}

func nvtxPop() { C.nvtx_pop() }
