// Driver API glue for the reproducer; see um.h.
#include <dlfcn.h>
#include <stdio.h>
#include "um.h"

typedef CUresult (*pInit)(unsigned int);
typedef CUresult (*pDriverGetVersion)(int *);
typedef CUresult (*pDeviceGet)(CUdevice *, int);
typedef CUresult (*pDeviceGetCount)(int *);
typedef CUresult (*pDeviceGetName)(char *, int, CUdevice);
typedef CUresult (*pDeviceGetAttribute)(int *, int, CUdevice);
typedef CUresult (*pPrimaryCtxRetain)(CUcontext *, CUdevice);
typedef CUresult (*pPrimaryCtxRelease)(CUdevice);
typedef CUresult (*pCtxSetCurrent)(CUcontext);
typedef CUresult (*pCtxSynchronize)(void);
typedef CUresult (*pMemGetInfo)(size_t *, size_t *);
typedef CUresult (*pMemAllocManaged)(CUdeviceptr *, size_t, unsigned int);
typedef CUresult (*pMemAlloc)(CUdeviceptr *, size_t);
typedef CUresult (*pMemFree)(CUdeviceptr);
typedef CUresult (*pMemcpyHtoD)(CUdeviceptr, const void *, size_t);
typedef CUresult (*pMemcpyDtoH)(void *, CUdeviceptr, size_t);
typedef CUresult (*pMemPrefetchAsyncV2)(CUdeviceptr, size_t, CUmemLocation, unsigned int, CUstream);
typedef CUresult (*pMemAdviseV2)(CUdeviceptr, size_t, int, CUmemLocation);
typedef CUresult (*pMemAllocAsync)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*pMemFreeAsync)(CUdeviceptr, CUstream);
typedef CUresult (*pStreamCreate)(CUstream *, unsigned int);
typedef CUresult (*pStreamDestroy)(CUstream);
typedef CUresult (*pStreamSynchronize)(CUstream);
typedef CUresult (*pEventCreate)(CUevent *, unsigned int);
typedef CUresult (*pEventDestroy)(CUevent);
typedef CUresult (*pEventRecord)(CUevent, CUstream);
typedef CUresult (*pEventSynchronize)(CUevent);
typedef CUresult (*pEventElapsedTime)(float *, CUevent, CUevent);
typedef CUresult (*pModuleLoadData)(CUmodule *, const void *);
typedef CUresult (*pModuleUnload)(CUmodule);
typedef CUresult (*pModuleGetFunction)(CUfunction *, CUmodule, const char *);
typedef CUresult (*pLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*pGetErrorName)(CUresult, const char **);
typedef CUresult (*pProfilerStop)(void);

static struct {
	void *lib;
	pInit Init;
	pDriverGetVersion DriverGetVersion;
	pDeviceGet DeviceGet;
	pDeviceGetCount DeviceGetCount;
	pDeviceGetName DeviceGetName;
	pDeviceGetAttribute DeviceGetAttribute;
	pPrimaryCtxRetain PrimaryCtxRetain;
	pPrimaryCtxRelease PrimaryCtxRelease;
	pCtxSetCurrent CtxSetCurrent;
	pCtxSynchronize CtxSynchronize;
	pMemGetInfo MemGetInfo;
	pMemAllocManaged MemAllocManaged;
	pMemAlloc MemAlloc;
	pMemFree MemFree;
	pMemcpyHtoD MemcpyHtoD;
	pMemcpyDtoH MemcpyDtoH;
	pMemPrefetchAsyncV2 MemPrefetchAsync;
	pMemAdviseV2 MemAdvise;
	pMemAllocAsync MemAllocAsync;
	pMemFreeAsync MemFreeAsync;
	pStreamCreate StreamCreate;
	pStreamDestroy StreamDestroy;
	pStreamSynchronize StreamSynchronize;
	pEventCreate EventCreate;
	pEventDestroy EventDestroy;
	pEventRecord EventRecord;
	pEventSynchronize EventSynchronize;
	pEventElapsedTime EventElapsedTime;
	pModuleLoadData ModuleLoadData;
	pModuleUnload ModuleUnload;
	pModuleGetFunction ModuleGetFunction;
	pLaunchKernel LaunchKernel;
	pGetErrorName GetErrorName;
	pProfilerStop ProfilerStop;
} cu;

// um_load dlopens libcuda.so.1 and resolves the exact (versioned) driver
// symbols the scenarios use. It returns NULL on success or the name of the
// first missing piece.
const char *um_load(void) {
	if (cu.lib) return NULL;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!h) return "libcuda.so.1";
#define SYM(field, name) do { *(void **)(&cu.field) = dlsym(h, name); if (!cu.field) return name; } while (0)
	SYM(Init, "cuInit");
	SYM(DriverGetVersion, "cuDriverGetVersion");
	SYM(DeviceGet, "cuDeviceGet");
	SYM(DeviceGetCount, "cuDeviceGetCount");
	SYM(DeviceGetName, "cuDeviceGetName");
	SYM(DeviceGetAttribute, "cuDeviceGetAttribute");
	SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	SYM(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
	SYM(CtxSetCurrent, "cuCtxSetCurrent");
	SYM(CtxSynchronize, "cuCtxSynchronize");
	SYM(MemGetInfo, "cuMemGetInfo_v2");
	SYM(MemAllocManaged, "cuMemAllocManaged");
	SYM(MemAlloc, "cuMemAlloc_v2");
	SYM(MemFree, "cuMemFree_v2");
	SYM(MemcpyHtoD, "cuMemcpyHtoD_v2");
	SYM(MemcpyDtoH, "cuMemcpyDtoH_v2");
	// CUDA 12.2+: the CUmemLocation forms. In CUDA 13's cuda.h the plain
	// names are macros for these.
	SYM(MemPrefetchAsync, "cuMemPrefetchAsync_v2");
	SYM(MemAdvise, "cuMemAdvise_v2");
	SYM(MemAllocAsync, "cuMemAllocAsync");
	SYM(MemFreeAsync, "cuMemFreeAsync");
	SYM(StreamCreate, "cuStreamCreate");
	SYM(StreamDestroy, "cuStreamDestroy_v2");
	SYM(StreamSynchronize, "cuStreamSynchronize");
	SYM(EventCreate, "cuEventCreate");
	SYM(EventDestroy, "cuEventDestroy_v2");
	SYM(EventRecord, "cuEventRecord");
	SYM(EventSynchronize, "cuEventSynchronize");
	*(void **)(&cu.EventElapsedTime) = dlsym(h, "cuEventElapsedTime_v2");
	if (!cu.EventElapsedTime) SYM(EventElapsedTime, "cuEventElapsedTime");
	SYM(ModuleLoadData, "cuModuleLoadData");
	SYM(ModuleUnload, "cuModuleUnload");
	SYM(ModuleGetFunction, "cuModuleGetFunction");
	SYM(LaunchKernel, "cuLaunchKernel");
	SYM(GetErrorName, "cuGetErrorName");
#undef SYM
	*(void **)(&cu.ProfilerStop) = dlsym(h, "cuProfilerStop");
	cu.lib = h;
	return NULL;
}

const char *um_errname(CUresult r) {
	const char *s = NULL;
	if (cu.GetErrorName && cu.GetErrorName(r, &s) == 0 && s) return s;
	return "CUDA_ERROR_UNKNOWN";
}

// um_probe runs cuInit(0) and cuDeviceGetCount: a GPU is present when
// both succeed and the count is positive.
CUresult um_probe_init(void) { return cu.Init(0); }
CUresult um_device_count(int *n) { *n = 0; return cu.DeviceGetCount(n); }

CUresult um_init(int ordinal, CUdevice *dev, CUcontext *ctx) {
	CUresult r = cu.Init(0);
	if (r) return r;
	if ((r = cu.DeviceGet(dev, ordinal))) return r;
	if ((r = cu.PrimaryCtxRetain(ctx, *dev))) return r;
	return cu.CtxSetCurrent(*ctx);
}
CUresult um_driver_version(int *v) { return cu.DriverGetVersion(v); }
CUresult um_device_name(CUdevice d, char *buf, int n) { return cu.DeviceGetName(buf, n, d); }
CUresult um_device_attr(CUdevice d, int attr, int *v) { return cu.DeviceGetAttribute(v, attr, d); }
CUresult um_release(CUdevice d) { return cu.PrimaryCtxRelease(d); }
CUresult um_ctx_sync(void) { return cu.CtxSynchronize(); }
CUresult um_mem_info(size_t *freeb, size_t *total) { return cu.MemGetInfo(freeb, total); }
CUresult um_alloc_managed(CUdeviceptr *p, size_t n) { return cu.MemAllocManaged(p, n, 1); } // CU_MEM_ATTACH_GLOBAL
CUresult um_alloc(CUdeviceptr *p, size_t n) { return cu.MemAlloc(p, n); }
CUresult um_free(CUdeviceptr p) { return cu.MemFree(p); }
CUresult um_htod(CUdeviceptr d, const void *h, size_t n) { return cu.MemcpyHtoD(d, h, n); }
CUresult um_dtoh(void *h, CUdeviceptr d, size_t n) { return cu.MemcpyDtoH(h, d, n); }
// loctype: 1 device (id = ordinal), 2 host.
CUresult um_prefetch(CUdeviceptr p, size_t n, int loctype, int id, CUstream s) {
	CUmemLocation loc; loc.type = loctype; loc.id = id;
	return cu.MemPrefetchAsync(p, n, loc, 0, s);
}
CUresult um_advise(CUdeviceptr p, size_t n, int advice, int loctype, int id) {
	CUmemLocation loc; loc.type = loctype; loc.id = id;
	return cu.MemAdvise(p, n, advice, loc);
}
CUresult um_alloc_async(CUdeviceptr *p, size_t n, CUstream s) { return cu.MemAllocAsync(p, n, s); }
CUresult um_free_async(CUdeviceptr p, CUstream s) { return cu.MemFreeAsync(p, s); }
CUresult um_stream_create(CUstream *s) { return cu.StreamCreate(s, 1); } // CU_STREAM_NON_BLOCKING
CUresult um_stream_destroy(CUstream s) { return cu.StreamDestroy(s); }
CUresult um_stream_sync(CUstream s) { return cu.StreamSynchronize(s); }
CUresult um_event_create(CUevent *e) { return cu.EventCreate(e, 0); }
CUresult um_event_destroy(CUevent e) { return cu.EventDestroy(e); }
CUresult um_event_record(CUevent e, CUstream s) { return cu.EventRecord(e, s); }
CUresult um_event_sync(CUevent e) { return cu.EventSynchronize(e); }
CUresult um_event_ms(CUevent a, CUevent b, float *ms) { return cu.EventElapsedTime(ms, a, b); }
CUresult um_module_load(CUmodule *m, const char *ptx) { return cu.ModuleLoadData(m, ptx); }
CUresult um_module_unload(CUmodule m) { return cu.ModuleUnload(m); }
CUresult um_function(CUfunction *f, CUmodule m, const char *name) { return cu.ModuleGetFunction(f, m, name); }

// Kernel launches: the parameter arrays are built here so that no Go
// pointers reach the driver.
CUresult um_launch_touch(CUfunction f, CUstream s, CUdeviceptr p, unsigned long long n, float v, int reps) {
	void *args[] = {&p, &n, &v, &reps};
	return cu.LaunchKernel(f, 1024, 1, 1, 256, 1, 1, 0, s, args, NULL);
}
CUresult um_launch_race(CUfunction f, CUstream s, CUdeviceptr out, unsigned blocks) {
	void *args[] = {&out};
	return cu.LaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, s, args, NULL);
}

// um_cpu_touch writes one float in every 4 KiB page of [p, p+n): on
// managed memory each first touch after a kernel is a CPU page fault.
void um_cpu_touch(CUdeviceptr p, size_t n) {
	volatile float *f = (volatile float *)(uintptr_t)p;
	for (size_t i = 0; i < n / 4; i += 1024) f[i] += 1.0f;
}
void *um_host_alloc(size_t n) { void *p = malloc(n); if (p) memset(p, 0, n); return p; }
void um_host_touch(void *p, size_t n) { um_cpu_touch((CUdeviceptr)(uintptr_t)p, n); }

// um_exit flushes profiler buffers and leaves through libc's exit so that
// atexit handlers run: profilers injected into the process (nsys, CUPTI)
// flush their buffers there, and Go's own exit skips them.
void um_exit(int code) {
	if (cu.ProfilerStop) cu.ProfilerStop();
	fflush(NULL);
	exit(code);
}
