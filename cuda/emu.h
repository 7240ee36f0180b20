//go:build cudaemu && !cuda

// emu.h lets kernels/gpnb.cu compile as host C++ for the cudaemu test
// build. Every thread of a block is a fiber (a stack of its own, see
// emu.cc) on one OS thread; __syncthreads switches to the next fiber, and
// the block goes on once all of its fibers have reached the barrier or
// returned. So the real kernel
// code (indexing, tiling, shared-memory staging, reductions) runs on a
// machine without a GPU, deterministically and without OS threads. Blocks
// run one after another, so the one shared-memory array serves them all.
// Kernels use only dynamic shared memory (extern __shared__ smem[]).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

struct gpnb_dim3 {
    unsigned x, y, z;
};
extern gpnb_dim3 threadIdx, blockIdx, blockDim, gridDim;
void __syncthreads();

struct double2 {
    double x, y;
};
struct float2 {
    float x, y;
};

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__
#define __launch_bounds__(...)
#define __align__(n) /* the definition in emu.cc is aligned */
#define __restrict__ __restrict
using std::exp;
using std::fma;
using std::isfinite;
using std::max;
using std::min;
using std::sqrt;
