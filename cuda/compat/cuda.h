/*
 * gpnb's compatibility wrapper around the CUDA driver API header.
 *
 * gorgonia.org/cu v0.9.6 calls a few driver functions with their CUDA 12
 * signatures. CUDA 13's cuda.h maps those names onto new versions with more
 * parameters, so cu's cgo code stops compiling:
 *
 *   cuCtxCreate            -> cuCtxCreate_v4(pctx, CUctxCreateParams*, flags, dev)
 *   cuMemAdvise            -> cuMemAdvise_v2(ptr, count, advice, CUmemLocation)
 *   cuMemPrefetchAsync     -> cuMemPrefetchAsync_v2(ptr, count, CUmemLocation, flags, stream)
 *   cuGraphAddDependencies -> (graph, from, to, CUgraphEdgeData*, n)
 *   cuGraphGetEdges        -> (graph, from, to, CUgraphEdgeData*, n*)
 *
 * Put this directory first on the include path and cu's `#include <cuda.h>`
 * lands here:
 *
 *   CGO_CFLAGS="-I$PWD/cuda/compat" go build -tags cuda ./...
 *
 * We include the real header with #include_next, and for CUDA >= 13 define
 * static inline functions with the old signatures that call the new ones
 * with the neutral extra argument (NULL parameters, NULL edge data, flags 0,
 * a device location), then point the old names at them. cgo resolves an
 * object-like macro that names a function, which is exactly how cuda.h
 * itself versions its API (#define cuCtxCreate cuCtxCreate_v2), so cu's
 * C.cuCtxCreate(...) calls reach the shims. With CUDA 11 and 12 headers this
 * file only includes the real cuda.h.
 */
#ifndef GPNB_CUDA_COMPAT_H
#define GPNB_CUDA_COMPAT_H

#include_next <cuda.h>

#if defined(CUDA_VERSION) && CUDA_VERSION >= 13000
#include <stddef.h>

static inline CUresult gpnb_cuCtxCreate3(CUcontext *pctx, unsigned int flags, CUdevice dev) {
    /* A NULL CUctxCreateParams gives an ordinary context (no execution
     * affinity, no CIG), the CUDA 12 behaviour. */
    return cuCtxCreate(pctx, NULL, flags, dev);
}

static inline CUmemLocation gpnb_location(CUdevice dev) {
    CUmemLocation loc;
    if (dev == CU_DEVICE_CPU) {
        loc.type = CU_MEM_LOCATION_TYPE_HOST;
        loc.id = 0;
    } else {
        loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
        loc.id = (int)dev;
    }
    return loc;
}

static inline CUresult gpnb_cuMemAdvise4(CUdeviceptr ptr, size_t count, CUmem_advise advice, CUdevice dev) {
    return cuMemAdvise(ptr, count, advice, gpnb_location(dev));
}

static inline CUresult gpnb_cuMemPrefetchAsync4(CUdeviceptr ptr, size_t count, CUdevice dev, CUstream stream) {
    return cuMemPrefetchAsync(ptr, count, gpnb_location(dev), 0, stream);
}

static inline CUresult gpnb_cuGraphAddDependencies4(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n) {
    return cuGraphAddDependencies(g, from, to, NULL, n);
}

static inline CUresult gpnb_cuGraphGetEdges4(CUgraph g, CUgraphNode *from, CUgraphNode *to, size_t *n) {
    return cuGraphGetEdges(g, from, to, NULL, n);
}

#undef cuCtxCreate
#define cuCtxCreate gpnb_cuCtxCreate3
#undef cuMemAdvise
#define cuMemAdvise gpnb_cuMemAdvise4
#undef cuMemPrefetchAsync
#define cuMemPrefetchAsync gpnb_cuMemPrefetchAsync4
#undef cuGraphAddDependencies
#define cuGraphAddDependencies gpnb_cuGraphAddDependencies4
#undef cuGraphGetEdges
#define cuGraphGetEdges gpnb_cuGraphGetEdges4

#endif /* CUDA_VERSION >= 13000 */
#endif /* GPNB_CUDA_COMPAT_H */
