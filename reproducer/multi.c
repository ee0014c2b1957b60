// NCCL through dlopen: the few entry points the multi-GPU scenario uses,
// with the ABI types of nccl.h (ncclUniqueId is 128 bytes passed by value;
// ncclFloat32 = 7, ncclSum = 0).
#include <dlfcn.h>
#include <string.h>
#include "multi.h"

typedef struct { char internal[128]; } ncclUniqueId;
typedef void *ncclComm_t;

static struct {
	void *lib;
	int (*GetVersion)(int *);
	int (*GetUniqueId)(ncclUniqueId *);
	int (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
	int (*AllReduce)(const void *, void *, size_t, int, int, ncclComm_t, CUstream);
	int (*CommDestroy)(ncclComm_t);
	const char *(*GetErrorString)(int);
} nccl;

const char *um_nccl_load(const char *path) {
	if (nccl.lib) return NULL;
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (!h) return "dlopen";
#define SYM(f, n) do { *(void **)(&nccl.f) = dlsym(h, n); if (!nccl.f) { dlclose(h); return n; } } while (0)
	SYM(GetVersion, "ncclGetVersion");
	SYM(GetUniqueId, "ncclGetUniqueId");
	SYM(CommInitRank, "ncclCommInitRank");
	SYM(AllReduce, "ncclAllReduce");
	SYM(CommDestroy, "ncclCommDestroy");
	SYM(GetErrorString, "ncclGetErrorString");
#undef SYM
	nccl.lib = h;
	return NULL;
}

int um_nccl_version(int *v) { return nccl.GetVersion(v); }
int um_nccl_id(void *out) {
	ncclUniqueId id;
	int r = nccl.GetUniqueId(&id);
	memcpy(out, id.internal, sizeof id.internal);
	return r;
}
int um_nccl_init(void **comm, int nranks, const void *id128, int rank) {
	ncclUniqueId id;
	memcpy(id.internal, id128, sizeof id.internal);
	return nccl.CommInitRank((ncclComm_t *)comm, nranks, id, rank);
}
int um_nccl_allreduce(void *comm, CUdeviceptr buf, size_t count, CUstream s) {
	return nccl.AllReduce((const void *)buf, (void *)buf, count, 7, 0, (ncclComm_t)comm, s);
}
int um_nccl_destroy(void *comm) { return nccl.CommDestroy((ncclComm_t)comm); }
const char *um_nccl_err(int r) { return nccl.GetErrorString ? nccl.GetErrorString(r) : "nccl not loaded"; }

