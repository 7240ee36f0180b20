// Package cuda is gpnb's GPU backend: the kernel operator
// H_θ = K_θ(X,X) + σ²I of package gpnb/kernel on an NVIDIA GPU, with the
// whole linear solve kept in device memory. It uses the CUDA driver API
// (gorgonia.org/cu and a few direct calls) and hand-written kernels in CUDA C
// (cuda/kernels/gpnb.cu) whose PTX and cubin are checked in and embedded, so
// a user needs the driver and its headers, not nvcc.
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
// # The operator and its Space
//
// NewOperator uploads X once and keeps it, the scaled inputs Z = (X − x̄)/ℓ,
// and (in ModeDense) the n×n matrix K on the device, in float64 or, with
// Options.Precision Float32, float32 (half the memory and half the bytes
// read per product; right-hand sides and sums stay float64). It implements
// kernel.GramOperator and kernel.Rekerneler, so the optimiser can use it in
// place of the CPU operator, and solvers.SpaceOperator: a solver started on
// it keeps V, R and its other vectors in a Space (NewSpace) in device
// memory, and per iteration only scalars cross between host and device.
//
//   - The Space's products (H·V for chosen columns, SGD's rows of H·V, AP's
//     H[:,I]·Δ) stream K through shared memory (mulk: a pipeline of
//     asynchronous copies, cp.async on sm_80 and later, each block keeping
//     several stages of K in flight while it computes on one, each thread
//     two output rows and exactly as many float64 accumulators per row as
//     columns: 17 right-hand sides are 17 accumulators), or compute the
//     kernel values on the fly (mulfree); SGD's rows are read along the
//     rows, a warp per two rows (mulrows). With Float32 K is read in
//     float32 and summed in float64 (the CPU's mixed precision).
//   - K is built by tiles of 64×64 entries over the upper triangle, mirrored
//     (build), and the gradient's reduction (Reduce) runs over tiles of
//     pairs of the upper triangle, the trace of W included, into
//     per-block sums added on the device; SetKernel returns once K is built
//     and Work's BuildSeconds and ReduceSeconds are device times measured
//     by CUDA events.
//   - AP's block is factorised on the device (Factorize: a right-looking
//     blocked Cholesky, then the triangular inverse), so Solve is two
//     triangular products.
//   - Everything runs on one stream, launched without waiting. CG's
//     iteration (Space.CGStep) computes α and β on the device and waits
//     once, for its 2k scalars; Dots waits for its k. Small per-call data
//     (coefficients, column lists), Upload/Download and Reduce's inputs go
//     through pinned host memory. A closed Space's blocks go to the
//     operator's pool, so a solver per Adam step allocates nothing after
//     the first; a buffer is freed only after the stream is synchronised.
//   - The methods of solvers.Operator (MulTo, RowsMulTo, ColsMulTo,
//     BlockTo), Reduce and CrossMulTo (predictions) copy their inputs to
//     the device and the results back per call.
//   - CUDA graphs are not used: gorgonia.org/cu exposes no stream capture,
//     graph instantiation or launch, and a graph fixes every kernel
//     argument, while an iteration's column list and scalars are staged in
//     an area that moves from call to call. An iteration queues its
//     launches (about ten) without waiting, so what a graph would save is
//     their issue cost, a few microseconds each.
//
// # Determinism
//
// Every output element is written by one thread, every sum runs in an order
// fixed by the sizes alone (chunks of fixed length, added in order; tiles
// of fixed size added by a fixed tree; never by the grid or the number of
// multiprocessors) and there are no atomics, so the same inputs give the
// same bits on the same GPU. The kernels are compiled with -fmad=false
// (multiplies and adds carry an explicit rounding, which no JIT may fuse;
// the products' fma is explicit), so the bits do not depend on which
// driver compiled the PTX (TestModuleBits checks the cubin against the
// JIT). The Space's element-wise operations give the bits of
// solvers.HostSpace; its sums and products round differently from the
// host's BLAS.
//
// # Kernels
//
// kernels/gpnb.cu holds every kernel; kernels/gen.sh (`make ptx`, needs
// nvcc 11.8 or later) compiles it to kernels/gpnb_sm90.ptx (compute
// capability 9.0 and later), kernels/gpnb_sm60.ptx (6.0 to 8.x) and
// kernels/gpnb_sm90.cubin (9.0: H100, H200). The driver loads the cubin on
// 9.0 (no JIT at start-up) and otherwise has its JIT compile the PTX; the
// environment variable GPNB_CUDA_MODULE names a module file to load instead
// (kernels compiled on the GPU machine, say). Opening a device checks that
// the module has every kernel the Go code launches and otherwise fails
// naming the kernel and gen.sh.
//
// # Testing without a GPU
//
// The build tag cudaemu (tests only; needs a C++20 compiler) compiles the
// same kernels as host C++ (emu.cc: every thread of a block is a fiber that
// yields at __syncthreads, shared memory capped at 48 KiB as on the GPU)
// behind the same Go code. Its stream is a queue run at synchronisation, as
// a GPU's is, and it counts the traffic between host and device and can
// simulate running out of memory and a kernel failing, so the tests check
// every Space operation against solvers.HostSpace, the solvers on the
// device against the CPU, what crosses per iteration and the error paths:
//
//	go test -tags cudaemu ./cuda
//
// kernels/stamp.sh records gpnb.cu's hash in the emulation's build flags
// (Go's cache does not see the included file); gen.sh runs it. With the tag
// cuda the same tests run on the GPU and skip when none is usable (but note
// that gorgonia.org/cu exits at start-up when the driver cannot initialise,
// before any test runs).
//
// # Errors
//
// Bad input to NewOperator and SetKernel (NaN, wrong dimensions, unknown
// family, no device) returns an error; so does running out of device memory,
// wrapping ErrOutOfMemory with advice (--precision float32,
// --operator matrixfree). The GramOperator methods have no error result:
// wrong dimensions panic as they do for the CPU operator, and a driver
// failure during a call fills the destination with NaN (so a solver stops)
// and is kept for Err. A Space keeps the first failure of an asynchronous
// operation and returns it from its next method with an error result.
package cuda
