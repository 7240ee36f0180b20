/* Test double of a CUDA 13 cuda.h: the 11.8 header plus the CUDA 13
 * signatures of the five functions gorgonia.org/cu calls the old way. */
#ifndef FAKE13_CUDA_H
#define FAKE13_CUDA_H
#include_next <cuda.h>
#undef CUDA_VERSION
#define CUDA_VERSION 13000
typedef struct CUctxCreateParams_st { void *execAffinityParams; int numExecAffinityParams; void *cigParams; } CUctxCreateParams;
typedef struct CUgraphEdgeData_st { unsigned char from_port, to_port, type, reserved[5]; } CUgraphEdgeData;
#define CU_MEM_LOCATION_TYPE_HOST ((CUmemLocationType)2)
CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *p, unsigned int flags, CUdevice dev);
#undef cuCtxCreate
#define cuCtxCreate cuCtxCreate_v4
CUresult CUDAAPI cuMemAdvise_v2(CUdeviceptr p, size_t n, CUmem_advise a, CUmemLocation l);
#define cuMemAdvise cuMemAdvise_v2
CUresult CUDAAPI cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation l, unsigned int f, CUstream s);
#define cuMemPrefetchAsync cuMemPrefetchAsync_v2
CUresult CUDAAPI cuGraphAddDependencies_v2(CUgraph g, const CUgraphNode *a, const CUgraphNode *b, const CUgraphEdgeData *e, size_t n);
#define cuGraphAddDependencies cuGraphAddDependencies_v2
CUresult CUDAAPI cuGraphGetEdges_v2(CUgraph g, CUgraphNode *a, CUgraphNode *b, CUgraphEdgeData *e, size_t *n);
#define cuGraphGetEdges cuGraphGetEdges_v2
#endif
