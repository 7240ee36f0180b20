//go:build cudaemu && !cuda

// emu.h lets kernels/gpnb.cu compile as host C++ for the cudaemu test
// build: each block's threads run as std::threads that meet at a
// std::barrier in __syncthreads; blocks run one after another, so the one
// shared-memory array serves them all. Slow, but it runs the real kernel
// code (indexing, tiling, shared-memory staging, block reductions) on a
// machine without a GPU.
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>

struct gpnb_dim3 {
    unsigned x, y, z;
};
extern thread_local gpnb_dim3 threadIdx, blockIdx;
extern gpnb_dim3 blockDim, gridDim;
void __syncthreads();

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__
#define __align__(n) /* the definition in emu.cc is aligned */
#define __restrict__ __restrict
using std::max;
using std::min;
