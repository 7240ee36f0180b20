//go:build openblas && amd64

package kernel

// Vectorised kernel evaluation: glibc's libmvec exp, four lanes of AVX2 at
// a time (_ZGVdN4v_exp, the vector variant gcc calls for exp in a simd
// loop; ≤ 1 ulp off the correctly rounded value in glibc's own tests).
// Everything around it (the sqrt, the polynomial factors and their order)
// is the same IEEE arithmetic as fillK and fillMD in Go (the target is avx2
// without fma, so gcc cannot contract a product and a sum into one
// rounding, as Go on amd64 does not), so the results differ from the Go
// path only by
// exp's last-bit differences: TestVectorKernel bounds them at 4 ulp. Every
// lane is computed independently (a short tail is padded to four lanes),
// so a value's bits do not depend on where it sits in a tile, and results
// stay independent of the tiling and the core count.

// #cgo CFLAGS: -O2
// #cgo LDFLAGS: -lmvec -lm
// #include <immintrin.h>
// #include <string.h>
//
// __attribute__((target("avx2"))) __m256d _ZGVdN4v_exp(__m256d x);
//
// static int gpnb_have_avx2(void) {
// 	__builtin_cpu_init();
// 	return __builtin_cpu_supports("avx2");
// }
//
// // The families, numbered as kernel.Family.
// enum { GPNB_M32 = 0, GPNB_M12 = 1, GPNB_M52 = 2, GPNB_RBF = 3 };
//
// __attribute__((target("avx2"))) static inline __m256d gpnb_neg(__m256d x) {
// 	return _mm256_xor_pd(x, _mm256_set1_pd(-0.0));
// }
//
// // gpnb_k4 returns s2·m(r) for four squared distances, as fillK.
// __attribute__((target("avx2"))) static inline __m256d gpnb_k4(int fam, __m256d s2, __m256d v) {
// 	const __m256d one = _mm256_set1_pd(1.0);
// 	__m256d u;
// 	switch (fam) {
// 	case GPNB_M12:
// 		return _mm256_mul_pd(s2, _ZGVdN4v_exp(gpnb_neg(_mm256_sqrt_pd(v))));
// 	case GPNB_M32:
// 		u = _mm256_sqrt_pd(_mm256_mul_pd(_mm256_set1_pd(3.0), v));
// 		return _mm256_mul_pd(_mm256_mul_pd(s2, _mm256_add_pd(one, u)), _ZGVdN4v_exp(gpnb_neg(u)));
// 	case GPNB_M52:
// 		u = _mm256_sqrt_pd(_mm256_mul_pd(_mm256_set1_pd(5.0), v));
// 		__m256d p = _mm256_add_pd(_mm256_add_pd(one, u), _mm256_div_pd(_mm256_mul_pd(u, u), _mm256_set1_pd(3.0)));
// 		return _mm256_mul_pd(_mm256_mul_pd(s2, p), _ZGVdN4v_exp(gpnb_neg(u)));
// 	default:
// 		return _mm256_mul_pd(s2, _ZGVdN4v_exp(_mm256_mul_pd(_mm256_set1_pd(-0.5), v)));
// 	}
// }
//
// // gpnb_md4 sets m(r) and m'(r)/r for four squared distances, as fillMD.
// __attribute__((target("avx2"))) static inline void gpnb_md4(int fam, __m256d v, __m256d *m, __m256d *dm) {
// 	const __m256d one = _mm256_set1_pd(1.0);
// 	__m256d u, e;
// 	switch (fam) {
// 	case GPNB_M12:
// 		u = _mm256_sqrt_pd(v);
// 		e = _ZGVdN4v_exp(gpnb_neg(u));
// 		*m = e;
// 		// −e/r, and 0 at r = 0 (the limit of the whole derivative term).
// 		*dm = _mm256_andnot_pd(_mm256_cmp_pd(u, _mm256_setzero_pd(), _CMP_EQ_OQ), _mm256_div_pd(gpnb_neg(e), u));
// 		return;
// 	case GPNB_M32:
// 		u = _mm256_sqrt_pd(_mm256_mul_pd(_mm256_set1_pd(3.0), v));
// 		e = _ZGVdN4v_exp(gpnb_neg(u));
// 		*m = _mm256_mul_pd(_mm256_add_pd(one, u), e);
// 		*dm = _mm256_mul_pd(_mm256_set1_pd(-3.0), e);
// 		return;
// 	case GPNB_M52:
// 		u = _mm256_sqrt_pd(_mm256_mul_pd(_mm256_set1_pd(5.0), v));
// 		e = _ZGVdN4v_exp(gpnb_neg(u));
// 		*m = _mm256_mul_pd(_mm256_add_pd(_mm256_add_pd(one, u), _mm256_div_pd(_mm256_mul_pd(u, u), _mm256_set1_pd(3.0))), e);
// 		*dm = _mm256_mul_pd(_mm256_mul_pd(_mm256_set1_pd(-5.0 / 3.0), _mm256_add_pd(one, u)), e);
// 		return;
// 	default:
// 		e = _ZGVdN4v_exp(_mm256_mul_pd(_mm256_set1_pd(-0.5), v));
// 		*m = e;
// 		*dm = gpnb_neg(e);
// 	}
// }
//
// __attribute__((target("avx2"))) static void gpnb_fill_k(int fam, double s2, double *r2, long n) {
// 	__m256d vs2 = _mm256_set1_pd(s2);
// 	long i = 0;
// 	for (; i + 4 <= n; i += 4) {
// 		_mm256_storeu_pd(r2 + i, gpnb_k4(fam, vs2, _mm256_loadu_pd(r2 + i)));
// 	}
// 	if (i < n) {
// 		double t[4] = {0, 0, 0, 0};
// 		memcpy(t, r2 + i, (n - i) * sizeof(double));
// 		_mm256_storeu_pd(t, gpnb_k4(fam, vs2, _mm256_loadu_pd(t)));
// 		memcpy(r2 + i, t, (n - i) * sizeof(double));
// 	}
// }
//
// __attribute__((target("avx2"))) static void gpnb_fill_md(int fam, const double *r2, double *m, double *dm, long n) {
// 	__m256d vm, vdm;
// 	long i = 0;
// 	for (; i + 4 <= n; i += 4) {
// 		gpnb_md4(fam, _mm256_loadu_pd(r2 + i), &vm, &vdm);
// 		_mm256_storeu_pd(m + i, vm);
// 		_mm256_storeu_pd(dm + i, vdm);
// 	}
// 	if (i < n) {
// 		double t[4] = {0, 0, 0, 0}, tm[4], tdm[4];
// 		memcpy(t, r2 + i, (n - i) * sizeof(double));
// 		gpnb_md4(fam, _mm256_loadu_pd(t), &vm, &vdm);
// 		_mm256_storeu_pd(tm, vm);
// 		_mm256_storeu_pd(tdm, vdm);
// 		memcpy(m + i, tm, (n - i) * sizeof(double));
// 		memcpy(dm + i, tdm, (n - i) * sizeof(double));
// 	}
// }
import "C"

// vectorKernel names the vectorised kernel evaluation in use, or is "" when
// the CPU lacks AVX2 (then every operator uses the Go code).
var vectorKernel = func() string {
	if C.gpnb_have_avx2() != 0 {
		return "avx2 (libmvec exp)"
	}
	return ""
}()

// fillKVec is fillK by the vectorised evaluation (only where vectorKernel
// is not "").
func fillKVec(f Family, s2 float64, r2 []float64) {
	if !f.Valid() {
		fillK(f, s2, r2) // NaN, as the Go path
		return
	}
	if len(r2) == 0 {
		return
	}
	C.gpnb_fill_k(C.int(f), C.double(s2), (*C.double)(&r2[0]), C.long(len(r2)))
}

// fillMDVec is fillMD by the vectorised evaluation (only where
// vectorKernel is not "").
func fillMDVec(f Family, r2, m, dm []float64) {
	if !f.Valid() {
		fillMD(f, r2, m, dm)
		return
	}
	if len(r2) == 0 {
		return
	}
	_, _ = m[len(r2)-1], dm[len(r2)-1]
	C.gpnb_fill_md(C.int(f), (*C.double)(&r2[0]), (*C.double)(&m[0]), (*C.double)(&dm[0]), C.long(len(r2)))
}
