// gpnb CUDA kernels: the kernel operator H = K(X,X) + σ²I of package
// gpnb/kernel on the GPU. Compiled to PTX (cuda/kernels/*.ptx, checked in)
// by `make ptx`; the Go code in package cuda embeds the PTX and loads it with
// the driver's module API, so users need only the driver, not nvcc.
//
// Conventions shared with cuda/*.go (keep them in step):
//   - every kernel parameter is 8 bytes (pointers, long long, double),
//     because gorgonia.org/cu's Function.Launch copies 8 bytes per argument;
//   - matrices are row-major; right-hand sides V are padded to mp columns,
//     a multiple of 16, with zeros (so no column guards in the loops);
//   - family codes are kernel.Family's values: 0 Matern32, 1 Matern12,
//     2 Matern52, 3 RBF;
//   - every output element is written by exactly one thread, and every sum
//     runs in a fixed order (no atomics), so results are bitwise
//     reproducible from run to run.
//
// The maths follows gpnb/kernel/tile.go and reduce.go: z = (x − x̄)/ℓ,
// r² = Σ_k (z_ak − z_bk)² (direct differences: no cancellation),
// k = s²·m(r), and for the gradient m(r) and m'(r)/r.

// Right-hand sides are padded to a multiple of 16 columns and processed in
// column groups of NC = 16 or 32 (a template parameter): one thread holds NC
// accumulators, and each kernel value serves all NC columns. The host picks
// NC = 32 when the padded width is a multiple of 32 (17 = 1 + 16 probes
// pads to 32: one group, each kernel value computed or read once).
#define RTILE 16     // reduce: pairs per chunk of W values
#define GENMAXD 256  // largest d of the generic (MAXD = 0) variants

// MAXD > 0: the row's z (and the reduce accumulators) live in registers,
// loops fully unrolled to MAXD with a k < d guard. MAXD = 0: the generic
// variant for d ≤ GENMAXD, reading z from global memory (L1) and keeping
// the accumulators in local memory.
#define KLIM (MAXD > 0 ? MAXD : d)

typedef long long i64;

__device__ __forceinline__ double sqrt_(double x) { return sqrt(x); }
__device__ __forceinline__ float sqrt_(float x) { return sqrtf(x); }
__device__ __forceinline__ double exp_(double x) { return exp(x); }
__device__ __forceinline__ float exp_(float x) { return expf(x); }

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

// scale: Z[a,k] = (X[a,k] − mean[k]) / ell[k] and sq[a] = |Z[a,:]|², in
// float64, stored as T. One thread per row.
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

// Split sums. The row-product kernels below give one thread one output row,
// which is too few threads to fill a large GPU when nr is small next to the
// number of resident threads (pol: 13500 rows against 132 SMs × 2048). So
// the sum over j is also split into gridDim.y / ng contiguous chunks of
// `chunk` columns: blockIdx.y = z·ng + g, where g is the column group and z
// the chunk. With one chunk a thread writes its row of out directly (noise
// term included); with several it writes its partial sums to
// part[z][t][·] (nr×mp each) and sumparts adds them in the order z =
// 0, 1, ... and then the noise term, so results stay bitwise reproducible.
template <typename T, int NC>
__device__ void storeacc(const T *acc, bool active, i64 t, i64 a, i64 g, i64 ng, i64 nr, i64 mp,
                         const T *__restrict__ Vn, double noise2d, T *__restrict__ out,
                         T *__restrict__ part) {
    if (!active)
        return;
    if (gridDim.y == ng) {
        T *o = out + t * mp + g * NC;
        const T noise2 = (T)noise2d;
#pragma unroll
        for (int c = 0; c < NC; c++) {
            T v = acc[c];
            if (Vn)
                v += noise2 * Vn[a * mp + g * NC + c];
            o[c] = v;
        }
        return;
    }
    T *o = part + (i64)(blockIdx.y / ng) * nr * mp + t * mp + g * NC;
#pragma unroll
    for (int c = 0; c < NC; c++)
        o[c] = acc[c];
}

// sumparts: out[t, c] = Σ_z part[z][t][c] (+ noise2·Vn[a, c]), one thread per
// element of the nr×mp output; see storeacc.
template <typename T>
__device__ void sumparts(const T *__restrict__ part, i64 nz, i64 nr, i64 mp, const i64 *__restrict__ rows,
                         const T *__restrict__ Vn, double noise2d, T *__restrict__ out) {
    i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= nr * mp)
        return;
    T v = part[e];
    for (i64 z = 1; z < nz; z++)
        v += part[z * nr * mp + e];
    if (Vn) {
        i64 t = e / mp, c = e - t * mp;
        i64 a = rows ? rows[t] : t;
        v += (T)noise2d * Vn[a * mp + c];
    }
    out[e] = v;
}

extern "C" __global__ void gpnb_sumparts_f64(const double *part, i64 nz, i64 nr, i64 mp, const i64 *rows,
                                             const double *Vn, double noise2, double *out) {
    sumparts<double>(part, nz, nr, mp, rows, Vn, noise2, out);
}
extern "C" __global__ void gpnb_sumparts_f32(const float *part, i64 nz, i64 nr, i64 mp, const i64 *rows,
                                             const float *Vn, double noise2, float *out) {
    sumparts<float>(part, nz, nr, mp, rows, Vn, noise2, out);
}

// mulfree: out[t, g·NC : (g+1)·NC] = Σ_j s2·m(r(Zr[a], Zc[b_j]))·V[j, g·NC…]
// (+ noise2·Vn[a, …] when Vn is not null), where a = rows[t] (or t when rows
// is null) and b_j = cols[j] (or j). Thread t owns one output row and NC
// accumulators; blockIdx.y is the column group g and the chunk of j (see
// storeacc). Column tiles of tc inputs and their V rows are staged in
// shared memory; the row's z lives in registers (MAXD ≥ d). Matrix-free:
// every kernel value is computed on the fly; the sum over j runs in
// ascending order within a chunk.
template <typename T, int MAXD, int NC>
__device__ void mulfree(const T *__restrict__ Zr, const i64 *__restrict__ rows, i64 nr,
                        const T *__restrict__ Zc, const i64 *__restrict__ cols, i64 nc,
                        i64 d, i64 fam, double s2d,
                        const T *__restrict__ V, i64 mp, const T *__restrict__ Vn, double noise2d,
                        T *__restrict__ out, i64 tc, i64 ng, i64 chunk, T *__restrict__ part) {
    extern __shared__ __align__(16) unsigned char smem[];
    T *zs = (T *)smem;  // tc × d
    T *vs = zs + tc * d; // tc × NC
    const T s2 = (T)s2d;
    i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 g = blockIdx.y % ng, jlo = (blockIdx.y / ng) * chunk, jhi = min(nc, jlo + chunk);
    bool active = t < nr;
    i64 a = active ? (rows ? rows[t] : t) : 0;
    T za[MAXD > 0 ? MAXD : 1];
#pragma unroll
    for (int k = 0; k < MAXD; k++)
        za[k] = (active && k < d) ? Zr[a * d + k] : (T)0;
    const T *zrow = Zr + a * d;
    T acc[NC];
#pragma unroll
    for (int c = 0; c < NC; c++)
        acc[c] = 0;
    for (i64 j0 = jlo; j0 < jhi; j0 += tc) {
        i64 jn = min(tc, jhi - j0);
        __syncthreads();
        for (i64 e = threadIdx.x; e < jn * d; e += blockDim.x) {
            i64 j = e / d, k = e - j * d;
            i64 b = cols ? cols[j0 + j] : j0 + j;
            zs[e] = Zc[b * d + k];
        }
        for (i64 e = threadIdx.x; e < jn * NC; e += blockDim.x) {
            i64 j = e / NC, c = e - j * NC;
            vs[e] = V[(j0 + j) * mp + g * NC + c];
        }
        __syncthreads();
        if (active) {
            for (i64 j = 0; j < jn; j++) {
                const T *zb = zs + j * d;
                T r2 = 0;
#pragma unroll
                for (int k = 0; k < KLIM; k++)
                    if (k < d) {
                        T u = (MAXD > 0 ? za[k] : zrow[k]) - zb[k];
                        r2 += u * u;
                    }
                T kv = s2 * kval<T>((int)fam, r2);
                const T *vb = vs + j * NC;
#pragma unroll
                for (int c = 0; c < NC; c++)
                    acc[c] += kv * vb[c];
            }
        }
    }
    storeacc<T, NC>(acc, active, t, a, g, ng, nr, mp, Vn, noise2d, out, part);
}

#define MULFREE(T, SUF, D, C)                                                                               \
    extern "C" __global__ void gpnb_mulfree_##SUF##_d##D##_c##C(                                            \
        const T *Zr, const i64 *rows, i64 nr, const T *Zc, const i64 *cols, i64 nc, i64 d, i64 fam,         \
        double s2, const T *V, i64 mp, const T *Vn, double noise2, T *out, i64 tc, i64 ng, i64 chunk,       \
        T *part) {                                                                                          \
        mulfree<T, D, C>(Zr, rows, nr, Zc, cols, nc, d, fam, s2, V, mp, Vn, noise2, out, tc, ng, chunk, part); \
    }
MULFREE(double, f64, 8, 16)
MULFREE(double, f64, 32, 16)
MULFREE(double, f64, 0, 16)
MULFREE(float, f32, 8, 16)
MULFREE(float, f32, 32, 16)
MULFREE(float, f32, 0, 16)
MULFREE(double, f64, 8, 32)
MULFREE(double, f64, 32, 32)
MULFREE(double, f64, 0, 32)
MULFREE(float, f32, 8, 32)
MULFREE(float, f32, 32, 32)
MULFREE(float, f32, 0, 32)

// build: K[a,b] = s2·m(r_ab) for the dense cache (n×n, row-major). One
// thread per entry; r² is the direct sum, so K is exactly symmetric.
template <typename T>
__device__ void build(const T *__restrict__ Z, i64 n, i64 d, i64 fam, double s2d, T *__restrict__ K) {
    i64 b = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 a = (i64)blockIdx.y * blockDim.y + threadIdx.y;
    if (a >= n || b >= n)
        return;
    T r2 = 0;
    for (i64 k = 0; k < d; k++) {
        T u = Z[a * d + k] - Z[b * d + k];
        r2 += u * u;
    }
    K[a * n + b] = (T)s2d * kval<T>((int)fam, r2);
}

extern "C" __global__ void gpnb_build_f64(const double *Z, i64 n, i64 d, i64 fam, double s2, double *K) {
    build<double>(Z, n, d, fam, s2, K);
}
extern "C" __global__ void gpnb_build_f32(const float *Z, i64 n, i64 d, i64 fam, double s2, float *K) {
    build<float>(Z, n, d, fam, s2, K);
}

// muldense: mulfree with the kernel values read from the dense cache K
// (n×n). K is symmetric, so K[a,b] is read as K[b,a]: consecutive threads
// (consecutive a) read consecutive addresses, coalesced without staging.
template <typename T, int NC>
__device__ void muldense(const T *__restrict__ K, i64 n, const i64 *__restrict__ rows, i64 nr,
                         const i64 *__restrict__ cols, i64 nc,
                         const T *__restrict__ V, i64 mp, const T *__restrict__ Vn, double noise2d,
                         T *__restrict__ out, i64 tc, i64 ng, i64 chunk, T *__restrict__ part) {
    extern __shared__ __align__(16) unsigned char smem[];
    T *vs = (T *)smem;        // tc × NC
    i64 *bs = (i64 *)(vs + tc * NC); // tc column indices
    i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 g = blockIdx.y % ng, jlo = (blockIdx.y / ng) * chunk, jhi = min(nc, jlo + chunk);
    bool active = t < nr;
    i64 a = active ? (rows ? rows[t] : t) : 0;
    T acc[NC];
#pragma unroll
    for (int c = 0; c < NC; c++)
        acc[c] = 0;
    for (i64 j0 = jlo; j0 < jhi; j0 += tc) {
        i64 jn = min(tc, jhi - j0);
        __syncthreads();
        for (i64 e = threadIdx.x; e < jn * NC; e += blockDim.x) {
            i64 j = e / NC, c = e - j * NC;
            vs[e] = V[(j0 + j) * mp + g * NC + c];
        }
        for (i64 j = threadIdx.x; j < jn; j += blockDim.x)
            bs[j] = cols ? cols[j0 + j] : j0 + j;
        __syncthreads();
        if (active) {
            // Four loads of K issued before their multiply-adds: more bytes
            // in flight per thread, for a product bound by the latency of
            // memory rather than its bandwidth. Each accumulator still adds
            // its terms in ascending j, as the one-at-a-time loop does.
            i64 j = 0;
            for (; j + 4 <= jn; j += 4) {
                T k0 = K[bs[j] * n + a], k1 = K[bs[j + 1] * n + a];
                T k2 = K[bs[j + 2] * n + a], k3 = K[bs[j + 3] * n + a];
                const T *vb = vs + j * NC;
#pragma unroll
                for (int c = 0; c < NC; c++) {
                    T s = acc[c];
                    s += k0 * vb[c];
                    s += k1 * vb[NC + c];
                    s += k2 * vb[2 * NC + c];
                    s += k3 * vb[3 * NC + c];
                    acc[c] = s;
                }
            }
            for (; j < jn; j++) {
                T kv = K[bs[j] * n + a];
                const T *vb = vs + j * NC;
#pragma unroll
                for (int c = 0; c < NC; c++)
                    acc[c] += kv * vb[c];
            }
        }
    }
    storeacc<T, NC>(acc, active, t, a, g, ng, nr, mp, Vn, noise2d, out, part);
}

#define MULDENSE(T, SUF, C)                                                                                  \
    extern "C" __global__ void gpnb_muldense_##SUF##_c##C(const T *K, i64 n, const i64 *rows, i64 nr,          \
                                                          const i64 *cols, i64 nc, const T *V, i64 mp,        \
                                                          const T *Vn, double noise2, T *out, i64 tc,         \
                                                          i64 ng, i64 chunk, T *part) {                       \
        muldense<T, C>(K, n, rows, nr, cols, nc, V, mp, Vn, noise2, out, tc, ng, chunk, part);               \
    }
MULDENSE(double, f64, 16)
MULDENSE(float, f32, 16)
MULDENSE(double, f64, 32)
MULDENSE(float, f32, 32)

// block: out[i,j] = K(z_{idx_i}, z_{idx_j}) + noise2·[idx_i = idx_j], m×m,
// computed (K null) or read from the dense cache.
template <typename T>
__device__ void block(const T *__restrict__ Z, const T *__restrict__ K, i64 n, i64 d, i64 fam, double s2d,
                      double noise2, const i64 *__restrict__ idx, i64 m, double *__restrict__ out) {
    i64 j = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 i = (i64)blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= m)
        return;
    i64 a = idx[i], b = idx[j];
    double v;
    if (K) {
        v = (double)K[a * n + b];
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

extern "C" __global__ void gpnb_block_f64(const double *Z, const double *K, i64 n, i64 d, i64 fam, double s2,
                                          double noise2, const i64 *idx, i64 m, double *out) {
    block<double>(Z, K, n, d, fam, s2, noise2, idx, m, out);
}
extern "C" __global__ void gpnb_block_f32(const float *Z, const float *K, i64 n, i64 d, i64 fam, double s2,
                                          double noise2, const i64 *idx, i64 m, double *out) {
    block<float>(Z, K, n, d, fam, s2, noise2, idx, m, out);
}

// reduce: the fused kernel-derivative reduction. For W = A·Bᵀ (A, B n×cp,
// zero-padded; Wd null) or an explicit n×n Wd, block β writes
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
    extern __shared__ __align__(16) unsigned char smem[];
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
