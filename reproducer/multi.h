// NCCL glue for the multi-rank scenarios: libnccl is dlopened at run time.
#ifndef UMTRACE_REPRO_MULTI_H
#define UMTRACE_REPRO_MULTI_H
#include <stddef.h>
#include "um.h"

const char *um_nccl_load(const char *path);
int um_nccl_version(int *v);
int um_nccl_id(void *out128);
int um_nccl_init(void **comm, int nranks, const void *id128, int rank);
int um_nccl_allreduce(void *comm, CUdeviceptr buf, size_t count, CUstream s);
int um_nccl_destroy(void *comm);
const char *um_nccl_err(int r);
#endif
