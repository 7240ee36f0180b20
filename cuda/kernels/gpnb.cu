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
#define MT 128      // threads per block of mulk and trimul
#define MR 2        // mulk, trimul: output rows per thread
#define MSTAGES 4   // mulk, trimul: stages of the copy pipeline
#define MSTAGE 8192 // mulk, trimul: bytes of M per stage
#define TT 64       // build, reduce: rows (and columns) of a tile of pairs, 16×16 threads of 4×4 pairs
#define TKC 32      // build, reduce: dimensions of z staged at a time
#define RSTRIP 8    // reduce: tiles per block, along one tile row
#define RCC 8       // reduce: columns of [A B] staged at a time
#define CH 128      // rows per chunk of dots and mult
#define NB 32       // block size of the device Cholesky and triangular inverse

// MAXD > 0: mulfree's row of z and reduce's d sums live in registers, loops
// fully unrolled to MAXD with a k < d guard. MAXD = 0: the generic variant
// for d ≤ GENMAXD, mulfree reading z from global memory (L1), reduce keeping
// its sums in local memory.
#define KLIM (MAXD > 0 ? MAXD : d)

typedef long long i64;

// The dynamic shared memory of every kernel (one declaration: kernels with
// C and C++ linkage share it).
extern __shared__ __align__(16) unsigned char smem[];

__device__ __forceinline__ double sqrt_(double x) { return sqrt(x); }
__device__ __forceinline__ float sqrt_(float x) { return sqrtf(x); }
__device__ __forceinline__ double exp_(double x) { return exp(x); }
__device__ __forceinline__ float exp_(float x) { return expf(x); }

// Copies from global to shared memory, by 4, 8 or 16 bytes (B): on sm_80 and
// later (the sm_90 PTX and cubin) asynchronous (cp.async), so that a kernel
// keeps several stages of its input in flight while it computes on an
// earlier one: cpAsync starts a copy, cpCommit closes the group of copies
// started since the last one, cpWait<N> waits until at most N groups of this
// thread are still in flight (a __syncthreads then makes every thread's
// copies visible). On older targets (the sm_60 PTX, whose JIT serves 6.0 to
// 8.x) and in the cudaemu host build a copy is a plain load and store, and
// commit and wait do nothing. Either way only bits move: the arithmetic on
// the copied values is the same.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <int B>
__device__ __forceinline__ void cpAsync(void *dst, const void *src) {
    unsigned d;
    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(d) : "l"(dst));
    if (B == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(d), "l"(src), "n"(B) : "memory");
}
__device__ __forceinline__ void cpCommit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cpWait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
#else
template <int B>
__device__ __forceinline__ void cpAsync(void *dst, const void *src) {
#ifdef __CUDA_ARCH__
    if (B == 16)
        *(uint4 *)dst = *(const uint4 *)src;
    else if (B == 8)
        *(uint2 *)dst = *(const uint2 *)src;
    else
        *(unsigned *)dst = *(const unsigned *)src;
#else
    memcpy(dst, src, B);
#endif
}
__device__ __forceinline__ void cpCommit() {}
template <int N>
__device__ __forceinline__ void cpWait() {}
#endif

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

// kmd sets m = m(r) and dm = m'(r)/r from r² (dm = 0 at r = 0 for
// Matern12), with one sqrt and one exp whatever the family, so that reduce,
// which unrolls it over a thread's 16 pairs, holds one of each per pair.
__device__ __forceinline__ void kmd(int fam, double r2, double &m, double &dm) {
    const double u = sqrt((fam == 0 ? 3.0 : fam == 2 ? 5.0 : 1.0) * r2); // √3·r, √5·r, r
    const double e = exp(fam == 3 ? -0.5 * r2 : -u);
    switch (fam) {
    case 0:
        m = (1.0 + u) * e;
        dm = -3.0 * e;
        return;
    case 1:
        m = e;
        dm = u == 0.0 ? 0.0 : -e / u;
        return;
    case 2:
        m = (1.0 + u + u * u / 3.0) * e;
        dm = -5.0 / 3.0 * (1.0 + u) * e;
        return;
    case 3:
        m = e;
        dm = -e;
        return;
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

// Tiles of TT×TT pairs (a, b), a in rows a0.., b in rows b0.. of an n-row
// matrix (build, reduce): 16×16 threads, thread (tx, ty) takes the 4×4 pairs
// a = a0 + ty + 16i, b = b0 + tx + 16j.

// stageZ copies dimensions k0..k0+kn−1 of z for the rows of a tile into
// shared memory, dimension-major: za[k·TT + r] = Z[a0+r, k0+k] (zero past
// n), zb likewise from b0; all 256 threads together.
template <typename T>
__device__ __forceinline__ void stageZ(T *za, T *zb, const T *__restrict__ Z, i64 n, i64 d, i64 a0, i64 b0, i64 k0,
                                       int kn) {
    const int tid = threadIdx.y * 16 + threadIdx.x;
    for (int e = tid; e < kn * TT; e += 256) {
        const int r = e / kn, k = e - r * kn;
        za[k * TT + r] = a0 + r < n ? Z[(a0 + r) * d + k0 + k] : (T)0;
        zb[k * TT + r] = b0 + r < n ? Z[(b0 + r) * d + k0 + k] : (T)0;
    }
}

// tile4 calls f(i, j, x_i, y_j) for the thread's 4×4 pairs, in order, with
// x_i = xs[ty + 16i] and y_j = ys[tx + 16j] (one staged dimension or
// column of the tile's rows and of its columns).
template <typename S, typename F>
__device__ __forceinline__ void tile4(const S *xs, const S *ys, F f) {
    S x[4], y[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        x[i] = xs[threadIdx.y + 16 * i];
        y[i] = ys[threadIdx.x + 16 * i];
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            f(i, j, x[i], y[j]);
}

// tileR2 sets r2[i][j] = Σ_k (z_ak − z_bk)², in ascending k and the type R
// (T for build, float64 for reduce), for the thread's pairs of the tile at
// rows a0, b0, staging z in za and zb TKC dimensions at a time (the last
// piece stays staged).
template <typename R, typename T>
__device__ __forceinline__ void tileR2(R (&r2)[4][4], T *za, T *zb, const T *__restrict__ Z, i64 n, i64 d, i64 a0,
                                       i64 b0) {
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            r2[i][j] = 0;
    for (i64 k0 = 0; k0 < d; k0 += TKC) {
        const int kn = (int)min((i64)TKC, d - k0);
        __syncthreads();
        stageZ(za, zb, Z, n, d, a0, b0, k0, kn);
        __syncthreads();
        for (int k = 0; k < kn; k++)
            tile4(za + k * TT, zb + k * TT, [&](int i, int j, T x, T y) {
                R u = (R)x - (R)y;
                r2[i][j] += u * u;
            });
    }
}

// build: K[a,b] = s2·m(r_ab) for the dense cache (n×ldk, row-major, the
// columns n..ldk−1 zero), by tiles of TT×TT entries over the upper triangle
// of tiles (grid ⌈n/TT⌉ × ⌈n/TT⌉, 16×16 threads; blocks below the diagonal
// return at once). The tile's rows of z are staged in shared memory, TKC
// dimensions at a time, each read by all 16 threads of a row or column, and
// each thread computes 4×4 entries; an off-diagonal tile is written twice,
// as K[a,b] and, through a transposed copy in shared memory so that both
// writes are coalesced, as K[b,a]. r² is the direct sum in ascending k, so
// K is exactly symmetric and every entry has the bits of the one thread per
// entry computing Σ_k (z_ak − z_bk)².
template <typename T>
__device__ void build(const T *__restrict__ Z, i64 n, i64 d, i64 fam, double s2d, T *__restrict__ K, i64 ldk) {
    const i64 I = blockIdx.y, J = blockIdx.x;
    if (J < I)
        return;
    T *za = (T *)smem;     // TKC × TT: dimension k of the tile's row a at za[k·TT + a]
    T *zb = za + TKC * TT; // TKC × TT: the same for its columns
    T *kt = (T *)smem;     // TT × (TT+1): the tile, for the transposed writes (after za, zb)
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const i64 a0 = I * TT, b0 = J * TT;
    T r2[4][4];
    tileR2(r2, za, zb, Z, n, d, a0, b0);
    const T s2 = (T)s2d;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const i64 a = a0 + ty + 16 * i, b = b0 + tx + 16 * j;
            r2[i][j] = s2 * kval<T>((int)fam, r2[i][j]); // the entry
            if (a < n && b < ldk)
                K[a * ldk + b] = b < n ? r2[i][j] : (T)0;
        }
    if (I == J)
        return;
    __syncthreads(); // everyone is done with za, zb
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            kt[(ty + 16 * i) * (TT + 1) + tx + 16 * j] = r2[i][j];
    __syncthreads();
    for (int e = tid; e < TT * TT; e += 256) {
        const int r = e / TT, c = e - r * TT; // K[b0+r, a0+c] = tile[c][r]
        if (b0 + r < n && a0 + c < n)
            K[(b0 + r) * ldk + a0 + c] = kt[c * (TT + 1) + r];
    }
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

// mulk: part[z][t][c] = Σ_{j in chunk z} M[jidx_j·ldm + t]·V[j, vcols[c0+c]]
// for output rows t < nr, jidx_j = jidx[j] (or j), j < nj. With M = K (a
// symmetric dense cache) that is (K[:, jidx]·V)[t]: H·V for Mul, H[:,I]·Δ for
// MulCols. A block owns RB = MT·MR consecutive output rows and streams the
// rows j of its chunk through shared memory: stage s holds TJ rows of M
// (its RB columns of each, MSTAGE bytes in all, copied by 16-byte pieces, a
// warp's copies one contiguous 512-byte segment) and the same rows of V's
// selected columns. MSTAGES stages rotate: while the block computes on one,
// the copies of the next MSTAGES−1 are in flight (cp.async; see cpAsync), so
// each block keeps about 3·MSTAGE bytes of M on their way from memory
// without any thread waiting on a load. Each thread owns MR adjacent rows
// (one 16- or 8-byte read of the stage per j) and keeps MR·NC accumulators,
// NC ≥ kg (NC = kg for mulk: exactly as many as columns; trimul's widths go
// by 4, the extra columns of V zero). Every accumulator adds its terms with
// fma in ascending j, so a sum's order is fixed by the chunk, whatever the
// pipeline. TRI (M the float64 factor block of Solve): only the terms j ≤ t
// (tri = 1) or j ≥ t (tri = 2); the others count as zero.
template <typename TK, int NC, bool TRI>
__device__ void mulk(const TK *__restrict__ M, i64 ldm, const i64 *__restrict__ jidx, i64 nj, i64 nr, i64 tri,
                     const double *__restrict__ V, i64 ldv, const i64 *__restrict__ vcols, i64 c0, i64 kg,
                     double *__restrict__ part, i64 chunk) {
    constexpr int RB = MT * MR;                          // output rows per block
    constexpr int TJ = MSTAGE / (RB * (int)sizeof(TK));  // rows of M per stage: 4 (float64), 8 (float32)
    constexpr int EV = 16 / (int)sizeof(TK);             // values of M per 16-byte copy
    constexpr int CPR = RB / EV;                         // copies per row of a stage
    constexpr int NP = NC + (NC & 1);                    // V's row in a stage: NC rounded up to 16 bytes
    TK *ms = (TK *)smem;                                 // MSTAGES × TJ × RB
    double *vs = (double *)(ms + MSTAGES * TJ * RB);     // MSTAGES × TJ × NP
    const int tid = threadIdx.x;
    const i64 r0 = (i64)blockIdx.x * RB, t = r0 + MR * tid;
    const i64 z = blockIdx.y, jlo = z * chunk, jhi = min(nj, jlo + chunk);
    const i64 ns = (jhi - jlo + TJ - 1) / TJ;
    // Each thread copies the same 16 bytes (EV columns, from cm) of rows
    // jc, jc + MT/CPR, ... of every stage: 16-byte copies need 16-byte
    // aligned rows of M; otherwise it copies them value by value.
    const int jc = tid / CPR, cq = (tid - jc * CPR) * EV;
    const i64 cm = r0 + cq;
    const bool vec = ldm % EV == 0 && ((unsigned long long)M & 15) == 0;
    // issue starts the copies of stage s into buffer b.
    auto issue = [&](i64 s, int b) {
        const i64 j0 = jlo + s * TJ;
        const int jn = (int)min((i64)TJ, jhi - j0);
        TK *mb = ms + b * TJ * RB + cq;
#pragma unroll
        for (int jj = jc; jj < TJ; jj += MT / CPR) {
            if (jj >= jn)
                break;
            const TK *src = M + (jidx ? jidx[j0 + jj] : j0 + jj) * ldm + cm;
            if (vec) {
                if (cm < ldm)
                    cpAsync<16>(mb + jj * RB, src);
            } else {
                for (int v = 0; v < EV; v++)
                    if (cm + v < ldm)
                        cpAsync<(int)sizeof(TK)>(mb + jj * RB + v, src + v);
            }
        }
        double *vb = vs + b * TJ * NP;
        for (int e = tid; e < jn * NP; e += MT) {
            const int jj = e / NP, c = e - jj * NP;
            if (c < kg)
                cpAsync<8>(vb + e, V + (j0 + jj) * ldv + col(vcols, c0 + c));
            else
                vb[e] = 0.0;
        }
    };
    double acc[MR][NC];
#pragma unroll
    for (int r = 0; r < MR; r++)
#pragma unroll
        for (int c = 0; c < NC; c++)
            acc[r][c] = 0;
    // Iterations s < 0 only start the first MSTAGES − 1 stages.
    for (i64 s = 1 - MSTAGES; s < ns; s++) {
        if (s >= 0) {
            cpWait<MSTAGES - 2>(); // this thread's copies of stage s have landed
            __syncthreads();       // everyone's have, and everyone is done with stage s−1
        }
        const i64 sn = s + MSTAGES - 1; // the stage to start
        if (sn < ns)
            issue(sn, (int)(sn % MSTAGES));
        cpCommit();
        if (s < 0)
            continue;
        const int b = (int)(s % MSTAGES);
        const i64 j0 = jlo + s * TJ;
        const int jn = (int)min((i64)TJ, jhi - j0);
        const TK *mb = ms + b * TJ * RB + MR * tid;
        const double *vb = vs + b * TJ * NP;
#pragma unroll 1
        for (int jj = 0; jj < jn; jj++) {
            double m[MR];
            if (sizeof(TK) == 8) {
                const double2 p = *(const double2 *)(mb + jj * RB);
                m[0] = p.x;
                m[1] = p.y;
            } else {
                const float2 p = *(const float2 *)(mb + jj * RB);
                m[0] = (double)p.x;
                m[1] = (double)p.y;
            }
            if (TRI) {
#pragma unroll
                for (int r = 0; r < MR; r++)
                    if (tri == 1 ? j0 + jj > t + r : j0 + jj < t + r)
                        m[r] = 0.0;
            }
            const double *v = vb + jj * NP;
#pragma unroll
            for (int c = 0; c < NC; c += 2) {
                const double2 w = *(const double2 *)(v + c);
#pragma unroll
                for (int r = 0; r < MR; r++) {
                    acc[r][c] = fma(m[r], w.x, acc[r][c]);
                    if (c + 1 < NC)
                        acc[r][c + 1] = fma(m[r], w.y, acc[r][c + 1]);
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < MR; r++)
        if (t + r < nr)
            storepart<NC>(part, z, nr, t + r, kg, acc[r]);
}

// The occupancy the host's chunking counts on (cuda/product.go): at least 4
// blocks per multiprocessor (at most 128 registers a thread) up to 24
// columns, 3 above, so that a product's targetBlocks blocks run in one wave
// on an H100 or H200 (132 SMs); the shared memory (MSTAGES stages, 36 or 40
// KiB a block) allows 5.
#define MULK(TK, SUF, C)                                                                                        \
    extern "C" __global__ void __launch_bounds__(MT, C <= 24 ? 4 : 3) gpnb_mulk_##SUF##_c##C(                   \
        const TK *M, i64 ldm, const i64 *jidx, i64 nj, i64 nr, const double *V, i64 ldv, const i64 *vcols,        \
        i64 c0, i64 kg, double *part, i64 chunk) {                                                               \
        mulk<TK, C, false>(M, ldm, jidx, nj, nr, 0, V, ldv, vcols, c0, kg, part, chunk);                          \
    }
#define TRIMUL(C)                                                                                                \
    extern "C" __global__ void __launch_bounds__(MT, C <= 24 ? 4 : 3) gpnb_trimul_c##C(                        \
        const double *M, i64 ldm, i64 nr, i64 tri, const double *V, i64 ldv, const i64 *vcols, i64 c0, i64 kg,    \
        double *part, i64 chunk) {                                                                               \
        mulk<double, C, true>(M, ldm, (const i64 *)0, nr, nr, tri, V, ldv, vcols, c0, kg, part, chunk);          \
    }
#define MULK_FF(C) MULK(double, f64, C) MULK(float, f32, C)
MULK_FF(1) MULK_FF(2) MULK_FF(3) MULK_FF(4) TRIMUL(4)
MULK_FF(5) MULK_FF(6) MULK_FF(7) MULK_FF(8) TRIMUL(8)
MULK_FF(9) MULK_FF(10) MULK_FF(11) MULK_FF(12) TRIMUL(12)
MULK_FF(13) MULK_FF(14) MULK_FF(15) MULK_FF(16) TRIMUL(16)
MULK_FF(17) MULK_FF(18) MULK_FF(19) MULK_FF(20) TRIMUL(20)
MULK_FF(21) MULK_FF(22) MULK_FF(23) MULK_FF(24) TRIMUL(24)
MULK_FF(25) MULK_FF(26) MULK_FF(27) MULK_FF(28) TRIMUL(28)
MULK_FF(29) MULK_FF(30) MULK_FF(31) MULK_FF(32) TRIMUL(32)
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
// sums256 adds, for each q < qn, the 256 threads' values red[q·256 + t] by
// a fixed tree into red[q·256]; every thread calls it once the values are
// written and a __syncthreads has made them visible.
__device__ __forceinline__ void sums256(double *red, int qn) {
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    for (int h = 128; h > 0; h >>= 1) {
        if (tid < h)
            for (int q = 0; q < qn; q++)
                red[q * 256 + tid] += red[q * 256 + tid + h];
        __syncthreads();
    }
}

// reduce: the fused kernel-derivative reduction of Operator.Reduce, over the
// pairs (a, b) of the upper triangle, for W = A·Bᵀ (A, B n×cp float64; Wd
// null) or an explicit n×n float64 Wd. Since ∂H is symmetric,
// Σ_ab W_ab ∂H_ab = Σ_{a<b} (W_ab + W_ba) ∂H_ab + Σ_a W_aa ∂H_aa, and with
// [A B] and [B A] side by side, W_ab + W_ba = Σ_c [A B]_ac·[B A]_bc is one
// dot product of 2cp terms. Tiles of TT×TT pairs (16×16 threads, 4×4 pairs
// each): block (s, I) takes the tiles J = I + s·RSTRIP .. I + s·RSTRIP +
// RSTRIP − 1 (< ⌈n/TT⌉) of tile row I and writes, at β = I·gridDim.x + s,
//   partial[β·(d+2) + k]   = Σ w_ab·(−m'(r)/r)·(z_ak − z_bk)²  (k < d)
//   partial[β·(d+2) + d]   = Σ w_ab·m(r)
//   partial[β·(d+2) + d+1] = Σ_a W_aa (the trace of W)
// with the pair weight w_ab = W_ab + W_ba off the diagonal and W_aa on it (in
// a diagonal tile only the pairs a ≤ b count); a block past the last tile
// writes zeros. gpnb_reduce_sum adds the blocks in order and the host
// applies s²/ℓ_k, 2s and 2σ. The tile's columns of [A B] and [B A] are
// staged in shared memory RCC at a time, its rows of z TKC dimensions at a
// time (for MAXD > 0, d ≤ MAXD ≤ TKC: once, and the thread's d sums live in
// registers; the generic variant stages z twice and keeps its sums in local
// memory). Accumulation is in float64 whatever T is, and the block adds its
// threads' sums by a fixed tree, so every sum is in an order fixed by n and d.
template <typename T, int MAXD>
__device__ void reduce(const T *__restrict__ Z, i64 n, i64 d, i64 fam, const double *__restrict__ A,
                       const double *__restrict__ B, i64 cp, const double *__restrict__ Wd,
                       double *__restrict__ partial) {
    T *zi = (T *)smem;                             // TKC × TT: z of the tile's rows, dimension-major
    T *zj = zi + TKC * TT;                         // TKC × TT: z of its columns
    double *ab = (double *)(zj + TKC * TT);        // RCC × TT: columns of [A B] of the rows
    double *ba = ab + RCC * TT;                    // RCC × TT: columns of [B A] of the columns
    double *red = (double *)smem;                  // QR × 256, for the block's sums (after the tiles)
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const i64 nt = (n + TT - 1) / TT, I = blockIdx.y, J0 = I + (i64)blockIdx.x * RSTRIP;
    const i64 nq = d + 2;
    double *out = partial + (I * gridDim.x + blockIdx.x) * nq;
    if (J0 >= nt) {
        for (i64 q = tid; q < nq; q += 256)
            out[q] = 0;
        return;
    }
    double acc[MAXD > 0 ? MAXD : GENMAXD];
#pragma unroll
    for (int k = 0; k < KLIM; k++)
        acc[k] = 0;
    double accS = 0, accT = 0;
    const i64 a0 = I * TT;
    for (i64 J = J0; J < min(nt, J0 + RSTRIP); J++) {
        const i64 b0 = J * TT;
        const bool diag = J == I;
        double w[4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                w[i][j] = 0;
        if (Wd) {
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const i64 a = a0 + ty + 16 * i, b = b0 + tx + 16 * j;
                    if (a < n && b < n && (!diag || a <= b))
                        w[i][j] = a == b ? Wd[a * n + a] : Wd[a * n + b] + Wd[b * n + a];
                }
        } else {
            for (i64 c0 = 0; c0 < 2 * cp; c0 += RCC) {
                const int cn = (int)min((i64)RCC, 2 * cp - c0);
                __syncthreads();
                for (int e = tid; e < cn * TT; e += 256) {
                    const int r = e / cn, c = e - r * cn;
                    const i64 cc = c0 + c, a = a0 + r, b = b0 + r;
                    ab[c * TT + r] = a < n ? (cc < cp ? A[a * cp + cc] : B[a * cp + cc - cp]) : 0.0;
                    ba[c * TT + r] = b < n ? (cc < cp ? B[b * cp + cc] : A[b * cp + cc - cp]) : 0.0;
                }
                __syncthreads();
                for (int c = 0; c < cn; c++)
                    tile4(ab + c * TT, ba + c * TT,
                          [&](int i, int j, double x, double y) { w[i][j] = fma(x, y, w[i][j]); });
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const i64 a = a0 + ty + 16 * i, b = b0 + tx + 16 * j;
                    if (!(a < n && b < n && (!diag || a <= b)))
                        w[i][j] = 0;
                    else if (a == b)
                        w[i][j] = 0.5 * w[i][j]; // 2·W_aa
                }
        }
        // r² of the 16 pairs, then their weights g = −w·m'(r)/r.
        double r2[4][4];
        tileR2(r2, zi, zj, Z, n, d, a0, b0);
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                double m, dm;
                kmd((int)fam, r2[i][j], m, dm);
                accS += w[i][j] * m;
                if (a0 + ty + 16 * i == b0 + tx + 16 * j)
                    accT += w[i][j];
                double g = -w[i][j] * dm;
                w[i][j] = r2[i][j] != 0.0 ? g : 0.0;
            }
        // The d sums: Σ g·(z_ak − z_bk)² (z still staged when d ≤ TKC).
        if constexpr (MAXD > 0) {
#pragma unroll
            for (int k = 0; k < KLIM; k++) {
                if (k >= d)
                    break;
                tile4(zi + k * TT, zj + k * TT, [&](int i, int j, T x, T y) {
                    double u = (double)x - (double)y;
                    acc[k] += w[i][j] * u * u;
                });
            }
        } else {
            for (i64 k0 = 0; k0 < d; k0 += TKC) {
                const int kn = (int)min((i64)TKC, d - k0);
                if (d > TKC) {
                    __syncthreads();
                    stageZ(zi, zj, Z, n, d, a0, b0, k0, kn);
                    __syncthreads();
                }
                for (int k = 0; k < kn; k++) {
                    double s = acc[k0 + k];
                    tile4(zi + k * TT, zj + k * TT, [&](int i, int j, T x, T y) {
                        double u = (double)x - (double)y;
                        s += w[i][j] * u * u;
                    });
                    acc[k0 + k] = s;
                }
            }
        }
    }
    // The block's sums, QR quantities at a time in the tiles' shared memory.
    constexpr int QR = (2 * TKC * TT * (int)sizeof(T) + (2 * RCC * TT + 256) * 8) / (256 * 8);
    for (i64 q0 = 0; q0 < nq; q0 += QR) {
        const int qn = (int)min((i64)QR, nq - q0);
        __syncthreads();
        for (int j = 0; j < qn; j++) {
            const i64 q = q0 + j;
            double v = q == d ? accS : accT;
            if (q < d) {
                if constexpr (MAXD == 0) {
                    v = acc[q];
                } else {
#pragma unroll
                    for (int k = 0; k < MAXD; k++)
                        if (k == q)
                            v = acc[k];
                }
            }
            red[j * 256 + tid] = v;
        }
        __syncthreads();
        sums256(red, qn);
        if (tid < qn)
            out[q0 + tid] = red[tid * 256];
    }
}

// At least one block of 256 threads per multiprocessor (255 registers a
// thread): the d ≤ 32 variant keeps 32 + 16 + 16 float64 values live.
#define REDUCE(T, SUF, D)                                                                                      \
    extern "C" __global__ void __launch_bounds__(256, 1) gpnb_reduce_##SUF##_d##D(                             \
        const T *Z, i64 n, i64 d, i64 fam, const double *A, const double *B, i64 cp, const double *Wd,          \
        double *partial) {                                                                                     \
        reduce<T, D>(Z, n, d, fam, A, B, cp, Wd, partial);                                                     \
    }
REDUCE(double, f64, 8)
REDUCE(double, f64, 32)
REDUCE(double, f64, 0)
REDUCE(float, f32, 8)
REDUCE(float, f32, 32)
REDUCE(float, f32, 0)

// reduce_sum: out[q] = Σ_β partial[β·nq + q] over the nb blocks of reduce,
// for q < nq: one block of 256 threads per q; thread t adds the blocks
// t·L .. (t+1)·L − 1 in order (L = ⌈nb/256⌉), then the block a fixed tree.
extern "C" __global__ void gpnb_reduce_sum(const double *partial, i64 nb, i64 nq, double *out) {
    double *red = (double *)smem; // 256
    const int tid = threadIdx.x;
    const i64 q = blockIdx.x, L = (nb + 255) / 256, lo = tid * L, hi = min(nb, lo + L);
    double s = 0;
    for (i64 b = lo; b < hi; b++)
        s += partial[b * nq + q];
    red[tid] = s;
    __syncthreads();
    sums256(red, 1);
    if (tid == 0)
        out[q] = red[0];
}

// cgcoef: CG's coefficients on the device (Space.CGStep), for a < k:
// c1[a] = num[a]/den[a] and, when c2 is not null, c2[a] = −c1[a]: α and −α
// from rᵀr and pᵀHp, β from the new and the old rᵀr.
extern "C" __global__ void gpnb_cgcoef(const double *num, const double *den, i64 k, double *c1, double *c2) {
    i64 a = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (a >= k)
        return;
    const double c = num[a] / den[a];
    c1[a] = c;
    if (c2)
        c2[a] = -c;
}
