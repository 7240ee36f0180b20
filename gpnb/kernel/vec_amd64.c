//go:build amd64 && cgo

// Vectorised kernel evaluation for vec_amd64.go: fillK and fillMD four
// values at a time with AVX2. The exponential is Go's own math.Exp for
// amd64 (archExp, after Shibata's SLEEF) ported lane for lane, with its
// FMA path where Go takes it (AVX and FMA) and its plain path otherwise,
// and everything around it is the same IEEE operations in the same order
// as the Go code. So the results are the same bits as the Go path's, and
// the choice between them changes only the speed.
//
// gcc must not contract a product and a sum into one rounding where the Go
// code has two (Go on amd64 never does): hence fp-contract=off for this
// file (the cgo flag allowlist has no -ffp-contract).
#pragma GCC optimize("fp-contract=off")

#include <immintrin.h>
#include <string.h>

#define GPNB_LOG2E 1.4426950408889634073599246810018920
#define GPNB_LN2U 0.69314718055966295651160180568695068359375
#define GPNB_LN2L 0.28235290563031577122588448175013436025525412068e-12
#define GPNB_OVERFLOW 7.09782712893384e+02

// The families, numbered as kernel.Family.
enum { GPNB_M32 = 0, GPNB_M12 = 1, GPNB_M52 = 2, GPNB_RBF = 3 };

#define GPNB_FMA 1
#define GPNB_TARGET "avx2,fma"
#define GPNB_SUF(name) name##_fma
#include "vec_amd64.h"
#undef GPNB_FMA
#undef GPNB_TARGET
#undef GPNB_SUF

#define GPNB_FMA 0
#define GPNB_TARGET "avx2"
#define GPNB_SUF(name) name##_nofma
#include "vec_amd64.h"

// gpnb_vec_level returns 0 without AVX2 (no vectorised path), 1 for AVX2
// without FMA and 2 for AVX2 with AVX and FMA, which is when Go's math.Exp
// takes its FMA path (math.useFMA).
int gpnb_vec_level(void) {
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2")) {
		return 0;
	}
	return __builtin_cpu_supports("avx") && __builtin_cpu_supports("fma") ? 2 : 1;
}

// gpnb_put4 stores four values at k[i], as float64 or, rounded to nearest
// as Go's float32 conversion does, as float32.
__attribute__((target("avx2"))) static inline void gpnb_put4(void *k, long i, __m256d v, int f32) {
	if (f32) {
		_mm_storeu_ps((float *)k + i, _mm256_cvtpd_ps(v));
	} else {
		_mm256_storeu_pd((double *)k + i, v);
	}
}

__attribute__((target("avx2"))) static inline void gpnb_put1(void *k, long i, double v, int f32) {
	if (f32) {
		((float *)k)[i] = (float)v;
	} else {
		((double *)k)[i] = v;
	}
}

// gpnb_store_tile writes the tile buf (nr×nc: rows i0.., columns j0.. of
// K, j0 ≥ i0) into the n×n cache k (float64, or float32 when f32): the
// entries on and above the diagonal, K[i0+a, j0+b] for i0+a ≤ j0+b, and
// their mirror K[j0+b, i0+a]. The same stores as build's Go loops; the
// mirror goes by 4×4 transposes, eight columns of buf at a time, so that
// every read takes a whole cache line and the writes are eight sequential
// streams.
__attribute__((target("avx2"))) void gpnb_store_tile(void *k, long n, const double *buf, long nr, long nc, long i0, long j0, int f32) {
	long off = j0 - i0;
	for (long a = 0; a < nr; a++) {
		long b = a - off > 0 ? a - off : 0;
		long base = (i0 + a) * n + j0;
		const double *src = buf + a * nc;
		for (; b + 4 <= nc; b += 4) {
			gpnb_put4(k, base + b, _mm256_loadu_pd(src + b), f32);
		}
		for (; b < nc; b++) {
			gpnb_put1(k, base + b, src[b], f32);
		}
	}
	if (off < nr) {
		// The diagonal tile: only the pairs with a ≤ b + off.
		for (long a = 0; a < nr; a++) {
			for (long b = a - off > 0 ? a - off : 0; b < nc; b++) {
				gpnb_put1(k, (j0 + b) * n + i0 + a, buf[a * nc + b], f32);
			}
		}
		return;
	}
	long b = 0;
	for (; b + 8 <= nc; b += 8) {
		long a = 0;
		for (; a + 4 <= nr; a += 4) {
			for (long h = 0; h < 8; h += 4) {
				const double *p = buf + a * nc + b + h;
				__m256d r0 = _mm256_loadu_pd(p), r1 = _mm256_loadu_pd(p + nc);
				__m256d r2 = _mm256_loadu_pd(p + 2 * nc), r3 = _mm256_loadu_pd(p + 3 * nc);
				__m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
				__m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
				long d = (j0 + b + h) * n + i0 + a;
				gpnb_put4(k, d, _mm256_permute2f128_pd(t0, t2, 0x20), f32);
				gpnb_put4(k, d + n, _mm256_permute2f128_pd(t1, t3, 0x20), f32);
				gpnb_put4(k, d + 2 * n, _mm256_permute2f128_pd(t0, t2, 0x31), f32);
				gpnb_put4(k, d + 3 * n, _mm256_permute2f128_pd(t1, t3, 0x31), f32);
			}
		}
		for (; a < nr; a++) {
			for (long c = b; c < b + 8; c++) {
				gpnb_put1(k, (j0 + c) * n + i0 + a, buf[a * nc + c], f32);
			}
		}
	}
	for (; b < nc; b++) {
		for (long a = 0; a < nr; a++) {
			gpnb_put1(k, (j0 + b) * n + i0 + a, buf[a * nc + b], f32);
		}
	}
}
