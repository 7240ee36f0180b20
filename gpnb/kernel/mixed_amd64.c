//go:build amd64 && cgo

// Mixed-precision products for mixed_amd64.go: K stored in float32, the
// right-hand sides and every sum in float64. The product is bound by
// reading K, so it costs about what a float32 gemm costs, while its
// rounding is float64's: K's float32 values convert to float64 exactly.
//
// Each output y[r][c] = Σ_j K[r][j]·Vᵀ[c][j] is summed in a fixed order
// that depends only on the shapes: the columns j in chunks of GPNB_JC, in
// ascending order; within a chunk four lanes (j mod 4), each an FMA chain
// in ascending j, then ((l0+l1)+(l2+l3)), then the chunk's last len mod 4
// terms by FMA; the chunks' sums added to y in ascending order. So the
// bits never depend on how rows are shared between workers.

#include <immintrin.h>
#include <math.h>

#define GPNB_JC 1024 // columns per chunk: 6 columns of Vᵀ (48 KiB) and two rows of K (8 KiB) stay in L1/L2

// GPNB_MIXED_BLOCK(NR, CG) defines gpnb_mb_NR_CG: the sums over len
// columns of NR rows of K (leading dimension ldk) against CG rows of Vᵀ
// (leading dimension ldv), into s[r*CG + c]. 2×6 accumulators, two rows
// of K and one row of Vᵀ are 15 of the 16 ymm registers.
#define GPNB_MIXED_BLOCK(NR, CG)                                                                          \
	__attribute__((target("avx2,fma"))) static void gpnb_mb_##NR##_##CG(                                  \
	    const float *k, long ldk, const double *vt, long ldv, long len, double *s) {                     \
		__m256d acc[NR][CG];                                                                              \
		_Pragma("GCC unroll 8") for (int r = 0; r < NR; r++) {                                            \
			_Pragma("GCC unroll 8") for (int c = 0; c < CG; c++) acc[r][c] = _mm256_setzero_pd();         \
		}                                                                                                 \
		long j = 0;                                                                                       \
		for (; j + 4 <= len; j += 4) {                                                                    \
			__m256d kv[NR];                                                                               \
			_Pragma("GCC unroll 8") for (int r = 0; r < NR; r++) kv[r] =                                  \
			    _mm256_cvtps_pd(_mm_loadu_ps(k + r * ldk + j));                                           \
			_Pragma("GCC unroll 8") for (int c = 0; c < CG; c++) {                                        \
				__m256d v = _mm256_loadu_pd(vt + c * ldv + j);                                            \
				_Pragma("GCC unroll 8") for (int r = 0; r < NR; r++) acc[r][c] =                          \
				    _mm256_fmadd_pd(kv[r], v, acc[r][c]);                                                 \
			}                                                                                             \
		}                                                                                                 \
		for (int r = 0; r < NR; r++) {                                                                    \
			for (int c = 0; c < CG; c++) {                                                                \
				double l[4];                                                                              \
				_mm256_storeu_pd(l, acc[r][c]);                                                           \
				double t = (l[0] + l[1]) + (l[2] + l[3]);                                                 \
				for (long i = j; i < len; i++) t = fma((double)k[r * ldk + i], vt[c * ldv + i], t);     \
				s[r * CG + c] = t;                                                                        \
			}                                                                                             \
		}                                                                                                 \
	}

GPNB_MIXED_BLOCK(1, 1)
GPNB_MIXED_BLOCK(1, 2)
GPNB_MIXED_BLOCK(1, 3)
GPNB_MIXED_BLOCK(1, 4)
GPNB_MIXED_BLOCK(1, 5)
GPNB_MIXED_BLOCK(1, 6)
GPNB_MIXED_BLOCK(2, 1)
GPNB_MIXED_BLOCK(2, 2)
GPNB_MIXED_BLOCK(2, 3)
GPNB_MIXED_BLOCK(2, 4)
GPNB_MIXED_BLOCK(2, 5)
GPNB_MIXED_BLOCK(2, 6)

typedef void (*gpnb_mb_fn)(const float *, long, const double *, long, long, double *);

static const gpnb_mb_fn gpnb_mb[2][7] = {
    {0, gpnb_mb_1_1, gpnb_mb_1_2, gpnb_mb_1_3, gpnb_mb_1_4, gpnb_mb_1_5, gpnb_mb_1_6},
    {0, gpnb_mb_2_1, gpnb_mb_2_2, gpnb_mb_2_3, gpnb_mb_2_4, gpnb_mb_2_5, gpnb_mb_2_6},
};

// gpnb_mixed_rows sets y[r*ldy + c] = Σ_{j<nc} k[r*ldk + j]·vt[c*ldv + j]
// for r < nr and c < m, in the order the file comment gives. The caller
// checks that the CPU has AVX2 and FMA.
void gpnb_mixed_rows(const float *k, long ldk, long nr, long nc, const double *vt, long ldv, long m, double *y,
                     long ldy) {
	double s[2 * 6];
	for (long r = 0; r < nr; r++) {
		for (long c = 0; c < m; c++) y[r * ldy + c] = 0;
	}
	for (long j0 = 0; j0 < nc; j0 += GPNB_JC) {
		long len = nc - j0 < GPNB_JC ? nc - j0 : GPNB_JC;
		for (long r = 0; r < nr; r += 2) {
			int rows = r + 1 < nr ? 2 : 1;
			for (long c0 = 0; c0 < m; c0 += 6) {
				int cg = m - c0 < 6 ? (int)(m - c0) : 6;
				gpnb_mb[rows - 1][cg](k + r * ldk + j0, ldk, vt + c0 * ldv + j0, ldv, len, s);
				for (int a = 0; a < rows; a++) {
					double *dst = y + (r + a) * ldy + c0;
					for (int c = 0; c < cg; c++) dst[c] += s[a * cg + c];
				}
			}
		}
	}
}
