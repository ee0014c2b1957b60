// Driver API glue for the reproducer: the CUDA driver is dlopened at run time.
#ifndef UMTRACE_REPRO_UM_H
#define UMTRACE_REPRO_UM_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;
typedef unsigned long long CUdeviceptr;
typedef struct { int type; int id; } CUmemLocation; // CUmemLocationType, id


const char *um_load(void);
const char *um_errname(CUresult r);
CUresult um_probe_init(void);
CUresult um_device_count(int *n);
CUresult um_init(int ordinal, CUdevice *dev, CUcontext *ctx);
CUresult um_driver_version(int *v);
CUresult um_device_name(CUdevice d, char *buf, int n);
CUresult um_device_attr(CUdevice d, int attr, int *v);
CUresult um_release(CUdevice d);
CUresult um_ctx_sync(void);
CUresult um_mem_info(size_t *freeb, size_t *total);
CUresult um_alloc_managed(CUdeviceptr *p, size_t n);
CUresult um_alloc(CUdeviceptr *p, size_t n);
CUresult um_free(CUdeviceptr p);
CUresult um_htod(CUdeviceptr d, const void *h, size_t n);
CUresult um_dtoh(void *h, CUdeviceptr d, size_t n);
CUresult um_prefetch(CUdeviceptr p, size_t n, int loctype, int id, CUstream s);
CUresult um_advise(CUdeviceptr p, size_t n, int advice, int loctype, int id);
CUresult um_alloc_async(CUdeviceptr *p, size_t n, CUstream s);
CUresult um_free_async(CUdeviceptr p, CUstream s);
CUresult um_stream_create(CUstream *s);
CUresult um_stream_destroy(CUstream s);
CUresult um_stream_sync(CUstream s);
CUresult um_event_create(CUevent *e);
CUresult um_event_destroy(CUevent e);
CUresult um_event_record(CUevent e, CUstream s);
CUresult um_event_sync(CUevent e);
CUresult um_event_ms(CUevent a, CUevent b, float *ms);
CUresult um_module_load(CUmodule *m, const char *ptx);
CUresult um_module_unload(CUmodule m);
CUresult um_function(CUfunction *f, CUmodule m, const char *name);
CUresult um_launch_touch(CUfunction f, CUstream s, CUdeviceptr p, unsigned long long n, float v, int reps);
CUresult um_launch_race(CUfunction f, CUstream s, CUdeviceptr out, unsigned blocks);
void um_cpu_touch(CUdeviceptr p, size_t n);
void *um_host_alloc(size_t n);
void um_host_touch(void *p, size_t n);
void um_exit(int code);
#endif
