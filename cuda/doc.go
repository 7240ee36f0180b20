// Package cuda is gpnb's GPU backend: the kernel operator
// H_θ = K_θ(X,X) + σ²I of package gpnb/kernel on an NVIDIA GPU, through the
// CUDA driver API (gorgonia.org/cu) and hand-written kernels in CUDA C
// (cuda/kernels/gpnb.cu) whose PTX is checked in and embedded, so a user
// needs the driver and its headers, not nvcc.
//
// # Build tag
//
// The backend is compiled only with the build tag cuda:
//
//	go build -tags cuda ./...
//
// gorgonia.org/cu initialises the driver in its package init and exits the
// process when that fails, so it must never enter a default build. Without
// the tag this package still compiles: Available and New return an error
// wrapping ErrNotBuilt that says how to rebuild, so a program can offer a
// "--backend cuda" switch and fail clearly.
//
// Building with the tag needs cuda.h and libcuda.so (the driver, or the
// toolkit's link stub). CUDA 11.8 and 12.x headers work as they are (12.x
// still maps cuCtxCreate and friends to their 3-argument forms); for CUDA
// 13 headers put the compatibility header in cuda/compat first on the
// include path:
//
//	CGO_CFLAGS="-I$PWD/cuda/compat" go build -tags cuda ./...
//
// It maps the calls that gorgonia.org/cu v0.9.6 makes with their CUDA 12
// signatures (cuCtxCreate, cuMemAdvise, cuMemPrefetchAsync,
// cuGraphAddDependencies, cuGraphGetEdges) onto their CUDA 13 forms; with
// older headers it only includes the real cuda.h. cuda/compat/check.sh
// checks it against a test double of those CUDA 13 declarations.
//
// # The operator
//
// NewOperator uploads X once and keeps it, the scaled inputs Z = (X − x̄)/ℓ,
// and (in ModeDense) the n×n matrix K on the device. It implements
// kernel.GramOperator and kernel.Rekerneler, so every solver and the
// optimiser can use it in place of the CPU operator:
//
//   - MulTo, RowsMulTo, ColsMulTo: one thread per output row and 16
//     right-hand-side columns, column tiles of Z and V staged in shared
//     memory, kernel values computed on the fly (matrix-free) or read from
//     the dense cache;
//   - BlockTo: H[I,I] for alternating projections;
//   - Reduce, ReduceDense: the fused kernel-derivative reduction of the
//     gradient, Σ_ab W_ab ∂H_ab/∂θ_k for every θ_k in one pass;
//   - CrossMulTo: K(Xs,X)·V for predictions.
//
// Right-hand sides are uploaded per call into device buffers that are
// reused. A solver that keeps B and V on the GPU can use device-resident
// matrices instead (Operator.NewMatrix, Matrix.Upload/Download,
// Operator.MulDeviceTo) and copy nothing per iteration.
//
// Precision Float64 computes everything in float64 and agrees with the CPU
// operator to about 1e-12 relative; Float32 stores and multiplies in float32
// (reductions still accumulate in float64) for speed and half the memory.
//
// # Kernels and PTX
//
// kernels/gpnb.cu holds every kernel; kernels/gen.sh (`make ptx`) compiles
// it with nvcc to kernels/gpnb_sm90.ptx (compute capability 9.0, H100) and
// kernels/gpnb_sm60.ptx (6.0 to 8.x), which are checked in, embedded into
// the binary, loaded with the driver's module API (cu.LoadData) and
// compiled by the driver's JIT on first use.
//
// # Testing without a GPU
//
// The build tag cudaemu (tests only; needs a C++20 compiler) compiles the
// same kernels as host C++ (emu.cc: every block's threads are std::threads
// meeting at a barrier in __syncthreads, shared memory capped at 48 KiB as
// on the GPU) behind the same Operator code, so the host code and the
// kernel logic can be checked against the CPU operator anywhere:
//
//	go test -tags cudaemu ./cuda
//
// With the tag cuda the same tests run on the GPU and skip when none is
// usable (but note that gorgonia.org/cu exits at start-up when the driver
// cannot initialise, before any test runs).
//
// # Errors and determinism
//
// Bad input to NewOperator and SetKernel (NaN, wrong dimensions, unknown
// family, no device) returns an error. The GramOperator methods have no
// error result: wrong dimensions panic as they do for the CPU operator, and
// a driver failure during a call fills the destination with NaN (so a solver
// stops) and is kept for Err. Every output element is computed by one thread
// with a fixed summation order and no atomics, so results are bitwise
// reproducible from run to run on one device.
package cuda
