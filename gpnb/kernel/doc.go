// Package kernel holds the stationary covariance functions of gpnb (Matérn-1/2,
// 3/2, 5/2 and RBF with ARD length scales), their hyperparameters in
// constrained and softplus-raw form, and the CPU kernel operator
// H_θ = K_θ(X,X) + σ²I that the solvers iterate on.
//
// Hyperparameters are ordered θ = (ℓ_1..ℓ_d, s, σ) everywhere: length scales,
// signal scale, noise scale. The kernel is k(x,x') = s²·m(r) with
// r = ‖(x−x')/ℓ‖, and H = K + σ²I, as in the paper (section 2).
//
// # The operator
//
// NewOperator builds an *Operator, which implements solvers.Operator (H·V,
// rows, columns, blocks and the diagonal of H) and GramOperator (those plus
// the gradient reductions Reduce/ReduceDense and the predictive product
// CrossMulTo). It works in one of two modes, chosen from Options.MemoryBudget
// unless forced:
//
//   - ModeDense computes K once per θ (n(n+1)/2 kernel values, mirrored) and
//     multiplies with gemm.
//   - ModeMatrixFree keeps only Z = (X − x̄)/ℓ and recomputes tiles of K for
//     every product: O(n·d) memory, n² kernel values per product.
//
// Options.Precision chooses float64 (the default), float32 or mixed for K
// and its products. Float32 stores K in half the memory and
// multiplies with sgemm, about twice as fast as dgemm: the right-hand sides
// are rounded to float32 once per product and the result converted back
// once, where σ²V is added in float64. Products are then accurate to about
// 1e-6 relative; that is enough for the paper's tolerances, but iterative
// solvers take more iterations on ill-conditioned H, since a relative
// error of 2⁻²⁴ per product slows their convergence (DESIGN.md). The gradient reductions and
// CrossMulTo stay in float64. Mixed stores K in float32 like Float32 but
// multiplies in float64: K's values convert exactly, V is not rounded and
// every sum is float64, so the only rounding is K's own, once per θ. That is
// a fixed perturbation of H, which a solver sees as a slightly different
// system rather than as noise in every product, and CG keeps float64's
// iteration counts (TestFloat32CGPol). Dense MulTo, the product CG and the
// probes use, goes through a vectorised AVX2+FMA kernel in cgo builds on
// amd64 (MixedKernel), bound like sgemm by reading K's float32 values;
// the other products convert K's tiles to float64 for dgemm. In
// ModeMatrixFree Mixed is Float64. Precision() (or PrecisionOf for any
// GramOperator) reports the precision, and Precision.Epsilon its unit
// roundoff.
//
// Kernel values are computed in float64 from the gemm-shaped distances. In
// cgo builds on amd64 (the default there, no tag needed) they are evaluated
// four at a time with AVX2 where the CPU has it (VectorKernel), by a
// lane-for-lane port of Go's math.Exp that gives the same bits as the Go
// code, several times faster; elsewhere by the Go code.
// Work reports, besides counts, the seconds spent building K, in products
// and in the reductions, so a caller can split a step's time.
//
// Distances use the gemm form r² = |z_a|² + |z_b|² − 2z_a·z_b on centred
// inputs, falling back to direct differences for near-duplicate pairs where
// that form would cancel (r = 0 is exact on the diagonal). SetKernel rebuilds
// the operator for new hyperparameters in place, reusing the dense cache.
//
// # Partial products
//
// The solvers' partial products cost their share of H, not a full product:
// RowsMulTo and ColsMulTo read (dense) or compute (matrix-free) only the
// len(idx)·n entries of K they need, and BlockTo only the upper triangle of
// H[idx,idx]. On the dense cache a contiguous idx (alternating projections'
// blocks) is multiplied in place: H[idx,:]·V and H[:,idx]·D = K[:,idx]·D are
// gemms over views of the cache, row tile by row tile, with no copy.
// Scattered, unsorted or repeated indices (SGD's mini-batches) gather whole
// row segments of K into a reused per-worker buffer, a column chunk at a
// time, and multiply from there; for ColsMulTo the symmetry of K turns the
// scattered column reads into row reads, K[I,idx] = K[idx,I]ᵀ. A float32
// operator takes the same paths in float32 (gathering without conversion).
// Buffers belong to the operator and its workers, so repeated calls
// allocate nothing.
//
// # Determinism
//
// All work is cut into fixed tiles of rows, each accumulated over column
// chunks in ascending order, and reductions combine per-tile partial sums in
// tile order. Neither depends on GOMAXPROCS or Options.Workers, so every
// result is bitwise reproducible on one machine whatever the core count.
// gonum's gemm partitions only the output, so it is deterministic too. With
// the build tag openblas, blas64 calls go to OpenBLAS (cgo, -lopenblas),
// which is reproducible only for a fixed thread count: the package pins it to
// one thread unless OPENBLAS_NUM_THREADS is set; blas32 (float32) goes to
// OpenBLAS too, pinned alike. BLASName reports which BLAS is in use. The
// mixed kernel sums each output in an order fixed by the shapes alone
// (chunks of 1024 columns, four FMA lanes each; mixed_amd64.c). Each
// precision is deterministic on its own; their results differ.
//
// # Random features and the pathwise estimator
//
// PriorSamples holds F random Fourier features (Gaussian spectral density
// for RBF, Student-t with 2ν degrees of freedom for Matérn-ν) and the
// weights of s prior function samples, drawn once from a seed and rescaled
// to each θ. PathwiseDraws adds the noise draws ε for the training points;
// its ProbesTo gives the right-hand sides ξ_j = f_j(X) + σε_j ~ N(0, H) of
// the pathwise gradient estimator (Lin et al., NeurIPS 2024, arXiv
// 2405.18457). From the solutions ζ_j = H⁻¹ξ_j and v_y = H⁻¹y,
// PathwiseTrace and PathwiseGradient reduce against ∂H (one Reduce), and
// PathwisePosterior gives posterior samples, mean and variance at test
// points (one CrossMulTo), with no further solve. Feature evaluation uses
// the same fixed row tiles, so it too is bitwise reproducible.
//
// This package knows nothing of solvers or optimisers; it is the bottom layer
// that both the CPU and the CUDA backends share.
package kernel
