//go:build openblas && amd64

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
