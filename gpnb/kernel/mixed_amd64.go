//go:build amd64 && cgo

package kernel

// Mixed-precision products by mixed_amd64.c: K in float32, sums in float64.

// #cgo CFLAGS: -O2
// #cgo LDFLAGS: -lm
// void gpnb_mixed_rows(const float *k, long ldk, long nr, long nc, const double *vt, long ldv, long m, double *y, long ldy);
import "C"

// mixedKernel names the vectorised mixed-precision product in use, or is ""
// when the CPU lacks AVX2 and FMA (then Mixed products go by the generic
// code: K's tile converted to float64, then a float64 gemm).
var mixedKernel = map[bool]string{true: "avx2+fma", false: ""}[vecLevel == 2]

// mixedRowsVec sets y (nr×m, leading dimension ldy) to k·vtᵀ, where k is
// nr×nc float32 (leading dimension ldk) and vt m×nc float64 (leading
// dimension ldv), summing in float64 in the fixed order mixed_amd64.c
// describes. Only where mixedKernel is not "".
func mixedRowsVec(k []float32, ldk, nr, nc int, vt []float64, ldv, m int, y []float64, ldy int) {
	if nr == 0 || m == 0 {
		return
	}
	_, _, _ = k[(nr-1)*ldk+nc-1], vt[(m-1)*ldv+nc-1], y[(nr-1)*ldy+m-1]
	C.gpnb_mixed_rows((*C.float)(&k[0]), C.long(ldk), C.long(nr), C.long(nc), (*C.double)(&vt[0]), C.long(ldv),
		C.long(m), (*C.double)(&y[0]), C.long(ldy))
}
