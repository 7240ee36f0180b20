// gpnb CUDA kernels: the kernel operator H = K(X,X) + σ²I of package
// gpnb/kernel on the GPU, and the vector work of solvers.Space (cuda/space.go)
// so that a whole solve stays in device memory. Compiled by
// cuda/kernels/gen.sh (`make ptx`) to PTX for sm_60 and sm_90 and to a cubin
// for sm_90, all checked in and embedded by the Go code; users need only the
// driver, not nvcc. The cudaemu test build compiles this file as host C++
// (cuda/emu.cc).
//
// Conventions shared with cuda/*.go (keep them in step):
//   - every kernel parameter is 8 bytes (pointers, long long, double);
//   - matrices are row-major; the solver's blocks are float64 with their
//     exact number of columns (no padding); K (and Z) are float64 or float32
//     (the operator's precision), K with a leading dimension ldk that is a
//     multiple of 32, its padding zero;
//   - a column selection `cols` is a device list of column indices, or null
//     for 0, 1, 2, ...; per-column coefficients follow its order;
//   - family codes are kernel.Family's values: 0 Matern32, 1 Matern12,
//     2 Matern52, 3 RBF.
//
// Determinism. Every output element is written by one thread, every sum runs
// in an order fixed by the problem's sizes alone (never by the grid, the
// number of multiprocessors or the block size) and there are no atomics, so
// the same inputs give the same bits on the same GPU. The file is compiled
// with -fmad=false: a multiply and an add stay two roundings unless fma() is
// written, so the driver's JIT cannot change the bits by contracting them
// (the element-wise operations of solvers.Space are then bit-identical to
// the host's; the products use explicit fma() and round differently from the
// host's BLAS, within the tolerance the tests allow).
//
// The maths follows gpnb/kernel/tile.go and reduce.go: z = (x − x̄)/ℓ,
// r² = Σ_k (z_ak − z_bk)² (direct differences: no cancellation),
// k = s²·m(r), and for the gradient m(r) and m'(r)/r.
#define GENMAXD 256 // largest d of the generic (MAXD = 0) variants
#define RTILE 16    // reduce: pairs per chunk of W values
#define MT 128      // threads per block of mulk and trimul (one output row each)
#define TJ 128      // rows of the right-hand sides staged per tile (mulk, trimul)
#define CH 128      // rows per chunk of dots and mult
#define NB 32       // block size of the device Cholesky and triangular inverse

// MAXD > 0: the row's z (and the reduce accumulators) live in registers,
// loops fully unrolled to MAXD with a k < d guard. MAXD = 0: the generic
// variant for d ≤ GENMAXD, reading z from global memory (L1) and keeping
// the accumulators in local memory.
#define KLIM (MAXD > 0 ? MAXD : d)

typedef long long i64;

// The dynamic shared memory of every kernel (one declaration: kernels with
// C and C++ linkage share it).
extern __shared__ __align__(16) unsigned char smem[];

__device__ __forceinline__ double sqrt_(double x) { return sqrt(x); }
__device__ __forceinline__ float sqrt_(float x) { return sqrtf(x); }
__device__ __forceinline__ double exp_(double x) { return exp(x); }
__device__ __forceinline__ float exp_(float x) { return expf(x); }

// col returns the c-th selected column.
__device__ __forceinline__ i64 col(const i64 *cols, i64 c) { return cols ? cols[c] : c; }

// kval returns m(r) from r² (the correlation, without s²).
template <typename T>
__device__ __forceinline__ T kval(int fam, T r2) {
    switch (fam) {
    case 0: { // Matern32
        T u = sqrt_((T)3 * r2);
        return ((T)1 + u) * exp_(-u);
    }
    case 1: // Matern12
        return exp_(-sqrt_(r2));
    case 2: { // Matern52
        T u = sqrt_((T)5 * r2);
        return ((T)1 + u + u * u / (T)3) * exp_(-u);
    }
    case 3: // RBF
        return exp_((T)(-0.5) * r2);
    }
    return (T)NAN;
}

// kmd sets m = m(r) and dm = m'(r)/r from r² (dm = 0 at r = 0 for Matern12).
__device__ __forceinline__ void kmd(int fam, double r2, double &m, double &dm) {
    switch (fam) {
    case 0: {
        double u = sqrt(3.0 * r2), e = exp(-u);
        m = (1.0 + u) * e;
        dm = -3.0 * e;
        return;
    }
    case 1: {
        double r = sqrt(r2), e = exp(-r);
        m = e;
        dm = r == 0.0 ? 0.0 : -e / r;
        return;
    }
    case 2: {
        double u = sqrt(5.0 * r2), e = exp(-u);
        m = (1.0 + u + u * u / 3.0) * e;
        dm = -5.0 / 3.0 * (1.0 + u) * e;
        return;
    }
    case 3: {
        double e = exp(-0.5 * r2);
        m = e;
        dm = -e;
        return;
    }
    }
    m = NAN;
    dm = NAN;
}

// scale: Z[a,k] = (X[a,k] − mean[k]) / ell[k] in float64, stored as T. One
// thread per row.
template <typename T>
__device__ void scale(const double *X, i64 n, i64 d, const double *mean, const double *ell, T *Z) {
    i64 a = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (a >= n)
        return;
    for (i64 k = 0; k < d; k++)
        Z[a * d + k] = (T)((X[a * d + k] - mean[k]) / ell[k]);
}

extern "C" __global__ void gpnb_scale_f64(const double *X, i64 n, i64 d, const double *mean, const double *ell, double *Z) {
    scale<double>(X, n, d, mean, ell, Z);
}
extern "C" __global__ void gpnb_scale_f32(const double *X, i64 n, i64 d, const double *mean, const double *ell, float *Z) {
    scale<float>(X, n, d, mean, ell, Z);
}

// build: K[a,b] = s2·m(r_ab) for the dense cache (n×ldk, row-major, the
// columns n..ldk−1 zero). One thread per entry; r² is the direct sum, so K
// is exactly symmetric.
template <typename T>
__device__ void build(const T *__restrict__ Z, i64 n, i64 d, i64 fam, double s2d, T *__restrict__ K, i64 ldk) {
    i64 b = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 a = (i64)blockIdx.y * blockDim.y + threadIdx.y;
    if (a >= n || b >= ldk)
        return;
    if (b >= n) {
        K[a * ldk + b] = (T)0;
        return;
    }
    T r2 = 0;
    for (i64 k = 0; k < d; k++) {
        T u = Z[a * d + k] - Z[b * d + k];
        r2 += u * u;
    }
    K[a * ldk + b] = (T)s2d * kval<T>((int)fam, r2);
}

extern "C" __global__ void gpnb_build_f64(const double *Z, i64 n, i64 d, i64 fam, double s2, double *K, i64 ldk) {
    build<double>(Z, n, d, fam, s2, K, ldk);
}
extern "C" __global__ void gpnb_build_f32(const float *Z, i64 n, i64 d, i64 fam, double s2, float *K, i64 ldk) {
    build<float>(Z, n, d, fam, s2, K, ldk);
}

// block: out[i,j] = K(z_{idx_i}, z_{idx_j}) + noise2·[idx_i = idx_j], m×m
// float64, computed (K null) or read from the dense cache.
template <typename T>
__device__ void block(const T *__restrict__ Z, const T *__restrict__ K, i64 ldk, i64 d, i64 fam, double s2d,
                      double noise2, const i64 *__restrict__ idx, i64 m, double *__restrict__ out) {
    i64 j = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 i = (i64)blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= m)
        return;
    i64 a = idx[i], b = idx[j];
    double v;
    if (K) {
        v = (double)K[a * ldk + b];
    } else {
        T r2 = 0;
        for (i64 k = 0; k < d; k++) {
            T u = Z[a * d + k] - Z[b * d + k];
            r2 += u * u;
        }
        v = (double)((T)s2d * kval<T>((int)fam, r2));
    }
    if (a == b)
        v += noise2;
    out[i * m + j] = v;
}

extern "C" __global__ void gpnb_block_f64(const double *Z, const double *K, i64 ldk, i64 d, i64 fam, double s2,
                                          double noise2, const i64 *idx, i64 m, double *out) {
    block<double>(Z, K, ldk, d, fam, s2, noise2, idx, m, out);
}
extern "C" __global__ void gpnb_block_f32(const float *Z, const float *K, i64 ldk, i64 d, i64 fam, double s2,
                                          double noise2, const i64 *idx, i64 m, double *out) {
    block<float>(Z, K, ldk, d, fam, s2, noise2, idx, m, out);
}

// ---------------------------------------------------------------------------
// Products. Every product writes per-chunk partial sums and gpnb_sumpart adds
// them in chunk order: the sum over j is split into gridDim.y contiguous
// chunks of `chunk` terms (the host derives chunk from the sizes only), each
// summed in ascending j by one thread, so the result does not depend on the
// launch geometry. part[(z·nr + t)·kg + c] is chunk z's sum for output row t
// and the c-th column of the group c0..c0+kg−1 of the selection vcols.
// Right-hand sides are float64 and accumulated with fma in float64 whatever
// the precision of K.

// stagev copies rows j0..j0+jn−1 of V's selected columns c0.. (kg of them,
// zero up to NC) into the shared tile vs (jn × NC), all threads together.
template <int NC>
__device__ __forceinline__ void stagev(double *vs, const double *__restrict__ V, i64 ldv,
                                       const i64 *__restrict__ vcols, i64 c0, i64 kg, i64 j0, i64 jn) {
    for (i64 e = threadIdx.x; e < jn * NC; e += blockDim.x) {
        i64 j = e / NC, c = e - j * NC;
        vs[e] = c < kg ? V[(j0 + j) * ldv + col(vcols, c0 + c)] : 0.0;
    }
}

// storepart writes a thread's kg sums of chunk z for output row t.
template <int NC>
__device__ __forceinline__ void storepart(double *__restrict__ part, i64 z, i64 nr, i64 t, i64 kg,
                                          const double (&acc)[NC]) {
    double *o = part + (z * nr + t) * kg;
#pragma unroll
    for (int c = 0; c < NC; c++)
        if (c < kg)
            o[c] = acc[c];
}

// fma4 adds four terms a_q·vb[q·NC + c] to each accumulator, in order.
template <int NC>
__device__ __forceinline__ void fma4(double (&acc)[NC], double a0, double a1, double a2, double a3,
                                     const double *vb) {
#pragma unroll
    for (int c = 0; c < NC; c++) {
        double s = acc[c];
        s = fma(a0, vb[c], s);
        s = fma(a1, vb[NC + c], s);
        s = fma(a2, vb[2 * NC + c], s);
        s = fma(a3, vb[3 * NC + c], s);
        acc[c] = s;
    }
}

// mulk: part[z][t][c] = Σ_{j in chunk z} M[jidx_j·ldm + t]·V[j, vcols[c0+c]]
// for output rows t < nr, jidx_j = jidx[j] (or j), j < nj. With M = K (a
// symmetric dense cache) that is (K[:, jidx]·V)[t]: H·V for Mul, H[:,I]·Δ for
// MulCols. One thread per output row: a warp's load of M[j, t..t+31] is one
// coalesced 256-byte segment (128 bytes in float32); NC accumulators (NC ≥
// kg, a multiple of 4); a tile of TJ rows of V staged in shared memory is
// read as a broadcast. The loads are software-pipelined: the next four
// values of M are in flight while the current four are multiplied, so each
// thread keeps eight loads outstanding, which with the occupancy that
// __launch_bounds__ guarantees is enough to keep HBM busy. TRI (M the
// float64 factor block of Solve): only j ≤ t (tri = 1) or j ≥ t (tri = 2).
template <typename TK, int NC, bool TRI>
__device__ void mulk(const TK *__restrict__ M, i64 ldm, const i64 *__restrict__ jidx, i64 nj, i64 nr, i64 tri,
                     const double *__restrict__ V, i64 ldv, const i64 *__restrict__ vcols, i64 c0, i64 kg,
                     double *__restrict__ part, i64 chunk) {
    double *vs = (double *)smem;     // TJ × NC
    i64 *js = (i64 *)(vs + TJ * NC); // TJ
    const i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const i64 z = blockIdx.y, jlo = z * chunk, jhi = min(nj, jlo + chunk);
    const bool active = t < nr;
    double acc[NC];
#pragma unroll
    for (int c = 0; c < NC; c++)
        acc[c] = 0;
    for (i64 j0 = jlo; j0 < jhi; j0 += TJ) {
        const i64 jn = min((i64)TJ, jhi - j0);
        __syncthreads();
        stagev<NC>(vs, V, ldv, vcols, c0, kg, j0, jn);
        for (i64 j = threadIdx.x; j < jn; j += blockDim.x)
            js[j] = jidx ? jidx[j0 + j] : j0 + j;
        __syncthreads();
        if (!active)
            continue;
        i64 jb = 0, je = jn;
        if (TRI) {
            if (tri == 1)
                je = min(jn, t + 1 - j0);
            else
                jb = max((i64)0, t - j0);
        }
        const TK *mt = M + t;
        i64 j = jb;
        if (j + 4 <= je) {
            double a0 = (double)mt[js[j] * ldm], a1 = (double)mt[js[j + 1] * ldm];
            double a2 = (double)mt[js[j + 2] * ldm], a3 = (double)mt[js[j + 3] * ldm];
            for (j += 4; j + 4 <= je; j += 4) {
                const double b0 = (double)mt[js[j] * ldm], b1 = (double)mt[js[j + 1] * ldm];
                const double b2 = (double)mt[js[j + 2] * ldm], b3 = (double)mt[js[j + 3] * ldm];
                fma4<NC>(acc, a0, a1, a2, a3, vs + (j - 4) * NC);
                a0 = b0;
                a1 = b1;
                a2 = b2;
                a3 = b3;
            }
            fma4<NC>(acc, a0, a1, a2, a3, vs + (j - 4) * NC);
        }
        for (; j < je; j++) {
            const double m0 = (double)mt[js[j] * ldm];
            const double *vb = vs + j * NC;
#pragma unroll
            for (int c = 0; c < NC; c++)
                acc[c] = fma(m0, vb[c], acc[c]);
        }
    }
    if (active)
        storepart<NC>(part, z, nr, t, kg, acc);
}

// At least 4 blocks per multiprocessor (at most 128 registers a thread), so
// that the host's chunking (at most 384 blocks) runs in one wave on an H100
// (132 SMs) or an A100 (108): a second, almost empty wave would double the
// time of a product.
#define MULK(TK, SUF, C)                                                                                        \
    extern "C" __global__ void __launch_bounds__(MT, 4) gpnb_mulk_##SUF##_c##C(                                 \
        const TK *M, i64 ldm, const i64 *jidx, i64 nj, i64 nr, const double *V, i64 ldv, const i64 *vcols,        \
        i64 c0, i64 kg, double *part, i64 chunk) {                                                               \
        mulk<TK, C, false>(M, ldm, jidx, nj, nr, 0, V, ldv, vcols, c0, kg, part, chunk);                          \
    }
#define TRIMUL(C)                                                                                                \
    extern "C" __global__ void __launch_bounds__(MT, 4) gpnb_trimul_c##C(                                       \
        const double *M, i64 ldm, i64 nr, i64 tri, const double *V, i64 ldv, const i64 *vcols, i64 c0, i64 kg,    \
        double *part, i64 chunk) {                                                                               \
        mulk<double, C, true>(M, ldm, (const i64 *)0, nr, nr, tri, V, ldv, vcols, c0, kg, part, chunk);          \
    }
#define MULK_ALL(C) MULK(double, f64, C) MULK(float, f32, C) TRIMUL(C)
MULK_ALL(4)
MULK_ALL(8)
MULK_ALL(12)
MULK_ALL(16)
MULK_ALL(20)
MULK_ALL(24)
MULK_ALL(28)
MULK_ALL(32)

// mulfree: mulk with the kernel values computed on the fly:
// part[z][t][c] = Σ_{j in chunk z} s2·m(r(Zr[t], Zc[jidx_j]))·V[j, vcols[c0+c]].
// One thread per output row (Zr is Z for H·V and H[:,I]·Δ, the scaled test
// inputs for predictions); tiles of tc inputs and their V rows are staged in
// shared memory; the row's z lives in registers (MAXD ≥ d).
template <typename T, int MAXD, int NC>
__device__ void mulfree(const T *__restrict__ Zr, i64 nr, const T *__restrict__ Zc, const i64 *__restrict__ jidx,
                        i64 nj, i64 d, i64 fam, double s2d, const double *__restrict__ V, i64 ldv,
                        const i64 *__restrict__ vcols, i64 c0, i64 kg, double *__restrict__ part, i64 chunk,
                        i64 tc) {
    double *vs = (double *)smem;      // tc × NC
    T *zs = (T *)(vs + tc * NC);      // tc × d
    const T s2 = (T)s2d;
    const i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const i64 z = blockIdx.y, jlo = z * chunk, jhi = min(nj, jlo + chunk);
    const bool active = t < nr;
    const i64 a = active ? t : 0;
    T za[MAXD > 0 ? MAXD : 1];
#pragma unroll
    for (int k = 0; k < MAXD; k++)
        za[k] = (active && k < d) ? Zr[a * d + k] : (T)0;
    const T *zrow = Zr + a * d;
    double acc[NC];
#pragma unroll
    for (int c = 0; c < NC; c++)
        acc[c] = 0;
    for (i64 j0 = jlo; j0 < jhi; j0 += tc) {
        const i64 jn = min(tc, jhi - j0);
        __syncthreads();
        for (i64 e = threadIdx.x; e < jn * d; e += blockDim.x) {
            i64 j = e / d, k = e - j * d;
            i64 b = jidx ? jidx[j0 + j] : j0 + j;
            zs[e] = Zc[b * d + k];
        }
        stagev<NC>(vs, V, ldv, vcols, c0, kg, j0, jn);
        __syncthreads();
        if (!active)
            continue;
        for (i64 j = 0; j < jn; j++) {
            const T *zb = zs + j * d;
            T r2 = 0;
#pragma unroll
            for (int k = 0; k < KLIM; k++)
                if (k < d) {
                    T u = (MAXD > 0 ? za[k] : zrow[k]) - zb[k];
                    r2 += u * u;
                }
            const double kv = (double)(s2 * kval<T>((int)fam, r2));
            const double *vb = vs + j * NC;
#pragma unroll
            for (int c = 0; c < NC; c++)
                acc[c] = fma(kv, vb[c], acc[c]);
        }
    }
    if (active)
        storepart<NC>(part, z, nr, t, kg, acc);
}

// At least 3 blocks of 128 per multiprocessor: see MULK.
#define MULFREE(T, SUF, D, C)                                                                                    \
    extern "C" __global__ void __launch_bounds__(128, 3) gpnb_mulfree_##SUF##_d##D##_c##C(                      \
        const T *Zr, i64 nr, const T *Zc, const i64 *jidx, i64 nj, i64 d, i64 fam, double s2, const double *V,    \
        i64 ldv, const i64 *vcols, i64 c0, i64 kg, double *part, i64 chunk, i64 tc) {                             \
        mulfree<T, D, C>(Zr, nr, Zc, jidx, nj, d, fam, s2, V, ldv, vcols, c0, kg, part, chunk, tc);               \
    }
#define MULFREE_D(T, SUF, D) MULFREE(T, SUF, D, 8) MULFREE(T, SUF, D, 16) MULFREE(T, SUF, D, 24) MULFREE(T, SUF, D, 32)
MULFREE_D(double, f64, 8)
MULFREE_D(double, f64, 32)
MULFREE_D(double, f64, 0)
MULFREE_D(float, f32, 8)
MULFREE_D(float, f32, 32)
MULFREE_D(float, f32, 0)

// mulrows: rows of H·V for SGD's mini-batch (and RowsMulTo):
// part[z][t][c] = Σ_{j in chunk z} K[rows_t, j]·V[j, vcols[c0+c]], K read from
// the dense cache (FREE false) or computed (FREE true). A warp owns two
// output rows: its lanes run along j (lane ℓ takes j ≡ ℓ mod 32), so each
// warp-wide load of K[rows_t, j..j+31] is one coalesced 256-byte row segment
// (a mini-batch's rows are scattered, and reading them down the columns, as
// mulk does, would waste most of every memory transaction). Each lane sums
// its j in ascending order; the 32 lane sums are then added in lane order,
// so the result is fixed by the sizes. Blocks of 64 threads: 4 rows.
template <typename TK, int NC, bool FREE>
__device__ void mulrows(const TK *__restrict__ K, i64 ldk, const TK *__restrict__ Z, i64 d, i64 fam, double s2d,
                        const i64 *__restrict__ rows, i64 nrows, i64 n, const double *__restrict__ V, i64 ldv,
                        const i64 *__restrict__ vcols, i64 c0, i64 kg, double *__restrict__ part, i64 chunk) {
    double *red = (double *)smem;           // (4·NC) × 32 lane sums
    TK *za = (TK *)(red + 4 * NC * 32);     // 4 × d (FREE)
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const i64 tb = (i64)blockIdx.x * 4;
    const i64 z = blockIdx.y, jlo = z * chunk, jhi = min(n, jlo + chunk);
    const TK s2 = (TK)s2d;
    i64 a[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        i64 t = tb + 2 * w + r;
        a[r] = t < nrows ? rows[t] : -1;
    }
    if (FREE) {
        for (i64 e = threadIdx.x; e < 4 * d; e += blockDim.x) {
            i64 q = e / d, k = e - q * d;
            za[e] = tb + q < nrows ? Z[rows[tb + q] * d + k] : (TK)0;
        }
        __syncthreads();
    }
    double acc[2][NC];
#pragma unroll
    for (int r = 0; r < 2; r++)
#pragma unroll
        for (int c = 0; c < NC; c++)
            acc[r][c] = 0;
    for (i64 j = jlo + lane; j < jhi; j += 32) {
        double v[NC];
#pragma unroll
        for (int c = 0; c < NC; c++)
            v[c] = c < kg ? V[j * ldv + col(vcols, c0 + c)] : 0.0;
#pragma unroll
        for (int r = 0; r < 2; r++) {
            if (a[r] < 0)
                continue;
            double kv;
            if (FREE) {
                const TK *zq = za + (2 * w + r) * d, *zb = Z + j * d;
                TK r2 = 0;
                for (i64 k = 0; k < d; k++) {
                    TK u = zq[k] - zb[k];
                    r2 += u * u;
                }
                kv = (double)(s2 * kval<TK>((int)fam, r2));
            } else {
                kv = (double)K[a[r] * ldk + j];
            }
#pragma unroll
            for (int c = 0; c < NC; c++)
                acc[r][c] = fma(kv, v[c], acc[r][c]);
        }
    }
#pragma unroll
    for (int r = 0; r < 2; r++)
#pragma unroll
        for (int c = 0; c < NC; c++)
            red[((2 * w + r) * NC + c) * 32 + lane] = acc[r][c];
    __syncthreads();
    for (i64 o = threadIdx.x; o < 4 * NC; o += blockDim.x) {
        i64 q = o / NC, c = o - q * NC, t = tb + q;
        if (c >= kg || t >= nrows)
            continue;
        double s = 0;
        for (int l = 0; l < 32; l++)
            s += red[o * 32 + l];
        part[(z * nrows + t) * kg + c] = s;
    }
}

#define MULROWS(TK, SUF, C)                                                                                      \
    extern "C" __global__ void gpnb_mulrows_##SUF##_c##C(const TK *K, i64 ldk, const i64 *rows, i64 nrows,      \
                                                         i64 n, const double *V, i64 ldv, const i64 *vcols,      \
                                                         i64 c0, i64 kg, double *part, i64 chunk) {              \
        mulrows<TK, C, false>(K, ldk, (const TK *)0, 0, 0, 0.0, rows, nrows, n, V, ldv, vcols, c0, kg, part,      \
                              chunk);                                                                            \
    }                                                                                                            \
    extern "C" __global__ void gpnb_mulrowsfree_##SUF##_c##C(const TK *Z, i64 d, i64 fam, double s2,            \
                                                             const i64 *rows, i64 nrows, i64 n, const double *V, \
                                                             i64 ldv, const i64 *vcols, i64 c0, i64 kg,         \
                                                             double *part, i64 chunk) {                          \
        mulrows<TK, C, true>((const TK *)0, 0, Z, d, fam, s2, rows, nrows, n, V, ldv, vcols, c0, kg, part,       \
                             chunk);                                                                             \
    }
#define MULROWS_C(TK, SUF) MULROWS(TK, SUF, 8) MULROWS(TK, SUF, 16) MULROWS(TK, SUF, 24) MULROWS(TK, SUF, 32)
MULROWS_C(double, f64)
MULROWS_C(float, f32)

// sumpart: out[t, ocols[c0+c]] = Σ_z part[z][t][c] (z ascending), plus
// noise2·Vn[nrows_t, ocols[c0+c]] when Vn is not null (nrows_t = nrows[t], or
// t): the σ²V term of H·V. One thread per output element.
extern "C" __global__ void gpnb_sumpart(const double *part, i64 nz, i64 nr, i64 kg, double *out, i64 ldo,
                                        const i64 *ocols, i64 c0, const double *Vn, i64 ldn, const i64 *nrows,
                                        double noise2) {
    i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= nr * kg)
        return;
    i64 t = e / kg, c = e - t * kg;
    double s = part[e];
    for (i64 z = 1; z < nz; z++)
        s += part[z * nr * kg + e];
    i64 j = col(ocols, c0 + c);
    if (Vn)
        s = s + noise2 * Vn[(nrows ? nrows[t] : t) * ldn + j];
    out[t * ldo + j] = s;
}

// ---------------------------------------------------------------------------
// Element-wise operations of solvers.Space, one thread per selected element
// of an r×k selection: row i, the a-th selected column j = cols[a] (or a),
// all blocks with the same leading dimension ld. The expressions are those of
// solvers' HostSpace, so (with -fmad=false) the bits are the host's.
enum {
    V_AXPY,      // y += coef[a]·x
    V_XPBY,      // y = x + coef[a]·y
    V_SCALE,     // y = coef[a]·y, +0 where coef[a] = 0
    V_COPY,      // y = x
    V_GATHER,    // y[i] = x[rows[i]]           (y is r×·)
    V_SCATTER,   // y[rows[i]] = x[i]
    V_AXPYROWS,  // y[rows[i]] += coef[a]·x[i]
    V_SCALEROWS, // y[i] = y[i]·x[i, 0]         (x is the column d)
    V_ADDROWS,   // y[rows[i]] += s·x[i]         (the σ² term of MulCols)
};

extern "C" __global__ void gpnb_vec(i64 op, double *y, const double *x, const i64 *rows, i64 ld, i64 r,
                                    const i64 *cols, i64 k, const double *coef, double s) {
    i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= r * k)
        return;
    i64 i = e / k, a = e - i * k, j = col(cols, a);
    switch (op) {
    case V_AXPY:
        y[i * ld + j] = y[i * ld + j] + coef[a] * x[i * ld + j];
        break;
    case V_XPBY:
        y[i * ld + j] = x[i * ld + j] + coef[a] * y[i * ld + j];
        break;
    case V_SCALE:
        y[i * ld + j] = coef[a] == 0.0 ? 0.0 : y[i * ld + j] * coef[a];
        break;
    case V_COPY:
        y[i * ld + j] = x[i * ld + j];
        break;
    case V_GATHER:
        y[i * ld + j] = x[rows[i] * ld + j];
        break;
    case V_SCATTER:
        y[rows[i] * ld + j] = x[i * ld + j];
        break;
    case V_AXPYROWS:
        y[rows[i] * ld + j] = y[rows[i] * ld + j] + coef[a] * x[i * ld + j];
        break;
    case V_SCALEROWS:
        y[i * ld + j] = y[i * ld + j] * x[i];
        break;
    case V_ADDROWS:
        y[rows[i] * ld + j] = y[rows[i] * ld + j] + s * x[i * ld + j];
        break;
    }
}

// dots: the column dots of Space.Dots by segments. Each segment's rows are
// cut into chunks of CH from its first row (the chunk table: segment s has
// chunks cstart[s]..cstart[s+1]−1; segs null: one segment of the r rows);
// gpnb_dots_part sums one chunk of one column (ascending rows, fma) and
// gpnb_dots_final the chunks of a segment in order. Fixed by the sizes.
extern "C" __global__ void gpnb_dots_part(const double *x, const double *y, i64 ld, const i64 *cols, i64 k, i64 r,
                                          const i64 *segs, const i64 *cstart, i64 nseg, i64 nq, double *part) {
    i64 g = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= nq * k)
        return;
    i64 q = g / k, a = g - q * k, j = col(cols, a);
    i64 lo, hi;
    if (segs) {
        i64 s = 0;
        while (s + 1 < nseg && cstart[s + 1] <= q)
            s++;
        lo = segs[s] + (q - cstart[s]) * CH;
        hi = min(lo + CH, segs[s + 1]);
    } else {
        lo = q * CH;
        hi = min(lo + CH, r);
    }
    double sum = 0;
    for (i64 i = lo; i < hi; i++)
        sum = fma(x[i * ld + j], y[i * ld + j], sum);
    part[g] = sum;
}

extern "C" __global__ void gpnb_dots_final(const double *part, const i64 *cstart, i64 nseg, i64 nq, i64 k,
                                           double *out) {
    i64 g = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= nseg * k)
        return;
    i64 s = g / k, a = g - s * k;
    i64 qlo = cstart ? cstart[s] : 0, qhi = cstart ? cstart[s + 1] : nq;
    double sum = 0;
    for (i64 q = qlo; q < qhi; q++)
        sum += part[q * k + a];
    out[g] = sum;
}

// mult: the chunk sums of MulT, part[(q·rx + p)·k + c] = Σ_{i in chunk q}
// x[i,p]·y[i, cols[c]] for n×rx x; gpnb_sumpart adds the chunks in order.
extern "C" __global__ void gpnb_mult(const double *x, i64 rx, const double *y, i64 ld, i64 n, const i64 *cols,
                                     i64 k, i64 nq, double *part) {
    i64 g = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= nq * rx * k)
        return;
    i64 q = g / (rx * k), rem = g - q * rx * k, p = rem / k, c = rem - p * k, j = col(cols, c);
    i64 lo = q * CH, hi = min(lo + CH, n);
    double s = 0;
    for (i64 i = lo; i < hi; i++)
        s = fma(x[i * rx + p], y[i * ld + j], s);
    part[g] = s;
}

// muladd: y[i, cols[c]] += alpha·Σ_p x[i,p]·u[p, cols[c]] for n×rx x and rx×·
// u (MulAdd), the sum over p in order.
extern "C" __global__ void gpnb_muladd(double *y, i64 ld, i64 n, double alpha, const double *x, i64 rx,
                                       const double *u, const i64 *cols, i64 k) {
    i64 g = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= n * k)
        return;
    i64 i = g / k, c = g - i * k, j = col(cols, c);
    double s = 0;
    for (i64 p = 0; p < rx; p++)
        s = fma(x[i * rx + p], u[p * ld + j], s);
    y[i * ld + j] = y[i * ld + j] + alpha * s;
}

// ---------------------------------------------------------------------------
// Factorize: the Cholesky factor A = UᵀU (U upper) of a k×k block, right-
// looking by blocks of NB in a scratch copy S, then W = U⁻¹ (upper) written
// back into the block, its strict lower triangle set to Wᵀ, so that Solve's
// two triangular products A⁻¹b = W(Wᵀb) read W down the columns (coalesced)
// for either triangle. info (zeroed by the host first): −1 when the upper
// triangle has a NaN or Inf, p+1 when the pivot of row p is not positive;
// once set, every later kernel returns at once.

// chol_init: S = the upper triangle of A (lower zero); info = −1 if it has a
// non-finite entry.
extern "C" __global__ void gpnb_chol_init(const double *A, i64 k, double *S, i64 *info) {
    i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= k * k)
        return;
    i64 i = e / k, j = e - i * k;
    double v = 0;
    if (j >= i) {
        v = A[e];
        if (!isfinite(v))
            *info = -1;
    }
    S[e] = v;
}

// chol_diag: the unblocked factor of the diagonal block at kb (one block of
// threads, the NB×NB block in shared memory).
extern "C" __global__ void gpnb_chol_diag(double *S, i64 k, i64 kb, i64 *info) {
    double *a = (double *)smem; // NB × (NB+1)
    if (*info != 0)
        return;
    const i64 nb = min((i64)NB, k - kb);
    const int T = blockDim.x, tid = threadIdx.x;
    for (i64 e = tid; e < nb * nb; e += T) {
        i64 i = e / nb, j = e - i * nb;
        a[i * (NB + 1) + j] = j >= i ? S[(kb + i) * k + kb + j] : 0.0;
    }
    __syncthreads();
    for (i64 p = 0; p < nb; p++) {
        if (tid == 0) {
            double d = a[p * (NB + 1) + p];
            if (!(d > 0) && *info == 0)
                *info = kb + p + 1;
            a[p * (NB + 1) + p] = sqrt(d);
        }
        __syncthreads();
        const double dp = a[p * (NB + 1) + p];
        for (i64 j = p + 1 + tid; j < nb; j += T)
            a[p * (NB + 1) + j] = a[p * (NB + 1) + j] / dp;
        __syncthreads();
        const i64 m = nb - p - 1;
        for (i64 e = tid; e < m * m; e += T) {
            i64 i = p + 1 + e / m, j = p + 1 + e % m;
            if (i <= j)
                a[i * (NB + 1) + j] = a[i * (NB + 1) + j] - a[p * (NB + 1) + i] * a[p * (NB + 1) + j];
        }
        __syncthreads();
    }
    for (i64 e = tid; e < nb * nb; e += T) {
        i64 i = e / nb, j = e - i * nb;
        if (j >= i)
            S[(kb + i) * k + kb + j] = a[i * (NB + 1) + j];
    }
}

// chol_panel: U[kb:kb+nb, j] = U_kkᵀ⁻¹ S[kb:kb+nb, j] for the columns j to the
// right of the diagonal block, one thread per column.
extern "C" __global__ void gpnb_chol_panel(double *S, i64 k, i64 kb, i64 *info) {
    double *u = (double *)smem; // NB × (NB+1)
    if (*info != 0)
        return;
    const i64 nb = min((i64)NB, k - kb);
    for (i64 e = threadIdx.x; e < nb * nb; e += blockDim.x) {
        i64 i = e / nb, j = e - i * nb;
        u[i * (NB + 1) + j] = j >= i ? S[(kb + i) * k + kb + j] : 0.0;
    }
    __syncthreads();
    const i64 j = kb + nb + (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= k)
        return;
    double x[NB];
#pragma unroll
    for (int p = 0; p < NB; p++) {
        if (p >= nb)
            break;
        double s = S[(kb + p) * k + j];
#pragma unroll
        for (int q = 0; q < p; q++)
            s = s - u[q * (NB + 1) + p] * x[q];
        x[p] = s / u[p * (NB + 1) + p];
        S[(kb + p) * k + j] = x[p];
    }
}

// chol_update: S[i,j] −= Σ_p U[kb+p, i]·U[kb+p, j] for kb+nb ≤ i ≤ j, tiles
// of 16×16 (those below the diagonal return at once).
extern "C" __global__ void gpnb_chol_update(double *S, i64 k, i64 kb, i64 *info) {
    double *ui = (double *)smem, *uj = ui + NB * 16;
    const i64 k0 = kb + NB;
    const i64 i0 = k0 + (i64)blockIdx.y * 16, j0 = k0 + (i64)blockIdx.x * 16;
    if (i0 > j0 + 15 || *info != 0)
        return;
    const int tid = threadIdx.y * 16 + threadIdx.x;
    for (int e = tid; e < NB * 16; e += 256) {
        int p = e / 16, q = e % 16;
        ui[e] = i0 + q < k ? S[(kb + p) * k + i0 + q] : 0.0;
        uj[e] = j0 + q < k ? S[(kb + p) * k + j0 + q] : 0.0;
    }
    __syncthreads();
    const i64 i = i0 + threadIdx.y, j = j0 + threadIdx.x;
    if (i >= k || j >= k || i > j)
        return;
    double s = 0;
#pragma unroll
    for (int p = 0; p < NB; p++)
        s = fma(ui[p * 16 + threadIdx.y], uj[p * 16 + threadIdx.x], s);
    S[i * k + j] = S[i * k + j] - s;
}

// trinv_diag: the inverses of the diagonal blocks of U into A, one block of
// NB threads per diagonal block, one thread per column (back substitution).
extern "C" __global__ void gpnb_trinv_diag(const double *S, i64 k, double *A, i64 *info) {
    double *u = (double *)smem, *w = u + NB * (NB + 1);
    if (*info != 0)
        return;
    const i64 j0 = (i64)blockIdx.x * NB, nb = min((i64)NB, k - j0);
    for (i64 e = threadIdx.x; e < nb * nb; e += blockDim.x) {
        i64 i = e / nb, j = e - i * nb;
        u[i * (NB + 1) + j] = j >= i ? S[(j0 + i) * k + j0 + j] : 0.0;
    }
    __syncthreads();
    const i64 c = threadIdx.x;
    if (c >= nb)
        return;
    w[c * (NB + 1) + c] = 1.0 / u[c * (NB + 1) + c];
    for (i64 i = c - 1; i >= 0; i--) {
        double s = 0;
        for (i64 p = i + 1; p <= c; p++)
            s = fma(u[i * (NB + 1) + p], w[p * (NB + 1) + c], s);
        w[i * (NB + 1) + c] = -s / u[i * (NB + 1) + i];
    }
    for (i64 i = 0; i <= c; i++)
        A[(j0 + i) * k + j0 + c] = w[i * (NB + 1) + c];
}

// trinv_col: the block column of W at j0 above the diagonal,
// W[0:j0, j0:j0+nb] = −W[0:j0, 0:j0]·U[0:j0, j0:j0+nb]·W_jj, one thread per
// row i < j0 (W[i, 0:j0] is complete: earlier block columns).
extern "C" __global__ void gpnb_trinv_col(const double *S, double *A, i64 k, i64 j0, i64 *info) {
    double *us = (double *)smem, *wj = us + NB * (NB + 1);
    if (*info != 0)
        return;
    const i64 nb = min((i64)NB, k - j0);
    for (i64 e = threadIdx.x; e < NB * NB; e += blockDim.x) {
        i64 q = e / NB, c = e - q * NB;
        wj[q * (NB + 1) + c] = (q < nb && c < nb && q <= c) ? A[(j0 + q) * k + j0 + c] : 0.0;
    }
    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const bool active = i < j0;
    double T[NB];
#pragma unroll
    for (int q = 0; q < NB; q++)
        T[q] = 0;
    for (i64 p0 = 0; p0 < j0; p0 += NB) {
        const i64 pn = min((i64)NB, j0 - p0);
        __syncthreads();
        for (i64 e = threadIdx.x; e < NB * NB; e += blockDim.x) {
            i64 pp = e / NB, q = e - pp * NB;
            us[pp * (NB + 1) + q] = (pp < pn && q < nb) ? S[(p0 + pp) * k + j0 + q] : 0.0;
        }
        __syncthreads();
        if (!active)
            continue;
        for (i64 pp = max((i64)0, i - p0); pp < pn; pp++) {
            const double w = A[i * k + p0 + pp];
#pragma unroll
            for (int q = 0; q < NB; q++)
                T[q] = fma(w, us[pp * (NB + 1) + q], T[q]);
        }
    }
    __syncthreads();
    if (!active)
        return;
#pragma unroll
    for (int c = 0; c < NB; c++) {
        if (c >= nb)
            break;
        double s = 0;
#pragma unroll
        for (int q = 0; q <= c; q++)
            s = fma(T[q], wj[q * (NB + 1) + c], s);
        A[i * k + j0 + c] = -s;
    }
}

// trinv_mirror: the strict lower triangle of A becomes Wᵀ.
extern "C" __global__ void gpnb_trinv_mirror(double *A, i64 k, i64 *info) {
    i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= k * k || *info != 0)
        return;
    i64 i = e / k, j = e - i * k;
    if (i > j)
        A[e] = A[j * k + i];
}

// ---------------------------------------------------------------------------
// reduce: the fused kernel-derivative reduction. For W = A·Bᵀ (A, B n×cp;
// Wd null) or an explicit n×n Wd, block β writes
//   partial[β·(d+1) + k] = Σ_{a in β} Σ_b W_ab·(−m'(r)/r)·(z_ak − z_bk)²  (k < d)
//   partial[β·(d+1) + d] = Σ_{a in β} Σ_b W_ab·m(r)
// The host adds the blocks in order and applies s²/ℓ_k and 2s. Since ∂H is
// symmetric, Σ_ab W_ab ∂H_ab = Σ_ab W_ba ∂H_ab, and the kernel uses W_ba:
// for Wd that makes the reads coalesced (Wd[b·n + a]); for A·Bᵀ it is
// Σ_c A_bc B_ac, with A's rows staged in shared memory and the thread's row
// of B read once per chunk. Accumulation is in float64 whatever T is; the
// block sum is a fixed tree, so the result is bitwise reproducible.
// blockDim.x must be a power of two.
template <typename T, int MAXD>
__device__ void reduce(const T *__restrict__ Z, i64 n, i64 d, i64 fam,
                       const T *__restrict__ A, const T *__restrict__ B, i64 cp,
                       const T *__restrict__ Wd, double *__restrict__ partial, i64 tc) {
    double *red = (double *)smem;      // blockDim.x
    T *zs = (T *)(red + blockDim.x);   // tc × d
    T *as = zs + tc * d;               // tc × cp (A rows of the tile)
    i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    bool active = t < n;
    i64 a = active ? t : 0;
    T za[MAXD > 0 ? MAXD : 1];
    double acc[MAXD > 0 ? MAXD : GENMAXD];
#pragma unroll
    for (int k = 0; k < MAXD; k++)
        za[k] = (active && k < d) ? Z[a * d + k] : (T)0;
#pragma unroll
    for (int k = 0; k < KLIM; k++)
        acc[k] = 0;
    const T *zrow = Z + a * d;
    double accS = 0;
    for (i64 j0 = 0; j0 < n; j0 += tc) {
        i64 jn = min(tc, n - j0);
        __syncthreads();
        for (i64 e = threadIdx.x; e < jn * d; e += blockDim.x)
            zs[e] = Z[j0 * d + e];
        if (!Wd)
            for (i64 e = threadIdx.x; e < jn * cp; e += blockDim.x)
                as[e] = A[j0 * cp + e];
        __syncthreads();
        if (!active)
            continue;
        for (i64 q0 = 0; q0 < jn; q0 += RTILE) {
            // w[q] = W_ba for the RTILE columns b = j0+q0+q of this chunk.
            double w[RTILE];
            for (int q = 0; q < RTILE; q++)
                w[q] = 0;
            if (Wd) {
#pragma unroll
                for (int q = 0; q < RTILE; q++)
                    if (q0 + q < jn)
                        w[q] = (double)Wd[(j0 + q0 + q) * n + a];
            } else {
                for (i64 c = 0; c < cp; c++) {
                    double bc = (double)B[a * cp + c];
#pragma unroll
                    for (int q = 0; q < RTILE; q++)
                        if (q0 + q < jn)
                            w[q] += (double)as[(q0 + q) * cp + c] * bc;
                }
            }
#pragma unroll 1
            for (int q = 0; q < RTILE; q++) {
                if (q0 + q >= jn)
                    break;
                const T *zb = zs + (q0 + q) * d;
                double r2 = 0;
#pragma unroll
                for (int k = 0; k < KLIM; k++)
                    if (k < d) {
                        double u = (double)(MAXD > 0 ? za[k] : zrow[k]) - (double)zb[k];
                        r2 += u * u;
                    }
                double m, dm;
                kmd((int)fam, r2, m, dm);
                accS += w[q] * m;
                double gv = -w[q] * dm;
                if (r2 != 0.0 && gv != 0.0) {
#pragma unroll
                    for (int k = 0; k < KLIM; k++)
                        if (k < d) {
                            double u = (double)(MAXD > 0 ? za[k] : zrow[k]) - (double)zb[k];
                            acc[k] += gv * u * u;
                        }
                }
            }
        }
    }
    // Block sums, one quantity at a time, by a fixed tree.
    for (i64 k = 0; k <= d; k++) {
        double v = 0;
        if (active) {
            if (k == d) {
                v = accS;
            } else if (MAXD == 0) {
                v = acc[k];
            } else {
#pragma unroll
                for (int kk = 0; kk < MAXD; kk++)
                    if (kk == k)
                        v = acc[kk];
            }
        }
        __syncthreads();
        red[threadIdx.x] = v;
        __syncthreads();
        for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s)
                red[threadIdx.x] += red[threadIdx.x + s];
            __syncthreads();
        }
        if (threadIdx.x == 0)
            partial[blockIdx.x * (d + 1) + k] = red[0];
    }
}

#define REDUCE(T, SUF, D)                                                                                      \
    extern "C" __global__ void gpnb_reduce_##SUF##_d##D(const T *Z, i64 n, i64 d, i64 fam, const T *A,          \
                                                        const T *B, i64 cp, const T *Wd, double *partial, i64 tc) { \
        reduce<T, D>(Z, n, d, fam, A, B, cp, Wd, partial, tc);                                                 \
    }
REDUCE(double, f64, 8)
REDUCE(double, f64, 32)
REDUCE(double, f64, 0)
REDUCE(float, f32, 8)
REDUCE(float, f32, 32)
REDUCE(float, f32, 0)
